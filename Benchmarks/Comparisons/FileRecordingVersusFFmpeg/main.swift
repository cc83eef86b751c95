// Recording a webcam-like MJPEG file against ffmpeg transcoding it, side by side in one run (the ratio is what
// counts; machines are shared and noisy):
//
//   ours:   `avcapture record` with the clip as camera and microphone (`file:`), 1920x1080 at 30 fps MJPEG 4:2:2 +
//           PCM, into H.264 + AAC: demuxing, TurboJPEG decoding, the graph, libx264 and AAC, in real time
//   ffmpeg: the same clip, the same libx264 and AAC settings, full-range 4:2:0 like ours, as fast as it goes
//
// Each side is a child process; its CPU (user + system) and peak RSS come from wait4(2). Rounds alternate; the
// medians are reported.
//
// Run: swift build -c release --product avcapture (in the project root), then here:
//      swift run -c release FileRecordingVersusFFmpeg [--seconds 10] [--rounds 3] [--avcapture PATH]

import Foundation

let arguments = CommandLine.arguments
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}
let seconds = Double(option("--seconds") ?? "") ?? 10
let rounds = Int(option("--rounds") ?? "") ?? 3
let avcapture = option("--avcapture") ?? "../.build/release/avcapture"
// What AVCaptureMovieFileOutput picks for 1080p30: about 0.1 bit per pixel per frame.
let bitRate = Int(1920.0 * 1080 * 30 * 0.1)

/// CPU seconds and peak RSS (MiB) of one child process.
struct Cost {
    var cpu: Double
    var peakMiB: Double
}

/// Runs `executable` with `arguments`, output discarded, and returns what it cost.
func run(_ executable: String, _ arguments: [String]) -> Cost {
    var pid: pid_t = 0
    var actions: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    guard posix_spawn(&pid, executable, &actions, nil, argv, environ) == 0 else { fatalError("cannot run \(executable)") }
    var status: Int32 = 0
    var usage = rusage()
    _ = wait4(pid, &status, 0, &usage)
    precondition(status == 0, "\(executable) \(arguments.joined(separator: " ")) failed with status \(status)")
    let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    return Cost(cpu: cpu, peakMiB: Double(usage.ru_maxrss) / 1024)
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("openav-file-bench-\(getpid())")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }
guard FileManager.default.isExecutableFile(atPath: avcapture) else {
    fatalError("no avcapture at \(avcapture): swift build -c release --product avcapture in the project root")
}

// A webcam's clip: moving, detailed 1080p30 MJPEG with 4:2:2 chroma (as UVC cameras send it) and 48 kHz mono PCM,
// a second longer than what both sides record (`--duration`, `-t`).
let clip = directory.appendingPathComponent("webcam.mov").path
print("Making \(seconds) s of 1920x1080@30 MJPEG 4:2:2 + PCM…")
_ = run(
    "/usr/bin/ffmpeg",
    [
        "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30", "-f", "lavfi", "-i",
        "sine=frequency=440:sample_rate=48000", "-t", "\(seconds + 1)", "-c:v", "mjpeg", "-pix_fmt", "yuvj422p", "-q:v", "4",
        "-c:a", "pcm_s16le", "-ac", "1", clip,
    ])

var ours: [Cost] = []
var theirs: [Cost] = []
for round in 1...rounds {
    let ourFile = directory.appendingPathComponent("ours.mov").path
    let theirFile = directory.appendingPathComponent("ffmpeg.mov").path
    try? FileManager.default.removeItem(atPath: ourFile)
    try? FileManager.default.removeItem(atPath: theirFile)
    ours.append(
        run(
            avcapture,
            [
                "record", ourFile, "--video", "file:\(clip)", "--audio", "file:\(clip)#audio", "--duration", "\(seconds)",
                "--bitrate", "\(bitRate)",
            ]))
    theirs.append(
        run(
            "/usr/bin/ffmpeg",
            [
                "-nostdin", "-v", "error", "-i", clip, "-c:v", "libx264", "-preset", "superfast", "-tune", "zerolatency",
                "-profile:v", "high", "-threads", "1", "-g", "30", "-b:v", "\(bitRate)", "-maxrate", "\(bitRate * 3 / 2)",
                "-bufsize", "\(bitRate * 3 / 2)", "-x264-params", "scenecut=0", "-pix_fmt", "yuvj420p", "-c:a", "aac",
                "-b:a", "64000", "-ac", "1", "-t", "\(seconds)", theirFile,
            ]))
    print(
        String(
            format: "round %d: ours %.2f s CPU, peak %.1f MiB; ffmpeg %.2f s CPU, peak %.1f MiB", round, ours.last!.cpu,
            ours.last!.peakMiB, theirs.last!.cpu, theirs.last!.peakMiB))
}
let ourCPU = median(ours.map(\.cpu))
let theirCPU = median(theirs.map(\.cpu))
let ourPeak = median(ours.map(\.peakMiB))
let theirPeak = median(theirs.map(\.peakMiB))
print(
    String(
        format: """
            %.0f s of 1920x1080@30 MJPEG + PCM → H.264 + AAC, medians of %d alternating rounds:
              CPU: ours %.2f s, ffmpeg %.2f s, ratio %.2f
              peak RSS: ours %.1f MiB, ffmpeg %.1f MiB, difference %+.1f MiB
            """, seconds, rounds, ourCPU, theirCPU, ourCPU / theirCPU, ourPeak, theirPeak, ourPeak - theirPeak))
