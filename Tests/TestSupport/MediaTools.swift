// The outside tools that read what we write: ffprobe, ffmpeg, gst-discoverer-1.0, mediainfo, exiftool.
// `make test` installs them; a test whose tool is missing skips with a printed reason.

import Foundation

/// An outside program in /usr/bin that a test checks our files with.
public enum MediaTool: String, CaseIterable, Sendable {
    case ffprobe
    case ffmpeg
    case gstDiscoverer = "gst-discoverer-1.0"
    case mediainfo
    case exiftool

    public var path: String { "/usr/bin/" + rawValue }
    public var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: path) }

    /// Whether every tool is installed; prints which are missing and that `test` is skipped when not.
    public static func available(_ tools: [MediaTool] = [.ffprobe, .ffmpeg], for test: String) -> Bool {
        let missing = tools.filter { !$0.isInstalled }
        if !missing.isEmpty {
            print(
                "Skipping \(test): \(missing.map(\.path).joined(separator: ", ")) not installed (make test installs them)"
            )
        }
        return missing.isEmpty
    }

    /// Runs the tool; its exit status, standard output and standard error.
    public func run(_ arguments: [String]) throws -> ToolResult {
        try ToolResult.run(executable: path, arguments)
    }
}

/// What a finished process left: status and both output streams.
public struct ToolResult: Sendable {
    public var status: Int32
    public var output: Data
    public var error: String
    public var outputText: String { String(decoding: output, as: UTF8.self) }

    /// Runs `executable` to completion, reading both pipes as it goes (so a chatty tool cannot block on a full pipe).
    public static func run(
        executable: String, _ arguments: [String], environment: [String: String]? = nil
    ) throws
        -> ToolResult
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Standard error is drained on another thread while standard output is read here.
        let errorData = ErrorDrain(error.fileHandleForReading)
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return ToolResult(
            status: process.terminationStatus, output: outputData,
            error: String(decoding: errorData.finish(), as: UTF8.self))
    }
}

/// Reads a pipe to its end on a thread of its own.
private final class ErrorDrain: @unchecked Sendable {
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }
    }

    func finish() -> Data {
        done.wait()
        return data
    }
}

/// A failure of an outside tool, with what it printed.
public struct MediaToolFailure: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

/// What ffprobe says about a file, frames counted.
public struct FFprobeReport: @unchecked Sendable {
    public var format: [String: Any]
    public var streams: [[String: Any]]

    public init(_ url: URL) throws {
        let result = try MediaTool.ffprobe.run(
            ["-v", "error", "-count_frames", "-show_streams", "-show_format", "-of", "json", url.path])
        guard result.status == 0 else { throw MediaToolFailure(description: "ffprobe failed: \(result.error)") }
        guard let json = try JSONSerialization.jsonObject(with: result.output) as? [String: Any] else {
            throw MediaToolFailure(description: "ffprobe printed no JSON object")
        }
        format = json["format"] as? [String: Any] ?? [:]
        streams = json["streams"] as? [[String: Any]] ?? []
    }

    public func stream(_ type: String) -> [String: Any]? { streams.first { $0["codec_type"] as? String == type } }
    public static func number(_ value: Any?) -> Double? {
        (value as? String).flatMap(Double.init) ?? (value as? Double) ?? (value as? Int).map(Double.init)
    }
    public var tags: [String: String] { format["tags"] as? [String: String] ?? [:] }
}

/// ffmpeg's complaints when decoding the whole file; empty when it decodes cleanly.
///
/// The frames keep the file's own times (`-fps_mode passthrough`, in the demuxer's time base): otherwise ffmpeg
/// rounds a variable-rate file's times to its guessed frame rate, and two frames a few milliseconds apart (a PipeWire
/// producer's, under load) collide in its own output, which it reports as our error. A file whose times really go
/// backwards or repeat is still reported.
public func ffmpegDecodeErrors(_ url: URL) throws -> String {
    let result = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-i", url.path, "-fps_mode", "passthrough", "-enc_time_base", "-1", "-f", "null", "-",
    ])
    return result.status == 0 ? result.error : "exit \(result.status): \(result.error)"
}

/// A WAVE file of 16-bit PCM silence written at a fresh scratch path (see ``scratchURL(_:suite:)``): `frames` frames of
/// `channels` channels at `sampleRate`, whatever a decoder would make of such a claim.
public func silentWave(channels: Int, sampleRate: Int, frames: Int, name: String, suite: String) throws -> URL {
    func le32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    func le16(_ value: Int) -> [UInt8] { (0..<2).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    let dataSize = frames * channels * 2
    var bytes = Array("RIFF".utf8) + le32(36 + dataSize) + Array("WAVEfmt ".utf8) + le32(16)
    bytes += le16(1) + le16(channels) + le32(sampleRate) + le32(sampleRate * channels * 2) + le16(channels * 2)
    bytes += le16(16) + Array("data".utf8) + le32(dataSize) + [UInt8](repeating: 0, count: dataSize)
    let url = try scratchURL(name, suite: suite)
    try Data(bytes).write(to: url)
    return url
}

/// ffmpeg's moving test pattern (`testsrc2`) in 4:2:0 at `url`: `frames` frames of `width` x `height` at `rate`
/// frames a second, encoded with `encoding` (ffmpeg's output options, such as `-c:v libx264`), else as the file's
/// extension says.
public func testPattern(
    at url: URL, width: Int = 320, height: Int = 240, rate: Int, frames: Int, encoding: [String] = []
) throws {
    let result = try MediaTool.ffmpeg.run(
        [
            "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(width)x\(height):rate=\(rate)",
            "-frames:v", "\(frames)",
        ] + encoding + ["-pix_fmt", "yuv420p", url.path])
    guard result.status == 0 else {
        throw MediaToolFailure(description: "ffmpeg could not write \(url.lastPathComponent): \(result.error)")
    }
}

/// ``testPattern(at:width:height:rate:frames:encoding:)`` as raw 4:2:0 in a YUV4MPEG2 file, as a tool's raw export
/// holds it.
public func testPatternY4M(at url: URL, width: Int = 320, height: Int = 240, rate: Int, frames: Int) throws {
    try testPattern(at: url, width: width, height: height, rate: rate, frames: frames)
}

/// A fresh path in a per-process scratch directory named for `suite` (nothing is there yet).
public func scratchURL(_ name: String, suite: String = "openav-tests") throws -> URL {
    let directory = NSTemporaryDirectory() + "\(suite)-\(getpid())"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let url = URL(fileURLWithPath: directory + "/" + name)
    try? FileManager.default.removeItem(at: url)
    return url
}
