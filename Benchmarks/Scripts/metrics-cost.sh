#!/usr/bin/env bash
# What Prometheus metrics cost a recording (issue 35: under 1 % CPU): `avcapture record` of the virtual camera and
# microphone for SECONDS with `--metrics 127.0.0.1:PORT`, scraped once a second as Prometheus would, against the same
# recording without; alternating rounds, the record process's CPU (user + system, from its rusage), medians, ratio.
#
# Run: Benchmarks/Scripts/metrics-cost.sh [AVCAPTURE] [SECONDS] [ROUNDS] [PRESET]
#      (AVCAPTURE defaults to .build/release/avcapture: build it first as shipped,
#      `swift build -c release --product avcapture --static-swift-stdlib`)
#      One measurement alone: Benchmarks/Scripts/metrics-cost.sh AVCAPTURE SECONDS once PRESET on|off
set -euo pipefail
tool=$(readlink -f "${1:-.build/release/avcapture}")
seconds=${2:-10}
rounds=${3:-3}
preset=${4:-1280x720}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export OPENAV_DEVICES=virtual
python3 - "$tool" "$seconds" "$rounds" "$preset" "$scratch" "${5:-on}" <<'PY'
import os, resource, statistics, subprocess, sys, threading, urllib.request
tool, seconds, rounds, preset, scratch, alone = sys.argv[1:7]

def record(metrics):
    """The record process's CPU seconds for `seconds` of recording, with or without metrics scraped each second."""
    command = [tool, "record", f"{scratch}/movie.mov", "--preset", preset, "--duration", seconds]
    if metrics:
        command += ["--metrics", "127.0.0.1:0"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    scrapes = []
    if metrics:
        address = next((line.split()[-1] for line in process.stderr if line.startswith("Metrics at ")), None)
        stop = threading.Event()
        def scrape():
            while not stop.wait(1):  # Prometheus's scrape interval, at its shortest usual setting
                try:
                    scrapes.append(len(urllib.request.urlopen(address, timeout=2).read()))
                except OSError:
                    pass
        thread = threading.Thread(target=scrape)
        thread.start()
    process.communicate()
    if metrics:
        stop.set()
        thread.join()
        if not scrapes:
            sys.exit("no scrape answered")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode != 0:
        sys.exit(f"record exited {process.returncode}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime

if rounds == "once":
    print(f"record CPU {record(alone == 'on'):.3f} s")
    sys.exit(0)
cpu = {"off": [], "on": []}
for _ in range(int(rounds)):
    for state in cpu:
        cpu[state].append(record(state == "on"))
for state, values in cpu.items():
    print(f"metrics {state}: record CPU {', '.join('%.2f s' % v for v in values)} "
          f"(median {statistics.median(values):.2f} s for {seconds} s of {preset} at 30 fps)")
print(f"metrics on / off: {statistics.median(cpu['on']) / statistics.median(cpu['off']):.3f}x (goal < 1.01x)")
PY
