// `avcapture record --reconnect` end to end: the virtual camera of the tool's process is unplugged and replugged
// mid-recording (OPENAV_VIRTUAL_UNPLUG, the virtual devices' fault injection for another process), and the one
// file is read back with ffprobe and ffmpeg.

import Foundation
import Testing
import TestSupport

/// Runs avcapture on the virtual devices with the back camera unplugged 1.5 s after it starts, for 1 s.
private func avcaptureWithUnplug(_ arguments: [String]) throws -> ToolResult {
    var environment = ProcessInfo.processInfo.environment
    environment["OPENAV_DEVICES"] = "virtual"
    environment["OPENAV_VIRTUAL_UNPLUG"] = "virtual:back-camera:1.5:1"
    return try ToolResult.run(executable: toolPath!, arguments, environment: environment)
}

@Suite(
    "avcapture record --reconnect", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct ReconnectToolTests {
    @Test("--reconnect: the camera's outage is a gap in the one file, which goes on to --duration")
    func reconnect() throws {
        guard MediaTool.available(for: "ReconnectToolTests.reconnect") else { return }
        let url = try scratchURL("reconnected.mov", suite: "reconnect-tool")
        let result = try avcaptureWithUnplug(["record", url.path, "--preset", "320x240", "--duration", "4", "--reconnect"])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.outputText.contains("stopped: reached --duration"), "\(result.outputText)")
        #expect(result.error.contains("Virtual Back Camera was disconnected at"), "\(result.error)")
        #expect(result.error.contains("Virtual Back Camera is back at"), "\(result.error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path) == [url.lastPathComponent])
        #expect(try ffmpegDecodeErrors(url) == "")
        let times = try videoFrameTimes(url)
        let jumps = zip(times, times.dropFirst()).map { $1 - $0 }.filter { $0 > 0.05 }
        #expect(jumps.count == 1 && jumps[0] >= 0.95, "timestamp jumps \(jumps) s")
        let indices = try decodedFrameIndices(url)
        #expect(indexSteps(indices).count == 1, "index steps \(indexSteps(indices))")
        // --duration counts the gap: the file is 4 s long, sound and picture alike.
        #expect(abs(try streamDuration(url, "video") - 4) <= 0.1)
        #expect(abs(try streamDuration(url, "audio") - 4) <= 0.1)
    }

    @Test("Without --reconnect the unplug ends the recording: a finished file, exit status 69")
    func withoutReconnect() throws {
        guard MediaTool.available(for: "ReconnectToolTests.withoutReconnect") else { return }
        let url = try scratchURL("ended.mov", suite: "reconnect-tool")
        let result = try avcaptureWithUnplug(["record", url.path, "--preset", "320x240", "--duration", "4"])
        #expect(result.status == 69, "\(result.status): \(result.error)")
        #expect(result.outputText.contains("stopped: the device was disconnected"), "\(result.outputText)")
        #expect(try ffmpegDecodeErrors(url) == "")
        let length = try streamDuration(url, "video")
        #expect(length > 0.5 && length < 2, "\(length) s")
    }

    @Test("--reconnect needs a movie from a camera")
    func reconnectNeedsACamera() throws {
        let url = try scratchURL("sound.m4a", suite: "reconnect-tool")
        let result = try avcaptureWithUnplug(["record", url.path, "--video", "none", "--reconnect"])
        #expect(result.status != 0)
        #expect(result.error.contains("--reconnect"), "\(result.error)")
    }
}
