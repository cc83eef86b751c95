// The same job done by `avcapture`, by `ffmpeg` and by `gst-launch-1.0`, side by side in one run: what a user choosing
// between them would compare. Machines are shared and noisy, so the three take turns, round after round, and the
// ratios of medians are what counts.
//
// Inputs, made once with ffmpeg (1920x1080 at 30 fps with moving noise, so the encoder works as on a real camera,
// and 48 kHz mono PCM):
//   mjpeg  Motion JPEG 4:2:2 in QuickTime, as a USB webcam sends
//   h264   H.264 at 20 Mb/s in QuickTime, as a camera that encodes sends
//   y4m    raw 4:2:0 in YUV4MPEG2 (the sound beside it in a WAV file)
// Jobs, one child process each; its CPU (user + system) and peak RSS come from wait4(2), the bit rate from ffprobe,
// and its peak anonymous RSS (`RssAnon` in /proc/PID/status, sampled every 20 ms: what the process allocated, without
// the code and data of its binary and libraries, which the resident total counts page by page as it touches them):
//   transcode    every tool into H.264 + AAC with the same libx264 settings (superfast, zerolatency, High, one thread,
//                a key frame every 30 frames, no B-frames, no scene cuts, 0.1 bit per pixel with a 1.5× VBV) and
//                AAC at 64 kb/s. avcapture reads the input as a camera and microphone (`file:`) in real time;
//                ffmpeg runs twice, as fast as it can and with `-re` (reading at the input's rate, as a camera
//                delivers), so what pacing in real time costs by itself shows in the same run.
//   passthrough  the h264 input recorded without re-encoding the picture (avcapture's default for a camera that
//                sends H.264; `-c:v copy` for ffmpeg; h264parse for GStreamer), and avcapture encoding the same input
//                without sound, for the passthrough's cost as a share of encoding.
//
// Run: swift build -c release --product avcapture --static-swift-stdlib (in the project root; the build `make deb`
// ships), then here:
//      swift run -c release SideBySide [--seconds 10] [--rounds 3] [--avcapture PATH] [--write ../docs/performance.md]
// GStreamer needs gstreamer1.0-plugins-good, -bad, -ugly and gstreamer1.0-libav (`make bench-side-by-side` installs
// them).

import Foundation
import Synchronization

let arguments = CommandLine.arguments
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}
let seconds = Int(option("--seconds") ?? "") ?? 10
let rounds = Int(option("--rounds") ?? "") ?? 3
let avcapture = option("--avcapture") ?? "../.build/release/avcapture"
let documentPath = option("--write")
// What the comparison holds every encoder to: about 0.1 bit per pixel per frame at 1080p30.
let bitRate = 1920 * 1080 * 30 / 10

/// What one child process cost.
struct Cost {
    var cpu: Double
    var peakMiB: Double
    /// The most anonymous memory seen resident (heap, stacks, buffers; not file-backed code and data).
    var anonymousMiB: Double
    var bitRate: Double
    /// Video frames in the output: fewer than the input's means the tool dropped some.
    var frames: Double
}

/// The process's anonymous resident memory now, in kB (`RssAnon:` of /proc/PID/status), or nil once it is gone.
func anonymousKiB(_ pid: pid_t) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("RssAnon:") }) else { return nil }
    return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
}

/// Runs `executable` with `arguments`, output discarded; returns its CPU seconds, peak RSS and the most anonymous
/// memory seen resident.
func run(_ executable: String, _ arguments: [String]) -> (cpu: Double, peakMiB: Double, anonymousMiB: Double) {
    var pid: pid_t = 0
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/tmp/side-by-side-stderr.txt", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    guard posix_spawn(&pid, executable, &actions, nil, argv, environ) == 0 else {
        fatalError("cannot run \(executable)")
    }
    // Sampled on another thread until the child has exited; it is reaped only after the sampler stopped, so its
    // PID cannot be another process's meanwhile.
    let exited = Atomic<Bool>(false)
    let largest = Atomic<Int>(0)
    let samplerDone = DispatchSemaphore(value: 0)
    let child = pid
    Thread {
        while !exited.load(ordering: .acquiring) {
            if let kib = anonymousKiB(child), kib > largest.load(ordering: .relaxed) {
                largest.store(kib, ordering: .relaxed)
            }
            usleep(20_000)
        }
        samplerDone.signal()
    }.start()
    var info = siginfo_t()
    _ = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT)
    exited.store(true, ordering: .releasing)
    samplerDone.wait()
    var status: Int32 = 0
    var usage = rusage()
    _ = wait4(pid, &status, 0, &usage)
    if status != 0 {
        let stderr = (try? String(contentsOfFile: "/tmp/side-by-side-stderr.txt", encoding: .utf8)) ?? ""
        fatalError("\(executable) \(arguments.joined(separator: " ")) failed with status \(status):\n\(stderr)")
    }
    let cpu =
        Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    return (cpu, Double(usage.ru_maxrss) / 1024, Double(largest.load(ordering: .relaxed)) / 1024)
}

/// The bit rate of `path`'s video stream (bits per second), as ffprobe reads it from the packets, and its packets.
func videoBitRate(_ path: String) -> (rate: Double, frames: Double) {
    let pipe = Pipe()
    let probe = Process()
    probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
    probe.arguments = [
        "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=size:format=duration", "-of", "csv=p=0", path,
    ]
    probe.standardOutput = pipe
    try? probe.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    probe.waitUntilExit()
    let lines = output.split(separator: "\n").map(String.init)
    let bytes = lines.dropLast().compactMap { Double($0.trimmingCharacters(in: CharacterSet(charactersIn: ","))) }
    let duration = Double(lines.last ?? "") ?? Double(seconds)
    return (bytes.reduce(0, +) * 8 / max(duration, 0.001), Double(bytes.count))
}

/// Prints a line at once (stdout is a pipe or a file when the run is logged).
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("openav-side-by-side-\(getpid())")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }
guard FileManager.default.isExecutableFile(atPath: avcapture) else {
    fatalError(
        "no avcapture at \(avcapture): "
            + "swift build -c release --product avcapture --static-swift-stdlib in the project root")
}
func scratch(_ name: String) -> String { directory.appendingPathComponent(name).path }

// MARK: Inputs

let picture = "testsrc2=size=1920x1080:rate=30,noise=alls=12:allf=t"
let sound = "sine=frequency=440:sample_rate=48000"
say("Making \(seconds) s of 1920x1080@30 inputs (MJPEG 4:2:2, H.264 20 Mb/s, y4m) with 48 kHz PCM…")
let inputs: [(name: String, video: String, audio: String)] = [
    ("mjpeg", scratch("webcam.mov"), scratch("webcam.mov")),
    ("h264", scratch("camera.mov"), scratch("camera.mov")),
    ("y4m", scratch("raw.y4m"), scratch("raw.wav")),
]
let common = ["-nostdin", "-v", "error", "-f", "lavfi", "-i", picture, "-f", "lavfi", "-i", sound, "-t", "\(seconds)"]
_ = run(
    "/usr/bin/ffmpeg",
    common + ["-c:v", "mjpeg", "-pix_fmt", "yuvj422p", "-q:v", "4", "-c:a", "pcm_s16le", "-ac", "1", inputs[0].video])
_ = run(
    "/usr/bin/ffmpeg",
    common + [
        "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "high", "-bf", "0", "-g", "30", "-b:v", "20M",
        "-maxrate", "20M", "-bufsize", "20M", "-pix_fmt", "yuv420p", "-c:a", "pcm_s16le", "-ac", "1", inputs[1].video,
    ])
_ = run(
    "/usr/bin/ffmpeg",
    common + [
        "-map", "0:v", "-pix_fmt", "yuv420p", inputs[2].video, "-map", "1:a", "-ac", "1", "-t", "\(seconds)",
        inputs[2].audio,
    ])

// MARK: Jobs

/// The same libx264 settings for every tool (see the top of this file).
let x264 = (preset: "superfast", keyInterval: 30, maxRate: bitRate * 3 / 2, bufferSize: bitRate * 3 / 2)

func ours(
    _ input: (name: String, video: String, audio: String), to output: String, encode: Bool = true, audio: Bool = true,
    seconds: Int? = nil
) -> [String] {
    let audioSource = input.audio == input.video ? "file:\(input.audio)#audio" : "file:\(input.audio)"
    return ["record", output, "--video", "file:\(input.video)", "--audio", audio ? audioSource : "none"]
        + (encode ? ["--bitrate", "\(bitRate)"] : []) + (seconds.map { ["--duration", "\($0)"] } ?? [])
}

func ffmpeg(
    _ input: (name: String, video: String, audio: String), to output: String, copyVideo: Bool = false,
    paced: Bool = false
) -> [String] {
    let files = input.audio == input.video ? [input.video] : [input.video, input.audio]
    let sources = files.flatMap { (paced ? ["-re"] : []) + ["-i", $0] }
    let video =
        copyVideo
        ? ["-c:v", "copy"]
        : [
            "-c:v", "libx264", "-preset", x264.preset, "-tune", "zerolatency", "-profile:v", "high", "-threads", "1",
            "-g", "\(x264.keyInterval)", "-bf", "0", "-b:v", "\(bitRate)", "-maxrate", "\(x264.maxRate)", "-bufsize",
            "\(x264.bufferSize)", "-x264-params", "scenecut=0", "-pix_fmt",
            input.name == "mjpeg" ? "yuvj420p" : "yuv420p",
        ]
    return ["-nostdin", "-v", "error", "-y"] + sources + [
        "-map", "0:v:0", "-map", input.audio == input.video ? "0:a:0" : "1:a:0",
    ]
        + video + ["-c:a", "aac", "-b:a", "64000", "-ac", "1", output]
}

func gstreamer(
    _ input: (name: String, video: String, audio: String), to output: String, copyVideo: Bool = false
) -> [String] {
    let encoder =
        "x264enc speed-preset=\(x264.preset) tune=zerolatency threads=1 key-int-max=\(x264.keyInterval) bframes=0 "
        + "bitrate=\(bitRate / 1000) vbv-buf-capacity=1500 "
        + "option-string=scenecut=0:vbv-maxrate=\(x264.maxRate / 1000):vbv-bufsize=\(x264.bufferSize / 1000) "
        + "! video/x-h264,profile=high ! h264parse"
    let aac = "queue ! audioconvert ! audioresample ! avenc_aac bitrate=64000 ! mux."
    let pipeline: String
    switch input.name {
    case "y4m":
        pipeline =
            "filesrc location=\(input.video) ! y4mdec ! queue ! \(encoder) ! qtmux name=mux ! filesink location=\(output) "
            + "filesrc location=\(input.audio) ! wavparse ! \(aac)"
    default:
        let decode =
            input.name == "mjpeg" ? "jpegdec ! videoconvert ! video/x-raw,format=I420" : "h264parse ! avdec_h264"
        let video = copyVideo ? "h264parse" : "\(decode) ! \(encoder)"
        pipeline =
            "filesrc location=\(input.video) ! qtdemux name=demux demux.video_0 ! queue ! \(video) ! qtmux name=mux ! "
            + "filesink location=\(output) demux.audio_0 ! \(aac)"
    }
    return ["-q", "-e"] + pipeline.split(separator: " ").map(String.init)
}

/// Runs one job and measures it; the output is removed after.
func measure(_ executable: String, _ arguments: [String], output: String) -> Cost {
    try? FileManager.default.removeItem(atPath: output)
    let (cpu, peak, anonymous) = run(executable, arguments)
    let (rate, frames) = videoBitRate(output)
    try? FileManager.default.removeItem(atPath: output)
    return Cost(cpu: cpu, peakMiB: peak, anonymousMiB: anonymous, bitRate: rate, frames: frames)
}

let tools = ["avcapture", "ffmpeg", "ffmpeg -re", "gst-launch-1.0"]
var transcodes: [String: [String: [Cost]]] = [:]  // input → tool → rounds
var passthrough: [String: [Cost]] = [:]  // job → rounds
for round in 1...rounds {
    for input in inputs {
        let output = scratch("out-\(input.name).mov")
        var costs: [String: Cost] = [:]
        // The order of the tools turns with the round, so none always runs first on a cold cache.
        for offset in 0..<tools.count {
            let tool = tools[(round + offset) % tools.count]
            costs[tool] =
                switch tool {
                case "avcapture": measure(avcapture, ours(input, to: output), output: output)
                case "ffmpeg": measure("/usr/bin/ffmpeg", ffmpeg(input, to: output), output: output)
                case "ffmpeg -re": measure("/usr/bin/ffmpeg", ffmpeg(input, to: output, paced: true), output: output)
                default: measure("/usr/bin/gst-launch-1.0", gstreamer(input, to: output), output: output)
                }
            transcodes[input.name, default: [:]][tool, default: []].append(costs[tool]!)
        }
        say(
            "round \(round) \(input.name): "
                + tools.map { String(format: "%@ %.2f s CPU, %.1f MiB", $0, costs[$0]!.cpu, costs[$0]!.peakMiB) }
                .joined(separator: "; "))
    }
    let camera = inputs[1]
    let output = scratch("out-copy.mov")
    let jobs: [(String, String, [String])] = [
        ("avcapture as it comes", avcapture, ours(camera, to: output, encode: false)),
        ("ffmpeg -c:v copy", "/usr/bin/ffmpeg", ffmpeg(camera, to: output, copyVideo: true)),
        // Paced as a camera is: issue 39's passthrough goal is at most 1.5x this one.
        ("ffmpeg -re -c:v copy", "/usr/bin/ffmpeg", ffmpeg(camera, to: output, copyVideo: true, paced: true)),
        ("gst-launch-1.0 h264parse", "/usr/bin/gst-launch-1.0", gstreamer(camera, to: output, copyVideo: true)),
        ("avcapture as it comes, no sound", avcapture, ours(camera, to: output, encode: false, audio: false)),
        ("avcapture encoding, no sound", avcapture, ours(camera, to: output, encode: true, audio: false)),
        // The first half only: the difference from the whole is per frame, without the process's fixed costs
        // (starting, opening the file, the summary's read of the movie).
        (
            "avcapture as it comes, no sound, first half", avcapture,
            ours(camera, to: output, encode: false, audio: false, seconds: seconds / 2)
        ),
        (
            "avcapture encoding, no sound, first half", avcapture,
            ours(camera, to: output, encode: true, audio: false, seconds: seconds / 2)
        ),
    ]
    for (name, executable, arguments) in jobs {
        passthrough[name, default: []].append(measure(executable, arguments, output: output))
    }
    say(
        "round \(round) passthrough: "
            + jobs.map { String(format: "%@ %.2f s", $0.0, passthrough[$0.0]!.last!.cpu) }.joined(separator: "; "))
}

// What each process costs before it does any work (loading its libraries, starting its runtime): the part of the
// memory column no recording job changes.
var startUp: [String: [(peak: Double, anonymous: Double)]] = [:]
for _ in 1...rounds {
    for (tool, executable, arguments) in [
        ("avcapture", avcapture, ["--help"]), ("ffmpeg", "/usr/bin/ffmpeg", ["-version"]),
        ("gst-launch-1.0", "/usr/bin/gst-launch-1.0", ["--version"]),
    ] {
        let cost = run(executable, arguments)
        startUp[tool, default: []].append((cost.peakMiB, cost.anonymousMiB))
    }
}

// MARK: Report

func medians(_ costs: [Cost]) -> Cost {
    Cost(
        cpu: median(costs.map(\.cpu)), peakMiB: median(costs.map(\.peakMiB)),
        anonymousMiB: median(costs.map(\.anonymousMiB)), bitRate: median(costs.map(\.bitRate)),
        frames: costs.map(\.frames).min() ?? 0)
}

var table = """
    | input | tool | CPU s | peak RSS MiB | video Mb/s | frames (fewest) | CPU vs ffmpeg | CPU vs ffmpeg -re | CPU vs GStreamer | RSS vs ffmpeg | anonymous RSS vs ffmpeg |
    |---|---|---|---|---|---|---|---|---|---|---|

    """
for input in inputs {
    let byTool = transcodes[input.name]!.mapValues(medians)
    let reference = byTool["ffmpeg"]!
    let paced = byTool["ffmpeg -re"]!
    let gst = byTool["gst-launch-1.0"]!
    for tool in tools {
        let cost = byTool[tool]!
        table += String(
            format: "| %@ | %@ | %.2f | %.1f | %.2f | %.0f | %.2f× | %.2f× | %.2f× | %+.1f MiB | %+.1f MiB |\n",
            input.name, tool, cost.cpu, cost.peakMiB, cost.bitRate / 1e6, cost.frames, cost.cpu / reference.cpu,
            cost.cpu / paced.cpu, cost.cpu / gst.cpu, cost.peakMiB - reference.peakMiB,
            cost.anonymousMiB - reference.anonymousMiB)
    }
}
table +=
    "\n| passthrough job (h264 input) | CPU s | peak RSS MiB | video Mb/s | frames (fewest) |\n|---|---|---|---|---|\n"
let copyJobs = [
    "avcapture as it comes", "ffmpeg -c:v copy", "ffmpeg -re -c:v copy", "gst-launch-1.0 h264parse",
    "avcapture as it comes, no sound",
    "avcapture encoding, no sound", "avcapture as it comes, no sound, first half",
    "avcapture encoding, no sound, first half",
]
for name in copyJobs {
    let cost = medians(passthrough[name]!)
    table += String(
        format: "| %@ | %.2f | %.1f | %.2f | %.0f |\n", name, cost.cpu, cost.peakMiB, cost.bitRate / 1e6, cost.frames)
}
let passthroughMedians = passthrough.mapValues(medians)
func cpu(_ job: String) -> Double { passthroughMedians[job]!.cpu }
let share = cpu("avcapture as it comes, no sound") / cpu("avcapture encoding, no sound")
let marginal =
    (cpu("avcapture as it comes, no sound") - cpu("avcapture as it comes, no sound, first half"))
    / (cpu("avcapture encoding, no sound") - cpu("avcapture encoding, no sound, first half"))
let pairedCopies = zip(passthrough["avcapture as it comes"]!, passthrough["ffmpeg -re -c:v copy"]!).map {
    String(format: "%.2f×", $0.cpu / $1.cpu)
}
table += String(
    format: "\nPassthrough with sound against `ffmpeg -re -c:v copy`: %.2f× (medians; per round %@)\n",
    cpu("avcapture as it comes") / cpu("ffmpeg -re -c:v copy"), pairedCopies.joined(separator: ", "))
table += String(
    format: "\nPassthrough's CPU as a share of encoding the same camera (no sound): %.1f %% of the whole process, "
        + "%.1f %% per frame (the second half's CPU: fixed costs left out)\n", share * 100, marginal * 100)

let startUpMiB = startUp.mapValues { median($0.map(\.peak)) }
let startUpAnonymousMiB = startUp.mapValues { median($0.map(\.anonymous)) }
table += String(
    format:
        "\nStarted and doing nothing (`avcapture --help`, `ffmpeg -version`, `gst-launch-1.0 --version`), peak RSS: "
        + "avcapture %.1f MiB, ffmpeg %.1f MiB, GStreamer %.1f MiB (avcapture %+.1f MiB over ffmpeg before any work; "
        + "anonymous: %+.1f MiB)\n",
    startUpMiB["avcapture"]!, startUpMiB["ffmpeg"]!, startUpMiB["gst-launch-1.0"]!,
    startUpMiB["avcapture"]! - startUpMiB["ffmpeg"]!,
    startUpAnonymousMiB["avcapture"]! - startUpAnonymousMiB["ffmpeg"]!)

let heading = "\(seconds) s of 1920x1080@30 + 48 kHz mono, medians of \(rounds) alternating rounds"
say("\n" + heading + "\n\n" + table)

if let documentPath {
    // The table goes between the markers in the document, replacing the last run's.
    let begin = "<!-- side-by-side begin -->"
    let end = "<!-- side-by-side end -->"
    var document = (try? String(contentsOfFile: documentPath, encoding: .utf8)) ?? ""
    let block = "\(begin)\n\(heading) (`make bench-side-by-side`):\n\n\(table)\(end)"
    if let start = document.range(of: begin), let stop = document.range(of: end) {
        document.replaceSubrange(start.lowerBound..<stop.upperBound, with: block)
    } else {
        document += "\n" + block + "\n"
    }
    try document.write(toFile: documentPath, atomically: true, encoding: .utf8)
    say("Wrote the table into \(documentPath)")
}
