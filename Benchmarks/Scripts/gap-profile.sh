#!/bin/sh
# Where the side-by-side gaps come from: each tool's job on one input under `perf record` (cpu-clock samples at
# 999 Hz, the whole process), samples summed by library, side by side. The tools are those of
# Benchmarks/Comparisons/SideBySide (Benchmarks/Scripts/side-by-side-jobs.sh: the same inputs and settings), with
# ffmpeg paced at the input's rate (-re) as avcapture is by its file camera. A sample is 1 ms of one core.
#
#   make bench-gap-profile INPUT=mjpeg      (or: sh Benchmarks/Scripts/gap-profile.sh AVCAPTURE INPUT [SCRATCH_DIR])
# INPUT is mjpeg, h264 or y4m. Needs perf (linux-perf) and the GStreamer plugins of `make side-by-side-tools`.
set -eu
avcapture=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
input=$2
dir=${3:-${TMPDIR:-/tmp}/openav-floor}
scripts=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
cd "$dir"
. "$scripts/side-by-side-jobs.sh"
jobs_for "$input"
paced=$(echo "$sources" | sed 's/-i /-re -i /g')

record() { # name command...: samples by library into name.dso
    name=$1; shift
    rm -f out.mov
    perf record -q -F 999 -e cpu-clock -o "$name.data" "$@" >/dev/null 2>&1
    perf report -i "$name.data" --sort dso -n --stdio 2>/dev/null | awk '/^ +[0-9.]+%/ {print $3, $2}' >"$name.dso"
    # Scheduler and wake-up costs: thread hand-offs.
    perf report -i "$name.data" --sort sym -n --stdio 2>/dev/null |
        awk '/finish_task_switch|_raw_spin_unlock_irq|try_to_wake_up|futex/ {n += $2} END {print "[hand-offs]", n + 0}' \
        >>"$name.dso"
}
# shellcheck disable=SC2086 # option lists are word lists
record avcapture "$avcapture" record out.mov --video "file:$video" --audio "$ours_audio" --bitrate 6200000
# shellcheck disable=SC2086
record ffmpeg-re ffmpeg -nostdin -v error -y $paced $map $x264 -pix_fmt "$format" -c:a aac -b:a 64000 -ac 1 out.mov
# shellcheck disable=SC2086
record gstreamer gst-launch-1.0 -q -e $pipeline
rm -f out.mov

echo "Samples by library, $input input (1 sample = 1 ms of CPU; [hand-offs] = scheduler and wake-up symbols, part of the kernel's):"
echo
echo "| library | avcapture | ffmpeg -re | GStreamer |"
echo "|---|---|---|---|"
# Libraries with at least 10 samples in any tool, the most first, then the totals.
dso="avcapture.dso ffmpeg-re.dso gstreamer.dso"
# shellcheck disable=SC2086 # the file list is a word list
awk '
    FNR == 1 { tool++ }
    { sub(/\.so.*/, "", $1); n[$1, tool] += $2; seen[$1] = 1 }
    END {
        for (lib in seen) {
            top = 0
            for (t = 1; t <= 3; t++) if (n[lib, t] > top) top = n[lib, t]
            if (top >= 10) printf "%d\t| %s | %d | %d | %d |\n", top, lib, n[lib, 1], n[lib, 2], n[lib, 3]
        }
    }' $dso | sort -rn | cut -f2-
# shellcheck disable=SC2086
awk 'FNR == 1 { tool++ } $1 !~ /^\[hand/ { total[tool] += $2 }
    END { printf "| all | %d | %d | %d |\n", total[1], total[2], total[3] }' $dso
