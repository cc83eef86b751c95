#!/usr/bin/env bash
# What a screen recording through the ScreenCast portal costs against the X11 path on the same picture (issue 36:
# at most 1.2x the CPU of X11 at 1080p30): `avcapture record --screen` of headless mutter's 1920x1080 virtual
# monitor through xdg-desktop-portal-gnome (scripts/gnome-portal-session), against the same on an Xvfb 1920x1080
# screen showing a frame of that recording (ffplay full screen); alternating rounds, the record process's CPU (user
# + system, from its rusage) per recorded frame (ffprobe counts them), medians, ratio. Also the compositor's CPU in
# each round (mutter's and Xvfb's /proc stat), and what a still screen costs: the portal's node sends nothing while
# nothing changes, so the whole portal recording is of an idle screen, the encoder included.
#
# The first recording answers the portal's dialog with pointer clicks through mutter's RemoteDesktop API (python3-dbus);
# its restore token lets every later one through without a dialog.
#
# Run (as root or a normal user): Benchmarks/Scripts/wayland-screen-cost.sh [AVCAPTURE] [SECONDS] [ROUNDS]
#      (AVCAPTURE defaults to .build/release/avcapture: build it first as shipped,
#      `swift build -c release --product avcapture --static-swift-stdlib`)
set -euo pipefail
tool=$(readlink -f "${1:-.build/release/avcapture}")
seconds=${2:-10}
rounds=${3:-3}
here=$(cd "$(dirname "$0")/../.." && pwd)
for program in Xvfb ffplay ffprobe mutter; do
    command -v $program >/dev/null || { echo "wayland-screen-cost: $program is missing" >&2; exit 1; }
done
/usr/bin/python3 -c 'import dbus' 2>/dev/null || { echo "wayland-screen-cost: install python3-dbus" >&2; exit 1; }
scratch=$(mktemp -d)
chmod 755 "$scratch"
cleanup() {
    "$here/scripts/gnome-portal-session" stop "$scratch/gnome" || true
    [ -f "$scratch/x.pids" ] && while read -r pid; do kill "$pid" 2>/dev/null || true; done < "$scratch/x.pids"
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

def record(command, environment, movie):
    """The record process's CPU seconds and the frames it wrote."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"record exited {result.returncode}: {result.stderr[-2000:]}")
    frames = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                             "stream=nb_read_packets", "-of", "csv=p=0", movie], capture_output=True, text=True)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, int(frames.stdout.strip())

def portal_record(movie):
    environment = [f"HOME={state}", f"XDG_STATE_HOME={state}", f"DBUS_SESSION_BUS_ADDRESS={bus}",
                   f"WAYLAND_DISPLAY={session['WAYLAND_DISPLAY']}", "OPENAV_DEVICES=all", "OPENAV_SCREENCAST=portal",
                   "PATH=/usr/bin:/bin"]
    arguments = [tool, "record", movie, "--screen", "--audio", "none", "--duration", seconds, "--overwrite"]
    prefix = ["env", "-i"]
    if os.getuid() == 0 and user != "root":
        prefix = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", "--", "env", "-i"]
    return record(prefix + environment + arguments, None, movie)

def x11_record(movie):
    environment = {"PATH": "/usr/bin:/bin", "HOME": scratch, "DISPLAY": ":77", "OPENAV_DEVICES": "all"}
    return record([tool, "record", movie, "--screen", "--audio", "none", "--duration", seconds, "--overwrite"],
                  environment, movie)

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

# The first recording, through the dialog: the restore token for the others, and the picture for Xvfb.
done = threading.Event()
clicker = threading.Thread(target=answer_dialog, args=(done,))
clicker.start()
first = f"{state}/first.mov"
try:
    portal_record(first)
finally:
    done.set()
    clicker.join()
picture = f"{scratch}/picture.png"
subprocess.run(["ffmpeg", "-v", "error", "-sseof", "-0.5", "-i", first, "-frames:v", "1", "-y", picture], check=True)
xvfb = subprocess.Popen(["Xvfb", ":77", "-screen", "0", "1920x1080x24", "-nolisten", "tcp"])
time.sleep(1)  # Xvfb takes real time to open its socket
player = subprocess.Popen(["ffplay", "-v", "error", "-fs", "-noborder", "-an", picture],
                          env={**os.environ, "DISPLAY": ":77", "SDL_AUDIODRIVER": "dummy"})
with open(f"{scratch}/x.pids", "w") as pids:
    pids.write(f"{player.pid}\n{xvfb.pid}\n")
time.sleep(2)  # ffplay takes real time to open its window and draw the picture
mutter = int(open(f"{scratch}/gnome/mutter.pid").read())

results = {"portal": [], "x11": []}
compositors = {"portal": [], "x11": []}
for _ in range(int(rounds)):
    for path in results:
        pid = mutter if path == "portal" else xvfb.pid
        before = process_cpu(pid)
        movie = f"{state}/{path}.mov"
        results[path].append(portal_record(movie) if path == "portal" else x11_record(movie))
        compositors[path].append(process_cpu(pid) - before)
player.terminate()
xvfb.terminate()
per_frame = {}
for path, values in results.items():
    per_frame[path] = statistics.median(cpu / frames for cpu, frames in values)
    print(f"{path}: record CPU {', '.join('%.2f s for %d frames' % value for value in values)}; "
          f"median {per_frame[path] * 1000:.1f} ms a frame; the compositor "
          f"{', '.join('%.2f s' % c for c in compositors[path])}")
print(f"portal / X11 per frame: {per_frame['portal'] / per_frame['x11']:.3f}x (goal <= 1.2x)")
idle = statistics.median(cpu for cpu, _ in results["portal"]) / float(seconds)
print(f"still screen through the portal: record {idle * 100:.1f} % of a core, encoder included; mutter "
      f"{statistics.median(compositors['portal']) / float(seconds) * 100:.1f} %")
PY
