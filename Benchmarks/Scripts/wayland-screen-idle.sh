#!/usr/bin/env bash
# What an idle screen costs to capture, the capture alone (issue 36: at most 5 % of a core through the portal):
# `avcapture frames --screen --changes-only --format bgra > /dev/null` (a data output, duplicates removed, no encoder,
# no cursor) for SECONDS of a still screen, through the ScreenCast portal on headless mutter's 1920x1080 virtual
# monitor (scripts/gnome-portal-session; xdg-desktop-portal-gnome), against the same on an Xvfb 1920x1080 screen in
# the same run; alternating rounds, the frames process's user + system CPU (its rusage), and the compositor's
# (/proc stat) over each round.
#
# The first portal run answers the dialog with clicks through mutter's RemoteDesktop API (python3-dbus) and is not
# counted; its restore token lets the measured ones through without a dialog.
#
# Run (as root or a normal user): Benchmarks/Scripts/wayland-screen-idle.sh [AVCAPTURE] [SECONDS] [ROUNDS]
set -euo pipefail
tool=$(readlink -f "${1:-.build/release/avcapture}")
seconds=${2:-20}
rounds=${3:-3}
here=$(cd "$(dirname "$0")/../.." && pwd)
for program in Xvfb mutter timeout; do
    command -v $program >/dev/null || { echo "wayland-screen-idle: $program is missing" >&2; exit 1; }
done
/usr/bin/python3 -c 'import dbus' 2>/dev/null || { echo "wayland-screen-idle: install python3-dbus" >&2; exit 1; }
scratch=$(mktemp -d)
chmod 755 "$scratch"
cleanup() {
    "$here/scripts/gnome-portal-session" stop "$scratch/gnome" || true
    [ -f "$scratch/x.pid" ] && kill "$(cat "$scratch/x.pid")" 2>/dev/null || true
    rm -rf "$scratch"
}
trap cleanup EXIT
GNOME_PORTAL_MONITOR=1920x1080 "$here/scripts/gnome-portal-session" start "$scratch/gnome" > "$scratch/gnome.env"
/usr/bin/python3 - "$tool" "$seconds" "$rounds" "$scratch" <<'PY'
import os, resource, statistics, subprocess, sys, threading, time
import dbus

tool, seconds, rounds, scratch = sys.argv[1:5]
session = dict(line.split("=", 1) for line in open(f"{scratch}/gnome.env").read().split())
state, bus, user = session["XDG_STATE_HOME"], session["DBUS_SESSION_BUS_ADDRESS"], session["RUN_AS"]
ticks = os.sysconf("SC_CLK_TCK")

def process_cpu(pid):
    """A process's CPU seconds so far (utime + stime of /proc/PID/stat)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks

def frames(prefix, environment, duration):
    """The frames process's CPU seconds over `duration` seconds (SIGINT ends it, as Ctrl-C would)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = prefix + ["timeout", "-s", "INT", str(duration), tool, "frames", "--screen", "--changes-only",
                        "--format", "bgra"]
    result = subprocess.run(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in (0, 124, 130):
        sys.exit(f"frames exited {result.returncode}: {result.stderr[-2000:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime

def portal_frames(duration):
    environment = [f"HOME={state}", f"XDG_STATE_HOME={state}", f"DBUS_SESSION_BUS_ADDRESS={bus}",
                   f"WAYLAND_DISPLAY={session['WAYLAND_DISPLAY']}", "OPENAV_DEVICES=all", "OPENAV_SCREENCAST=portal",
                   "PATH=/usr/bin:/bin"]
    prefix = ["env", "-i"]
    if os.getuid() == 0 and user != "root":
        prefix = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", "--", "env", "-i"]
    return frames(prefix + environment, None, duration)

def x11_frames(duration):
    environment = {"PATH": "/usr/bin:/bin", "HOME": scratch, "DISPLAY": ":78", "OPENAV_DEVICES": "all"}
    return frames([], environment, duration)

def answer_dialog(done):
    """Clicks the dialog's monitor row, then Share (xdg-desktop-portal-gnome 43's dialog, centred) until done."""
    connection = dbus.bus.BusConnection(bus)
    desktop = connection.get_object("org.gnome.Mutter.RemoteDesktop", "/org/gnome/Mutter/RemoteDesktop")
    path = desktop.CreateSession(dbus_interface="org.gnome.Mutter.RemoteDesktop")
    pointer = dbus.Interface(connection.get_object("org.gnome.Mutter.RemoteDesktop", path),
                             "org.gnome.Mutter.RemoteDesktop.Session")
    pointer.Start()
    while not done.wait(1):  # the dialog comes once the portal reaches Start
        for x, y in [(960, 566), (1172, 412)]:
            pointer.NotifyPointerMotionRelative(-5000.0, -5000.0)
            pointer.NotifyPointerMotionRelative(float(x), float(y))
            pointer.NotifyPointerButton(0x110, True)
            pointer.NotifyPointerButton(0x110, False)
    pointer.Stop()

# The dialog, once: the restore token for the measured runs.
done = threading.Event()
clicker = threading.Thread(target=answer_dialog, args=(done,))
clicker.start()
try:
    portal_frames(15)
finally:
    done.set()
    clicker.join()
if not os.path.exists(f"{state}/openavcapture/screencast-restore-token"):
    sys.exit("the dialog was not answered: no restore token")
xvfb = subprocess.Popen(["Xvfb", ":78", "-screen", "0", "1920x1080x24", "-nolisten", "tcp"])
open(f"{scratch}/x.pid", "w").write(f"{xvfb.pid}\n")
time.sleep(1)  # Xvfb takes real time to open its socket
mutter = int(open(f"{scratch}/gnome/mutter.pid").read())

results = {"portal": [], "x11": []}
compositors = {"portal": [], "x11": []}
for _ in range(int(rounds)):
    for path in results:
        pid = mutter if path == "portal" else xvfb.pid
        before = process_cpu(pid)
        results[path].append(portal_frames(seconds) if path == "portal" else x11_frames(seconds))
        compositors[path].append(process_cpu(pid) - before)
xvfb.terminate()
for path, values in results.items():
    share = statistics.median(values) / float(seconds) * 100
    print(f"{path}: frames CPU {', '.join('%.2f s' % v for v in values)} over {seconds} s each; median "
          f"{share:.1f} % of a core (goal <= 5 %); the compositor {', '.join('%.2f s' % c for c in compositors[path])}")
PY
