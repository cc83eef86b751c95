# The side-by-side jobs for shell scripts (sourced, not run): the inputs of Benchmarks/Comparisons/SideBySide, made
# once into the current directory, and the same job done by each tool with the same libx264 and AAC settings.
# After `jobs_for INPUT` (mjpeg, h264 or y4m) these are set:
#   video, audio    the input files (the same file for the QuickTime inputs)
#   format          the 4:2:0 pixel format ffmpeg encodes (full-range yuvj420p for JPEG)
#   decode          the GStreamer decoding elements ("" for y4m)
#   sources, map    ffmpeg's inputs and stream mapping; ours_audio: avcapture's --audio source
#   pipeline        the whole GStreamer job, writing out.mov
#   x264            ffmpeg's encoder options (used with -pix_fmt "$format")
picture="testsrc2=size=1920x1080:rate=30,noise=alls=12:allf=t"
sound="sine=frequency=440:sample_rate=48000"
lavfi() { ffmpeg -nostdin -v error -y -f lavfi -i "$picture" -f lavfi -i "$sound" -t 10 "$@"; }
[ -f webcam.mov ] || lavfi -c:v mjpeg -pix_fmt yuvj422p -q:v 4 -c:a pcm_s16le -ac 1 webcam.mov
[ -f camera.mov ] || lavfi -c:v libx264 -preset veryfast -profile:v high -bf 0 -g 30 -b:v 20M -maxrate 20M \
    -bufsize 20M -pix_fmt yuv420p -c:a pcm_s16le -ac 1 camera.mov
# -t is per output: the WAV needs its own, or the sine never ends.
[ -f raw.y4m ] || lavfi -map 0:v -pix_fmt yuv420p raw.y4m -map 1:a -ac 1 -t 10 raw.wav

x264="-c:v libx264 -preset superfast -tune zerolatency -profile:v high -threads 1 -g 30 -bf 0 -b:v 6200000
    -maxrate 9300000 -bufsize 9300000 -x264-params scenecut=0"
encoder="x264enc speed-preset=superfast tune=zerolatency threads=1 key-int-max=30 bframes=0 bitrate=6200
    vbv-buf-capacity=1500 option-string=scenecut=0:vbv-maxrate=9300:vbv-bufsize=9300 ! video/x-h264,profile=high
    ! h264parse"
aac="queue ! audioconvert ! audioresample ! avenc_aac bitrate=64000 ! mux."

jobs_for() {
    case $1 in
    mjpeg) video=webcam.mov; audio=webcam.mov; format=yuvj420p; decode="jpegdec ! videoconvert ! video/x-raw,format=I420" ;;
    h264) video=camera.mov; audio=camera.mov; format=yuv420p; decode="h264parse ! avdec_h264" ;;
    y4m) video=raw.y4m; audio=raw.wav; format=yuv420p; decode="" ;;
    esac
    if [ "$1" = y4m ]; then
        sources="-i $video -i $audio"; map="-map 0:v:0 -map 1:a:0"; ours_audio="file:$audio"
        pipeline="filesrc location=$video ! y4mdec ! queue ! $encoder ! qtmux name=mux ! filesink location=out.mov
            filesrc location=$audio ! wavparse ! $aac"
    else
        sources="-i $video"; map="-map 0:v:0 -map 0:a:0"; ours_audio="file:$audio#audio"
        pipeline="filesrc location=$video ! qtdemux name=demux demux.video_0 ! queue ! $decode ! $encoder !
            qtmux name=mux ! filesink location=out.mov demux.audio_0 ! $aac"
    fi
}
