#!/bin/sh
# Where a recording's CPU goes, stage by stage. `avcapture record` (release build) records 10 s of the virtual USB
# webcam's 1920x1080 30 fps Motion JPEG and the virtual microphone under `perf record` (the cpu-clock software event,
# which needs no hardware counters), twice: into H.264 (the whole path: the webcam, decode, convert, encode, mux) and
# into Motion JPEG, which writes the webcam's frames as they come (the webcam's own cost, the framework and the mux,
# nothing decoded or encoded). The libraries' symbols are stripped, so samples are summed by library and the
# difference of the two runs splits TurboJPEG between the webcam (compressing) and the decode stage
# (stage-split.py). Prints CPU milliseconds per recorded frame for each stage.
#
#   make bench-stages        (or: sh Benchmarks/Scripts/where-the-time-goes.sh [AVCAPTURE])
set -eu
avcapture=${1:-.build/release/avcapture}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
record() { # name, extra options
    name=$1; shift
    OPENAV_DEVICES=virtual perf record -q -e cpu-clock -F 999 -o "$scratch/$name.data" -- "$avcapture" record \
        "$scratch/$name.mov" --video virtual:usb-webcam --format 1920x1080@30 --audio virtual:microphone \
        --duration 10 "$@" >/dev/null 2>"$scratch/stderr" || { cat "$scratch/stderr"; exit 1; }
    ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 \
        "$scratch/$name.mov" >"$scratch/$name.frames"
    perf report -i "$scratch/$name.data" --stdio --no-children --sort dso,sym -g none 2>/dev/null >"$scratch/$name.txt"
}
record device --codec jpeg
record full
python3 "$(dirname "$0")/stage-split.py" "$scratch/full.txt" "$(cat "$scratch/full.frames")" \
    "$scratch/device.txt" "$(cat "$scratch/device.frames")"
