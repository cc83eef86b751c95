#!/usr/bin/env bash
# What one Prometheus scrape costs a recording, measured directly (issue 35: the metrics endpoint under 1 % CPU):
# `avcapture record --metrics` of the virtual camera and microphone; the record process's CPU (user + system, from
# /proc/PID/stat) over windows of WINDOW seconds left alone and windows scraped back to back, in turn. The difference
# over the scrapes made is one scrape's CPU; against the recording's own CPU a second, it is the share one scrape a
# second costs. Scrapes reuse one connection, as Prometheus does. Then the endpoint's one-off start: `record
# --duration 1` with and without `--metrics` (never scraped), in alternating pairs. Nothing is counted per frame:
# the metrics are read from the outputs' own counts when scraped (CaptureMetrics).
#
# Run: Benchmarks/Scripts/metrics-scrape-cost.sh [AVCAPTURE] [ROUNDS] [PRESET] [WINDOW]
#      (AVCAPTURE defaults to .build/release/avcapture: build it first as shipped,
#      `swift build -c release --product avcapture --static-swift-stdlib`)
set -euo pipefail
tool=$(readlink -f "${1:-.build/release/avcapture}")
rounds=${2:-4}
preset=${3:-1280x720}
window=${4:-4}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export OPENAV_DEVICES=virtual
python3 - "$tool" "$rounds" "$preset" "$window" "$scratch" <<'PY'
import http.client, os, resource, statistics, subprocess, sys, time, urllib.parse
tool, rounds, preset, window, scratch = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5]
ticks = os.sysconf("SC_CLK_TCK")

def cpu(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks

duration = str(int(rounds * 2 * window + 10))
record = subprocess.Popen([tool, "record", f"{scratch}/scraped.mov", "--preset", preset, "--duration", duration,
                           "--metrics", "127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
address = next(line.split()[-1] for line in record.stderr if line.startswith("Metrics at "))
time.sleep(2)  # the recording settles (encoder started, first frames written) before anything is measured
target = urllib.parse.urlsplit(address)
# One connection kept open, as Prometheus keeps its scrape connections.
connection = http.client.HTTPConnection(target.hostname, target.port, timeout=5)
alone, scraped, scrapes = [], [], 0
for _ in range(rounds):
    start = cpu(record.pid)
    time.sleep(window)  # the recording alone: its CPU over real time
    alone.append(cpu(record.pid) - start)
    start, began, made = cpu(record.pid), time.time(), 0
    while time.time() - began < window:
        connection.request("GET", target.path)
        connection.getresponse().read()
        made += 1
    scraped.append(cpu(record.pid) - start)
    scrapes += made
record.terminate()
record.wait()
per_scrape = (sum(scraped) - sum(alone)) / scrapes
per_second = statistics.median(alone) / window
print(f"recording alone: {', '.join('%.2f' % v for v in alone)} s of CPU per {window:g} s window "
      f"({per_second:.3f} cores, {preset})")
print(f"scraped back to back: {', '.join('%.2f' % v for v in scraped)} s, {scrapes} scrapes in all")
print(f"one scrape: {per_scrape * 1000:.2f} ms of CPU; one scrape a second: {per_scrape / per_second * 100:.2f} % "
      "of the recording's CPU (goal < 1 %)")

starts = {False: [], True: []}
for _ in range(max(rounds, 5)):
    for metrics in (False, True):
        movie = f"{scratch}/start.mov"
        if os.path.exists(movie):
            os.remove(movie)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([tool, "record", movie, "--preset", preset, "--duration", "1"]
                       + (["--metrics", "127.0.0.1:0"] if metrics else []),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        starts[metrics].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
difference = statistics.median([on - off for on, off in zip(starts[True], starts[False])])
print(f"the endpoint's start (median of {len(starts[True])} pairs): {difference * 1000:.1f} ms of CPU, once")
PY
