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
avcapture=$1
dir=${2:-${TMPDIR:-/tmp}/openav-floor}
rounds=${ROUNDS:-3}
mkdir -p "$dir"
cd "$dir"
picture="testsrc2=size=1920x1080:rate=30,noise=alls=12:allf=t"
sound="sine=frequency=440:sample_rate=48000"
lavfi() { ffmpeg -nostdin -v error -y -f lavfi -i "$picture" -f lavfi -i "$sound" -t 10 "$@"; }
[ -f webcam.mov ] || lavfi -c:v mjpeg -pix_fmt yuvj422p -q:v 4 -c:a pcm_s16le -ac 1 webcam.mov
[ -f camera.mov ] || lavfi -c:v libx264 -preset veryfast -profile:v high -bf 0 -g 30 -b:v 20M -maxrate 20M \
    -bufsize 20M -pix_fmt yuv420p -c:a pcm_s16le -ac 1 camera.mov
[ -f raw.y4m ] || lavfi -map 0:v -pix_fmt yuv420p raw.y4m -map 1:a -ac 1 raw.wav

cpu() { /usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%.2f\n", $1 + $2}'; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
x264="-c:v libx264 -preset superfast -tune zerolatency -profile:v high -threads 1 -g 30 -bf 0 -b:v 6200000
    -maxrate 9300000 -bufsize 9300000 -x264-params scenecut=0"
encoder="x264enc speed-preset=superfast tune=zerolatency threads=1 key-int-max=30 bframes=0 bitrate=6200
    vbv-buf-capacity=1500 option-string=scenecut=0:vbv-maxrate=9300:vbv-bufsize=9300 ! video/x-h264,profile=high
    ! h264parse"
aac="queue ! audioconvert ! audioresample ! avenc_aac bitrate=64000 ! mux."

echo "| input | decode s | x264 s | floor s | GStreamer s | ffmpeg s | avcapture s | avcapture frames (fewest of 300) | floor vs GStreamer | avcapture vs GStreamer | avcapture vs ffmpeg |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for input in mjpeg h264 y4m; do
    case $input in
    mjpeg) video=webcam.mov; audio=webcam.mov; format=yuvj420p; decode="jpegdec ! videoconvert ! video/x-raw,format=I420" ;;
    h264) video=camera.mov; audio=camera.mov; format=yuv420p; decode="h264parse ! avdec_h264" ;;
    y4m) video=raw.y4m; audio=raw.wav; format=yuv420p; decode="" ;;
    esac
    pictures=$([ "$input" = y4m ] && echo raw.y4m || echo "decoded-$input.y4m")
    [ -f "$pictures" ] || ffmpeg -nostdin -v error -y -i "$video" -an -pix_fmt "$format" -strict -1 "$pictures"
    if [ "$input" = y4m ]; then
        sources="-i $video -i $audio"; map="-map 0:v:0 -map 1:a:0"; ours_audio="file:$audio"
        pipeline="filesrc location=$video ! y4mdec ! queue ! $encoder ! qtmux name=mux ! filesink location=out.mov
            filesrc location=$audio ! wavparse ! $aac"
    else
        sources="-i $video"; map="-map 0:v:0 -map 0:a:0"; ours_audio="file:$audio#audio"
        pipeline="filesrc location=$video ! qtdemux name=demux demux.video_0 ! queue ! $decode ! $encoder !
            qtmux name=mux ! filesink location=out.mov demux.audio_0 ! $aac"
    fi
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
