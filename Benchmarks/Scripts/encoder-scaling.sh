#!/bin/sh
# How libx264 and libx265, with the settings OpenAVCapture records with (tune zerolatency, High profile, no scene
# cuts, 0.16 bit per pixel per frame), scale with picture size, preset and threads on this machine: CPU seconds per
# frame (user + system, what EncoderThreadPlan's cost per megapixel comes from) and wall milliseconds per frame,
# whence the highest frame rate each keeps in real time. One core is `taskset -c 0` with one thread; two cores are
# two threads (x264's sliced threads). Inputs are made once: moving noise, as a real camera's picture.
#
#   make bench-encoder-scaling        (or: sh Benchmarks/Scripts/encoder-scaling.sh [SCRATCH_DIR])
set -eu
dir=${1:-${TMPDIR:-/tmp}/openav-encoder-scaling}
mkdir -p "$dir"
make_input() { # size name seconds
    [ -f "$dir/$2.y4m" ] || ffmpeg -nostdin -v error -f lavfi -i "testsrc2=size=$1:rate=30,noise=alls=12:allf=t" \
        -t "$3" -pix_fmt yuv420p "$dir/$2.y4m"
}
make_input 1280x720 720p 2
make_input 1920x1080 1080p 2
make_input 3840x2160 2160p 1
echo "| size | codec preset | cores | CPU ms/frame | wall ms/frame | real-time up to |"
echo "|---|---|---|---|---|---|"
for input in 720p:921600 1080p:2073600 2160p:8294400; do
    name=${input%%:*}; pixels=${input#*:}
    bitrate=$((pixels * 30 * 16 / 100))
    for codec in "libx264 superfast" "libx264 ultrafast" "libx265 ultrafast"; do
        encoder=${codec% *}; preset=${codec#* }
        [ "$encoder" = libx265 ] && [ "$name" = 2160p ] && continue
        for cores in 1 2; do
            frames=$([ "$name" = 2160p ] && echo 30 || echo 60)
            [ "$encoder" = libx265 ] && frames=30
            pin=$([ "$cores" = 1 ] && echo "taskset -c 0" || echo "")
            extra=$([ "$encoder" = libx264 ] && echo "-profile:v high -x264-params scenecut=0" || echo "-x265-params log-level=error")
            line=$($pin ffmpeg -nostdin -benchmark -hide_banner -nostats -i "$dir/$name.y4m" -frames:v "$frames" \
                -c:v "$encoder" -preset "$preset" -tune zerolatency $extra -threads "$cores" -g 30 -b:v "$bitrate" \
                -maxrate $((bitrate * 3 / 2)) -bufsize $((bitrate * 3 / 2)) -f null - 2>&1 | grep 'bench: utime')
            echo "$line" | awk -v n="$name" -v c="$encoder $preset" -v k="$cores" -v f="$frames" '{
                split($2, u, "="); split($3, s, "="); split($4, r, "=");
                cpu = (u[2] + s[2]) * 1000 / f; wall = r[2] * 1000 / f;
                printf "| %s | %s | %d | %.1f | %.1f | %.0f fps |\n", n, c, k, cpu, wall, 1000 / wall }'
        done
    done
done
