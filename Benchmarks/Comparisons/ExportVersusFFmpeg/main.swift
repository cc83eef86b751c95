// AVAssetExportSession against ffmpeg, in one run on one machine (the ratio is what counts; machines are shared):
//
//   source:      N s of 1920x1080 at 30 fps H.264 (libx264 superfast, 10 Mb/s, one key frame a second) + AAC,
//                made once by ffmpeg from its test pattern and a sine
//   passthrough: AVAssetExportSession with AVAssetExportPresetPassthrough, against `ffmpeg -c copy` (wall time)
//   re-encode:   AVAssetExportSession with AVAssetExportPreset1920x1080 and a 30 fps video composition, against
//                ffmpeg decoding and encoding with the same libx264 settings (superfast, zerolatency, High,
//                one encoder thread, 1 s GOP, the same bit rate and buffer) and AAC at 128 kb/s (wall and CPU time)
//
// Run: swift run -c release ExportVersusFFmpeg [--seconds 60] [--rounds 2]

import Foundation
import OpenAVCapture

let arguments = CommandLine.arguments
func option(_ name: String, _ fallback: Double) -> Double {
    arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? Double(arguments[$0 + 1]) : nil }
        ?? fallback
}
let seconds = option("--seconds", 60)
let rounds = Int(option("--rounds", 2))
let bitRate = 1920 * 1080 * 30 * 16 / 100  // what the 1920x1080 preset picks at 30 fps (0.16 bit/pixel/frame)

struct CPU {
    var total: Double
    static func now(_ who: Int32) -> CPU {
        var usage = rusage()
        getrusage(who, &usage)
        return CPU(
            total: Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
                + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6)
    }
}

/// Wall seconds and CPU seconds of the ffmpeg child run with `arguments`.
func ffmpeg(_ arguments: [String]) -> (wall: Double, cpu: Double) {
    let before = CPU.now(RUSAGE_CHILDREN.rawValue)
    let start = Date()
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
    process.arguments = ["-nostdin", "-v", "error", "-y"] + arguments
    try! process.run()
    process.waitUntilExit()
    precondition(process.terminationStatus == 0, "ffmpeg \(arguments) failed")
    return (Date().timeIntervalSince(start), CPU.now(RUSAGE_CHILDREN.rawValue).total - before.total)
}

/// Wall seconds and CPU seconds (this process) of one export.
func export(_ asset: AVAsset, preset: String, to url: URL, frameRate: Int32? = nil) -> (wall: Double, cpu: Double) {
    try? FileManager.default.removeItem(at: url)
    let session = AVAssetExportSession(asset: asset, presetName: preset)!
    session.outputURL = url
    session.outputFileType = .mov
    if let frameRate {
        let video = AVMutableVideoComposition(propertiesOf: asset)
        video.frameDuration = CMTime(value: 1, timescale: frameRate)
        session.videoComposition = video
    }
    let before = CPU.now(RUSAGE_SELF.rawValue)
    let start = Date()
    let done = DispatchSemaphore(value: 0)
    session.exportAsynchronously { done.signal() }
    done.wait()
    precondition(session.status == .completed, "export failed: \(String(describing: session.error))")
    return (Date().timeIntervalSince(start), CPU.now(RUSAGE_SELF.rawValue).total - before.total)
}

let directory = URL(fileURLWithPath: NSTemporaryDirectory() + "export-versus-ffmpeg-\(getpid())")
try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }
let source = directory.appendingPathComponent("source.mov")
print("making \(Int(seconds)) s of 1080p30 H.264 + AAC with ffmpeg …")
_ = ffmpeg([
    "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
    "-t", "\(seconds)", "-c:v", "libx264", "-preset", "superfast", "-g", "30", "-b:v", "\(bitRate)", "-pix_fmt",
    "yuv420p", "-c:a", "aac", "-b:a", "128000", source.path,
])
let asset = AVURLAsset(url: source)
let ours = directory.appendingPathComponent("ours.mov")
let theirs = directory.appendingPathComponent("theirs.mov")

for round in 1...rounds {
    let copy = export(asset, preset: AVAssetExportPresetPassthrough, to: ours)
    let ffmpegCopy = ffmpeg(["-i", source.path, "-map", "0", "-c", "copy", theirs.path])
    print(
        String(
            format: "round %d passthrough: ours %.3f s, ffmpeg -c copy %.3f s, ratio %.2f", round, copy.wall,
            ffmpegCopy.wall, copy.wall / ffmpegCopy.wall))

    let encode = export(asset, preset: AVAssetExportPreset1920x1080, to: ours, frameRate: 30)
    let ffmpegEncode = ffmpeg([
        "-i", source.path, "-r", "30", "-c:v", "libx264", "-preset", "superfast", "-tune", "zerolatency",
        "-profile:v", "high", "-threads", "1", "-g", "30", "-b:v", "\(bitRate)", "-maxrate", "\(bitRate * 3 / 2)",
        "-bufsize", "\(bitRate * 3 / 2)", "-x264-params", "scenecut=0", "-c:a", "aac", "-b:a", "128000", theirs.path,
    ])
    print(
        String(
            format: "round %d re-encode 30 fps: ours %.2f s wall %.2f s CPU, ffmpeg %.2f s wall %.2f s CPU; "
                + "wall ratio %.2f, CPU ratio %.2f", round, encode.wall, encode.cpu, ffmpegEncode.wall, ffmpegEncode.cpu,
            encode.wall / ffmpegEncode.wall, encode.cpu / ffmpegEncode.cpu))
}
