#!/usr/bin/env bash
# What the shared encoder saves (issue 33): a movie file output recording alone, with a publishing output sharing
# its H.264 encoder, and with a publishing output beside it but an encoder of its own (SharedEncoderCost's modes).
# Alternating rounds in one run, CPU of each process (user + system, from its rusage), medians; the ratios against
# the movie alone in the same run are what count on a shared machine.
#
# Run: Benchmarks/Scripts/shared-encoder-cost.sh [PROGRAM] [SECONDS] [ROUNDS]
#      (PROGRAM defaults to Benchmarks/.build/release/SharedEncoderCost: `make bench-shared-encoder` builds it)
set -euo pipefail
program=$(readlink -f "${1:-Benchmarks/.build/release/SharedEncoderCost}")
seconds=${2:-10}
rounds=${3:-3}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export OPENAV_DEVICES=virtual
python3 - "$program" "$seconds" "$rounds" "$scratch" <<'PY'
import resource, statistics, subprocess, sys
program, seconds, rounds, scratch = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
modes = ["movie", "shared", "separate"]
cpu = {mode: [] for mode in modes}
for n in range(rounds):
    for mode in (modes if n % 2 == 0 else list(reversed(modes))):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        run = subprocess.run([program, mode, "--seconds", seconds, "--scratch", scratch], check=True,
                             capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[mode].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        print("  round %d: %s (CPU %.2f s)" % (n + 1, run.stdout.strip(), cpu[mode][-1]))
alone = statistics.median(cpu["movie"])
for mode in modes:
    print(f"{mode}: CPU {', '.join('%.2f s' % v for v in cpu[mode])} (median {statistics.median(cpu[mode]):.2f} s "
          f"for {seconds} s of 1080p30)")
print(f"publish + movie sharing one encoder / movie alone: {statistics.median(cpu['shared']) / alone:.2f}x")
print(f"publish + movie with two encoders / movie alone: {statistics.median(cpu['separate']) / alone:.2f}x")
PY
