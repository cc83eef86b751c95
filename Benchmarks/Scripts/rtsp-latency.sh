#!/usr/bin/env bash
# Glass-to-glass latency of `avcapture serve --rtsp` on loopback (issue 35: at most 300 ms p50): the virtual camera
# flashes the frame that holds each whole second of its clock, which is the host's CLOCK_MONOTONIC; ffmpeg plays the
# stream (interleaved TCP, low-delay flags, one decoding thread) and writes each decoded picture's luma to a pipe
# as it decodes it; this script reads CLOCK_MONOTONIC when a flash picture arrives, and the latency is that time
# minus the whole second the flash marks. The flash is taken up to one frame (33 ms) before its second, so the
# figure errs low by at most a frame; reading the pipe adds at most a few milliseconds.
#
# Run: Benchmarks/Scripts/rtsp-latency.sh [AVCAPTURE] [SECONDS]
#      (AVCAPTURE defaults to .build/release/avcapture: build it first as shipped,
#      `swift build -c release --product avcapture --static-swift-stdlib`)
set -euo pipefail
tool=$(readlink -f "${1:-.build/release/avcapture}")
seconds=${2:-20}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export OPENAV_DEVICES=virtual
python3 - "$tool" "$seconds" "$scratch" <<'PY'
import math, statistics, subprocess, sys, time
tool, seconds, scratch = sys.argv[1], int(sys.argv[2]), sys.argv[3]
width, height = 320, 240
server = subprocess.Popen([tool, "serve", "--listen", "127.0.0.1:0", "--rtsp", "127.0.0.1:0", "--preset",
                           f"{width}x{height}"], cwd=scratch, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
url = next((line.split()[-1] for line in server.stdout if line.startswith("serving RTSP on ")), None)
if url is None:
    sys.exit("serve printed no RTSP address")
player = subprocess.Popen(["ffmpeg", "-nostdin", "-v", "error", "-fflags", "nobuffer", "-flags", "low_delay",
                           "-probesize", "32768", "-analyzeduration", "0", "-threads", "1", "-rtsp_transport", "tcp",
                           "-i", url, "-t", str(seconds), "-map", "0:v:0", "-f", "rawvideo", "-pix_fmt", "gray",
                           "-flush_packets", "1", "-"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
size = width * height
latencies = []
while True:
    picture = player.stdout.read(size)
    arrived = time.clock_gettime(time.CLOCK_MONOTONIC)
    if len(picture) < size:
        break
    # A flash frame is white all over (see VirtualFrameReader.isFlashFrame): sample every 97th pixel.
    sample = picture[::97]
    if sum(sample) / len(sample) >= 225 and sum(1 for value in sample if value < 200) < len(sample) // 100:
        latencies.append(arrived - math.floor(arrived))
player.wait()
server.send_signal(2)
server.communicate(timeout=30)
if len(latencies) < 3:
    sys.exit(f"only {len(latencies)} flash frames decoded")
# The first flashes come from a player still filling its buffers.
settled = sorted(latencies[2:])
p50 = statistics.median(settled)
p90 = settled[min(len(settled) - 1, int(len(settled) * 0.9))]
print(f"glass-to-glass over RTSP (loopback, ffmpeg over TCP, {width}x{height}): p50 {p50 * 1000:.0f} ms, "
      f"p90 {p90 * 1000:.0f} ms, {len(settled)} flashes (goal p50 <= 300 ms)")
PY
