#!/usr/bin/env bash
# Publishing and recording the same 1080p30 camera at once against recording alone (issue 19: one encoder shared by
# the file and the network, CPU <= 1.1x recording alone). Alternating rounds in one run, CPU of each avcapture
# process (user + system, from its rusage), medians; the ratio is what counts on a shared machine.
#
# Run: Benchmarks/Scripts/publish-and-record.sh [AVCAPTURE] [SECONDS] [ROUNDS]
#      (AVCAPTURE defaults to .build/release/avcapture: build it first as shipped,
#      `swift build -c release --product avcapture --static-swift-stdlib`)
set -euo pipefail
tool=${1:-.build/release/avcapture}
seconds=${2:-10}
rounds=${3:-3}
tool=$(readlink -f "$tool")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export OPENAV_DEVICES=virtual
python3 - "$tool" "$seconds" "$rounds" "$scratch" <<'PY'
import os, resource, statistics, subprocess, sys
tool, seconds, rounds, scratch = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
common = ["--preset", "1920x1080", "--duration", seconds]
jobs = {
    "record alone": lambda n: [tool, "record", f"{scratch}/alone-{n}.mov"] + common,
    "publish HLS + record": lambda n: [tool, "publish", f"{scratch}/hls-{n}/live.m3u8",
                                       "--record", f"{scratch}/both-{n}.mov"] + common,
}
cpu = {name: [] for name in jobs}
for n in range(rounds):
    os.makedirs(f"{scratch}/hls-{n}", exist_ok=True)
    for name, command in jobs.items():
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(command(n), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
alone = statistics.median(cpu["record alone"])
both = statistics.median(cpu["publish HLS + record"])
for name, values in cpu.items():
    print(f"{name}: CPU {', '.join('%.2f s' % v for v in values)} (median {statistics.median(values):.2f} s "
          f"for {seconds} s of 1080p30)")
print(f"publish + record / record alone: {both / alone:.2f}x (goal <= 1.10x)")
PY
