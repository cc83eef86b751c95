#!/usr/bin/env bash
# What serving RTSP to many clients costs the server (issue 35: ten clients at most 1.1x the CPU of one, the encoder
# shared): `avcapture serve --rtsp` on the virtual camera and microphone, 1 and then 10 ffmpeg clients (interleaved
# TCP, `-c copy` into nothing) playing for SECONDS, in alternating rounds. The figure is the serve process's own CPU
# (user + system, from /proc/PID/stat) while the clients play, not the clients'; medians, and their ratio.
#
# Run: Benchmarks/Scripts/rtsp-clients.sh [AVCAPTURE] [SECONDS] [ROUNDS] [PRESET]
#      (AVCAPTURE defaults to .build/release/avcapture: build it first as shipped,
#      `swift build -c release --product avcapture --static-swift-stdlib`)
#      One measurement alone: Benchmarks/Scripts/rtsp-clients.sh AVCAPTURE SECONDS once PRESET CLIENTS
set -euo pipefail
tool=$(readlink -f "${1:-.build/release/avcapture}")
seconds=${2:-10}
rounds=${3:-3}
preset=${4:-1280x720}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export OPENAV_DEVICES=virtual
python3 - "$tool" "$seconds" "$rounds" "$preset" "$scratch" "${5:-1}" <<'PY'
import os, re, statistics, subprocess, sys, time
tool, seconds, rounds, preset, scratch = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
ticks = os.sysconf("SC_CLK_TCK")

def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks

def serve(clients):
    """The serve process's CPU seconds while `clients` ffmpeg clients play for `seconds`."""
    server = subprocess.Popen([tool, "serve", "--listen", "127.0.0.1:0", "--rtsp", "127.0.0.1:0", "--preset", preset],
                              cwd=scratch, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = None
    for line in server.stdout:
        if line.startswith("serving RTSP on "):
            url = line.split()[-1]
            break
    if url is None:
        sys.exit("serve printed no RTSP address")
    readers = [subprocess.Popen(["ffmpeg", "-nostdin", "-v", "error", "-rtsp_transport", "tcp", "-i", url,
                                 "-map", "0", "-c", "copy", "-f", "null", "-"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(clients)]
    time.sleep(2)  # the clients connect and start at a key frame; then the measured window starts
    start = cpu_seconds(server.pid)
    time.sleep(seconds)  # the clients play: the cost measured is over real time
    used = cpu_seconds(server.pid) - start
    for reader in readers:
        reader.terminate()
        reader.wait()
    server.send_signal(2)
    server.communicate(timeout=30)
    alive = sum(reader.returncode in (0, -15, 255) for reader in readers)
    if alive != clients:
        sys.exit(f"{clients - alive} of {clients} clients failed")
    return used

if rounds == "once":
    print(f"server CPU {serve(int(sys.argv[6])):.3f} s")
    sys.exit(0)
cpu = {1: [], 10: []}
for _ in range(int(rounds)):
    for clients in cpu:
        cpu[clients].append(serve(clients))
for clients, values in cpu.items():
    print(f"{clients} client(s): serve CPU {', '.join('%.2f s' % v for v in values)} "
          f"(median {statistics.median(values):.2f} s for {seconds:g} s of {preset} at 30 fps)")
print(f"10 clients / 1 client: {statistics.median(cpu[10]) / statistics.median(cpu[1]):.2f}x (goal <= 1.10x)")
PY
