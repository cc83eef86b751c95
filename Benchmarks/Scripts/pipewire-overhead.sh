#!/bin/sh
# Runs inside the test VM (`make bench-pipewire`): a headless PipeWire session (private bus, pipewire, WirePlumber
# with Bluetooth off, as the tests' session), then PipeWireOverhead raw and pipewire alternately, RUNS pairs, and
# the per-pair ratios of CPU per frame: pipewire (this process + the daemon) over raw.
#   pipewire-overhead.sh BINARY [RUNS] [SECONDS]
bin=$1; runs=${2:-3}; seconds=${3:-10}
dir=$(mktemp -d); chmod 700 "$dir"
export XDG_RUNTIME_DIR="$dir" PIPEWIRE_RUNTIME_DIR="$dir" XDG_CONFIG_HOME="$dir/config" XDG_STATE_HOME="$dir/state"
export DBUS_SESSION_BUS_ADDRESS="unix:path=$dir/bus"
mkdir -p "$dir/config/wireplumber/bluetooth.lua.d"
echo "bluez_monitor.enabled = false" > "$dir/config/wireplumber/bluetooth.lua.d/80-openav-bench.lua"
dbus-daemon --session --nofork --nopidfile --address="$DBUS_SESSION_BUS_ADDRESS" >"$dir/dbus.log" 2>&1 &
until [ -S "$dir/bus" ]; do sleep 0.1; done
pipewire >"$dir/pipewire.log" 2>&1 &
until [ -S "$dir/pipewire-0" ]; do sleep 0.1; done
wireplumber >"$dir/wireplumber.log" 2>&1 &
until pw-dump 2>/dev/null | grep -q '"media.class": "Video/Source"'; do sleep 0.2; done
results=""
i=0
while [ $i -lt "$runs" ]; do
    for backend in raw pipewire; do
        # WirePlumber keeps a node's device open for 5 s after its last client (session.suspend-timeout-seconds):
        # until then vivid is busy and the raw run gets no frame.
        sleep 6
        out=$(OPENAV_BACKEND=$backend "$bin" $backend "$seconds" 2>&1); status=$?
        printf '%s\n' "$out" | grep -v '^ALSA lib'
        [ $status = 0 ] || exit 1
        line=$(printf '%s\n' "$out" | grep '^RESULT')
        results="$results$line
"
    done
    i=$((i + 1))
done
printf '%s' "$results" | awk '
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
    v["backend"] == "raw" { raw = v["total_us"]; rawp99 = v["p99_ms"] }
    v["backend"] == "pipewire" {
        n++; ratio = v["total_us"] / raw; ours = v["ours_us"] / raw
        printf "pair %d: raw %.0f µs/frame (p99 %.2f ms); pipewire %.0f µs/frame = %.0f ours + %.0f daemon (p99 %.2f ms): %.2fx (ours alone %.2fx)\n", n, raw, rawp99, v["total_us"], v["ours_us"], v["daemon_us"], v["p99_ms"], ratio, ours
    }'
echo "budget: pipewire at most 1.1x raw, capture to delegate p99 at most 2 ms"
