#!/usr/bin/env bash
# Three cameras recorded by one `avcapture record` (one AVCaptureMultiCamSession, a movie per camera) against the same
# three recorded by three `avcapture record` processes at once, one camera each (issue 34: at most 1.05x the CPU).
# The virtual back, front and USB webcam cameras at 640x480, 30 fps, no microphone, the same duration; rounds run
# A then B in turn and each round's ratio is taken on its own, so the machine's drift between rounds cancels. CPU is
# user + system of every avcapture process (its rusage, reaped), in seconds.
#
# Run: Benchmarks/Scripts/multicam-versus-processes.sh [AVCAPTURE] [SECONDS] [ROUNDS]
#      (AVCAPTURE defaults to .build/release/avcapture: build it first as shipped,
#      `swift build -c release --product avcapture --static-swift-stdlib`)
set -euo pipefail
tool=${1:-.build/release/avcapture}
seconds=${2:-5}
rounds=${3:-5}
tool=$(readlink -f "$tool")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export OPENAV_DEVICES=virtual
python3 - "$tool" "$seconds" "$rounds" "$scratch" <<'PY'
import resource, statistics, subprocess, sys
tool, seconds, rounds, scratch = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
cameras = ["back", "front", "webcam"]
common = ["--audio", "none", "--format", "640x480@30", "--duration", seconds, "--overwrite"]

def cpu_of(commands):
    """CPU seconds of the commands, run at once and reaped."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    running = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for c in commands]
    if any(p.wait() != 0 for p in running):
        sys.exit(f"a recording failed: {commands}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime

one = [[tool, "record", f"{scratch}/multi-%c.mov"] + sum((["--video", c] for c in cameras), []) + common]
three = [[tool, "record", f"{scratch}/single-{c}.mov", "--video", c] + common for c in cameras]
cpu_of(one), cpu_of(three)  # warm-up: page cache, the first FFmpeg initialisations
pairs = [(cpu_of(one), cpu_of(three)) for _ in range(rounds)]
ratios = [a / b for a, b in pairs]
print(f"one multi-camera process: CPU {', '.join('%.2f s' % a for a, _ in pairs)}")
print(f"three processes:          CPU {', '.join('%.2f s' % b for _, b in pairs)}")
print(f"ratio per round: {', '.join('%.3f' % r for r in ratios)}; median {statistics.median(ratios):.3f}x "
      f"(min {min(ratios):.3f}, max {max(ratios):.3f}; goal <= 1.05x) for {seconds} s of three 640x480 30 fps cameras")
PY
