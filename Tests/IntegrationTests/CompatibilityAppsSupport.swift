// Running Examples/CompatibilityApps' `compat-apps` binary and reading what its programs wrote: the virtual camera's
// frame-index codes decoded by ffmpeg from movies and pictures.

import Foundation
import OpenAVCaptureTesting
import TestSupport

/// The built compat-apps binary, beside the test bundle (`swift build --build-tests` builds both).
let compatAppsPath: String? = {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let candidates = [
        executable.deletingLastPathComponent().appendingPathComponent("compat-apps").path,
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("compat-apps")
            .path,
    ]
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
}()

/// Runs `compat-apps PROGRAM ARGUMENTS…` on the virtual devices, killed by coreutils' `timeout` after `seconds`
/// (status 124) so that a program that never finishes fails its test instead of hanging the run.
func runCompatApp(_ program: String, _ arguments: [String], seconds: Int = 120) throws -> ToolResult {
    var environment = ProcessInfo.processInfo.environment
    environment["OPENAV_DEVICES"] = "virtual"
    environment["OPENAV_FFMPEG_LOG"] = nil
    return try ToolResult.run(
        executable: "/usr/bin/timeout", ["\(seconds)", compatAppsPath!, program] + arguments, environment: environment)
}

/// A fresh scratch path for the compatibility apps' files.
func compatScratch(_ name: String) throws -> URL { try scratchURL(name, suite: "compat-apps") }

/// The JSON object or array a program printed on the last line of its standard output.
func lastJSONLine(of result: ToolResult) throws -> Any {
    guard
        let line = result.outputText.split(whereSeparator: \.isNewline).last(where: {
            $0.hasPrefix("{") || $0.hasPrefix("[")
        })
    else { throw MediaToolFailure(description: "no JSON line in: \(result.outputText)") }
    return try JSONSerialization.jsonObject(with: Data(line.utf8))
}

/// What ffmpeg decodes from the virtual camera's frames in `url` (a movie, or a picture with `filter`, such as
/// `transpose=2` to turn a portrait frame back), one entry per frame: the frame index code, or nil for a whole
/// second's flash frame or a code that does not read.
func virtualFrameIndices(_ url: URL, filter: String? = nil) throws -> (indices: [Int?], width: Int, height: Int) {
    let probe = try MediaTool.ffprobe.run([
        "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height", "-of", "csv=p=0", url.path,
    ])
    let size = probe.outputText.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap {
        Int($0)
    }
    guard size.count == 2 else { throw MediaToolFailure(description: "ffprobe gave no size: \(probe.error)") }
    let turned = filter?.hasPrefix("transpose") == true
    let (width, height) = turned ? (size[1], size[0]) : (size[0], size[1])
    let decoded = try MediaTool.ffmpeg.run(
        ["-nostdin", "-v", "error", "-i", url.path, "-map", "0:v:0", "-fps_mode", "passthrough"]
            + (filter.map { ["-vf", $0] } ?? []) + ["-f", "rawvideo", "-pix_fmt", "gray", "-"])
    guard decoded.status == 0, decoded.error.isEmpty else {
        throw MediaToolFailure(description: "ffmpeg: \(decoded.error)")
    }
    let bytes = [UInt8](decoded.output)
    let frameSize = width * height
    let indices = stride(from: 0, to: bytes.count - frameSize + 1, by: frameSize).map { start -> Int? in
        let luma = Array(bytes[start..<start + frameSize])
        return VirtualFrameReader.readFrameIndex(fromLuma: luma, width: width, height: height).map(Int.init)
    }
    return (indices, width, height)
}

/// Whether every read index is above the one before it.
func isIncreasing(_ indices: [Int]) -> Bool { zip(indices, indices.dropFirst()).allSatisfy { $0 < $1 } }
