#!/bin/sh
# Where a recording's CPU goes, stage by stage: `avcapture record` (release build) records 10 s of the virtual USB
# webcam's 1920x1080 30 fps Motion JPEG and the virtual microphone under `perf record` (the cpu-clock software event,
# which needs no hardware counters), and the samples are summed by stage from the library and symbol they fell in
# (stage-split.py says which is which). Prints CPU milliseconds per recorded frame for each stage.
#
#   make bench-stages        (or: sh Benchmarks/Scripts/where-the-time-goes.sh [AVCAPTURE])
set -eu
avcapture=${1:-.build/release/avcapture}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
OPENAV_DEVICES=virtual perf record -q -e cpu-clock -F 999 -o "$scratch/perf.data" -- "$avcapture" record \
    "$scratch/stages.mov" --video virtual:usb-webcam --format 1920x1080@30 --audio virtual:microphone --duration 10 \
    >/dev/null 2>"$scratch/stderr" || { cat "$scratch/stderr"; exit 1; }
frames=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 \
    "$scratch/stages.mov")
perf report -i "$scratch/perf.data" --stdio --no-children --sort dso,sym -g none 2>/dev/null |
    python3 "$(dirname "$0")/stage-split.py" "$frames"
