#!/bin/sh
# The floor under issue 18's GStreamer goal (CPU ≤ 0.93× gst-launch-1.0 on the same job): what decoding alone and
# libx264 alone cost on the side-by-side inputs, against the whole jobs of GStreamer, ffmpeg and avcapture, in the
# same run, taking turns. No recorder can cost less than decoding its input plus encoding the pictures with the
# same libx264 settings: when that floor is above 0.93× GStreamer, the goal is out of reach for anyone using
# libx264 with those settings.
#
#   decode   the cheaper of GStreamer (jpegdec + videoconvert to I420, avdec_h264) and ffmpeg (-f null), no sound;
#            none for y4m
#   x264     ffmpeg encoding the decoded pictures (made once into a y4m file) to -f null, less ffmpeg reading that
#            file alone (-c copy -f null)
#   jobs     the side-by-side transcodes (Benchmarks/Comparisons/SideBySide: the same inputs, settings and pipelines)
#
# CPU is user + system of the whole process (GNU time), medians of ROUNDS (3) rounds.
#
#   make bench-floor        (or: sh Benchmarks/Scripts/decode-encode-floor.sh AVCAPTURE [SCRATCH_DIR])
set -eu
avcapture=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
dir=${2:-${TMPDIR:-/tmp}/openav-floor}
rounds=${ROUNDS:-3}
scripts=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
cd "$dir"
. "$scripts/side-by-side-jobs.sh"

cpu() { /usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%.2f\n", $1 + $2}'; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "| input | decode s | x264 s | floor s | GStreamer s | ffmpeg s | avcapture s | avcapture frames (fewest of 300) | floor vs GStreamer | avcapture vs GStreamer | avcapture vs ffmpeg |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for input in mjpeg h264 y4m; do
    jobs_for "$input"
    pictures=$([ "$input" = y4m ] && echo raw.y4m || echo "decoded-$input.y4m")
    [ -f "$pictures" ] || ffmpeg -nostdin -v error -y -i "$video" -an -pix_fmt "$format" -strict -1 "$pictures"
    : >decode.txt; : >x264.txt; : >gst.txt; : >ffmpeg.txt; : >ours.txt; : >frames.txt
    for round in $(seq "$rounds"); do
        if [ "$input" = y4m ]; then
            echo 0 >>decode.txt
        else
            # shellcheck disable=SC2086
            gst=$(cpu gst-launch-1.0 -q filesrc location=$video ! qtdemux name=demux demux.video_0 ! $decode ! fakesink)
            ff=$(cpu ffmpeg -nostdin -v error -i "$video" -an -pix_fmt "$format" -f null -)
            echo "$gst $ff" | awk '{print ($1 < $2 ? $1 : $2)}' >>decode.txt
        fi
        # shellcheck disable=SC2086
        encoded=$(cpu ffmpeg -nostdin -v error -i "$pictures" $x264 -pix_fmt "$format" -f null -)
        reading=$(cpu ffmpeg -nostdin -v error -i "$pictures" -c copy -f null -)
        echo "$encoded $reading" | awk '{print $1 - $2}' >>x264.txt
        # shellcheck disable=SC2086 # the pipeline is a word list
        rm -f out.mov; cpu gst-launch-1.0 -q -e $pipeline >>gst.txt
        # shellcheck disable=SC2086
        rm -f out.mov; cpu ffmpeg -nostdin -v error -y $sources $map $x264 -pix_fmt "$format" -c:a aac -b:a 64000 \
            -ac 1 out.mov >>ffmpeg.txt
        rm -f out.mov; cpu "$avcapture" record out.mov --video "file:$video" --audio "$ours_audio" --bitrate 6200000 \
            >>ours.txt
        # A real-time recorder on a starved machine drops frames (ffmpeg and GStreamer just take longer): counted.
        ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 out.mov \
            >>frames.txt
        rm -f out.mov
    done
    d=$(median <decode.txt); e=$(median <x264.txt); g=$(median <gst.txt); f=$(median <ffmpeg.txt); o=$(median <ours.txt)
    n=$(sort -n frames.txt | head -1)
    echo "$input $d $e $g $f $o $n" | awk '{floor = $2 + $3; printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %d | %.2f× | %.2f× | %.2f× |\n", $1, $2, $3, floor, $4, $5, $6, $7, floor / $4, $6 / $4, $6 / $5}'
done
