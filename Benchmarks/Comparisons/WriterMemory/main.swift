// The resident memory a movie writer holds at a high bit rate, by fragment setting: the figure FragmentCapTests used
// to compare (and that made it fail at random, resident sizes being what the whole process does). The tests now
// count the media the muxer holds; this keeps the resident-set figure, measured where noise does not decide.
//
//   AVAssetWriter writes 12 s of 320x240 NV12 noise at 30 fps as H.264 at 10 Mb/s (noise spends the whole rate, so
//   the packets are a 1080p30 camera's at a fraction of the encoding cost), in a child process of its own per run
//   (a fresh heap), with movieFragmentInterval
//     10 s       the 4 MiB fragment cap decides: at most the cap and one GOP held (about 5 MB)
//     1 s        a fragment a second: about 1.25 MB held
//     invalid    a conventional movie: the media goes to disk as it comes
//   and reports the growth of the peak resident set (VmHWM, reset through /proc/self/clear_refs) over the resident
//   set after the first second (the encoder's own memory is there by then).
//
// Run: swift run -c release WriterMemory [--rounds 3]   (modes alternate; medians printed)

import Foundation
import OpenAVCapture

let arguments = CommandLine.arguments

func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}

/// Resident bytes now (/proc/self/statm).
func residentBytes() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = statm.split(separator: " ")
    return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
}

/// The peak resident set (VmHWM) since the last reset, in bytes.
func peakResidentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
    else { return 0 }
    return (Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0) * 1024
}

/// Resets VmHWM to the current resident set (`echo 5 > /proc/self/clear_refs`).
func resetPeak() {
    guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return }
    handle.write(Data("5".utf8))
    try? handle.close()
}

/// One 320x240 NV12 frame of xorshift noise.
func noiseFrame(seed: UInt64) -> CVPixelBuffer {
    var created: CVPixelBuffer?
    CVPixelBufferCreate(nil, 320, 240, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &created)
    guard let buffer = created else { fatalError("cannot make a 320x240 buffer") }
    var state = seed | 1
    buffer.withLockedPlanes { planes in
        for plane in planes {
            let words = plane.bytes.bindMemory(to: UInt64.self)
            for index in words.indices {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                words[index] = state
            }
        }
    }
    return buffer
}

/// Writes the movie with `interval` (seconds, or "invalid") and prints the peak growth in bytes.
func measure(interval: String) async throws {
    let url = URL(fileURLWithPath: NSTemporaryDirectory() + "writer-memory-\(getpid()).mov")
    try? FileManager.default.removeItem(at: url)
    defer { try? FileManager.default.removeItem(at: url) }
    let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
    writer.movieFragmentInterval = Double(interval).map { CMTime(seconds: $0, preferredTimescale: 600) } ?? .invalid
    let input = AVAssetWriterInput(
        mediaType: .video,
        outputSettings: [
            AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 320, AVVideoHeightKey: 240,
            AVVideoCompressionPropertiesKey: [AVVideoAverageBitRateKey: 10_000_000, AVVideoMaxKeyFrameIntervalKey: 30],
        ])
    input.expectsMediaDataInRealTime = false
    let adaptor = AVAssetWriterInputPixelBufferAdaptor(assetWriterInput: input, sourcePixelBufferAttributes: nil)
    writer.add(input)
    guard writer.startWriting() else { throw writer.error ?? CocoaError(.fileWriteUnknown) }
    writer.startSession(atSourceTime: .zero)
    // A few distinct frames, reused: making noise is not what is measured.
    let frames = (0..<16).map { noiseFrame(seed: UInt64($0 + 1) &* 0x9E37_79B9_7F4A_7C15) }
    var baseline = 0
    for index in 0..<12 * 30 {
        while !input.isReadyForMoreMediaData { usleep(1_000) }
        if index == 30 {
            // One second in: the encoder's frames and the writer's buffers are allocated.
            baseline = residentBytes()
            resetPeak()
        }
        guard adaptor.append(frames[index % frames.count], withPresentationTime: CMTime(value: Int64(index), timescale: 30))
        else { throw writer.error ?? CocoaError(.fileWriteUnknown) }
    }
    input.markAsFinished()
    await writer.finishWriting()
    guard writer.status == .completed else { throw writer.error ?? CocoaError(.fileWriteUnknown) }
    print("peak growth \(peakResidentBytes() - baseline)")
}

if let interval = option("--child") {
    do {
        try await measure(interval: interval)
    } catch {
        FileHandle.standardError.write(Data("WriterMemory: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

let rounds = Int(option("--rounds") ?? "3") ?? 3
let modes = ["10", "1", "invalid"]
var growth: [String: [Int]] = [:]
let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
for round in 1...rounds {
    for mode in modes {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--child", mode]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let line = output.split(separator: "\n").first(where: { $0.hasPrefix("peak growth ") }),
            let bytes = Int(line.dropFirst("peak growth ".count))
        else {
            print("round \(round), movieFragmentInterval \(mode): failed (exit \(process.terminationStatus))")
            continue
        }
        growth[mode, default: []].append(bytes)
        print("round \(round), movieFragmentInterval \(mode): \(bytes >> 10) KiB")
    }
}
print("Peak resident growth writing 12 s of H.264 at 10 Mb/s (medians of \(rounds)):")
for mode in modes {
    let values = (growth[mode] ?? []).sorted()
    guard !values.isEmpty else { continue }
    let name = mode == "invalid" ? "no fragments" : "\(mode) s fragments"
    print("  \(name): \(values[values.count / 2] >> 10) KiB")
}
