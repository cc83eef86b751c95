// `avcapture record` with several --video: one movie per camera from a multi-camera session, each read back with
// ffprobe and ffmpeg; a camera unplugged mid-recording (OPENAV_VIRTUAL_UNPLUG) ends only its own file; bad input.

import Foundation
import Testing
import TestSupport

@Suite(
    "avcapture record, several cameras", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct MultiCamToolTests {
    /// An empty directory of its own for each test.
    private func directory(_ name: String) throws -> URL {
        let url = try scratchURL(name, suite: "multicam-tool")
        try? FileManager.default.removeItem(at: url)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    private let cameras = ["--video", "back", "--video", "front", "--video", "webcam", "--format", "640x480@30"]

    @Test("three cameras, 'cam-%c.mov': three movies, each with its camera's picture and the microphone")
    func threeMovies() throws {
        guard MediaTool.available(for: "MultiCamToolTests.threeMovies") else { return }
        let folder = try directory("three")
        let result = try avcapture(["record", "cam-%c.mov"] + cameras + ["--duration", "2"], in: folder)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.error.contains("Recording 3 cameras"), "\(result.error)")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(names == ["cam-1.mov", "cam-2.mov", "cam-3.mov"])
        for name in names {
            let url = folder.appendingPathComponent(name)
            #expect(result.outputText.contains("Wrote \(url.path)"), "\(result.outputText)")
            let probe = try FFprobeReport(url)
            let video = try #require(probe.stream("video"))
            #expect(video["width"] as? Int == 640 && video["height"] as? Int == 480)
            #expect(probe.stream("audio") != nil, "\(name) has the microphone")
            #expect(try ffmpegDecodeErrors(url).isEmpty, "\(name) decodes on its own")
            let indices = try decodedFrameIndices(url).compactMap { $0 }
            // Each file is its own camera's frames, in order (a loaded machine may skip some in real time).
            #expect(indices.count >= 30 && zip(indices, indices.dropFirst()).allSatisfy { $0 < $1 }, "\(name)")
        }
    }

    @Test("a camera unplugged mid-recording ends its own file; the others go on; all finalized, exit status 69")
    func unpluggedCamera() throws {
        guard MediaTool.available(for: "MultiCamToolTests.unpluggedCamera") else { return }
        let folder = try directory("unplug")
        var environment = ProcessInfo.processInfo.environment
        // The webcam goes 1 s after it starts and stays away longer than the recording.
        environment["OPENAV_VIRTUAL_UNPLUG"] = "virtual:usb-webcam:1:60"
        let result = try avcapture(
            ["record", "cam-%c.mov"] + cameras + ["--duration", "3"], in: folder, environment: environment)
        #expect(result.status == 69, "\(result.status): \(result.error)")
        #expect(result.outputText.contains("stopped: Virtual USB Webcam was disconnected"), "\(result.outputText)")
        #expect(result.outputText.components(separatedBy: "stopped: reached --duration").count == 3, "\(result.outputText)")
        var lengths: [Double] = []
        for number in 1...3 {
            let url = folder.appendingPathComponent("cam-\(number).mov")
            #expect(try ffmpegDecodeErrors(url).isEmpty, "cam-\(number).mov decodes on its own")
            let video = try #require(try FFprobeReport(url).stream("video"))
            lengths.append(try #require(FFprobeReport.number(video["duration"])))
        }
        #expect(lengths[0] > 2.5 && lengths[1] > 2.5, "\(lengths)")
        #expect(lengths[2] > 0.5 && lengths[2] < 2, "\(lengths)")
    }

    @Test("bad input: the same camera twice, no %c, --preset; nothing is written")
    func badInput() throws {
        let folder = try directory("bad")
        let twice = try avcapture(["record", "cam-%c.mov", "--video", "back", "--video", "0", "--duration", "1"], in: folder)
        #expect(twice.status == 64, "\(twice.status): \(twice.error)")
        #expect(twice.error.contains("named twice"), "\(twice.error)")
        let unnamed = try avcapture(["record", "cams.mov", "--video", "back", "--video", "front"], in: folder)
        #expect(unnamed.status == 64 && unnamed.error.contains("%c"), "\(unnamed.error)")
        let preset = try avcapture(
            ["record", "cam-%c.mov", "--video", "back", "--video", "front", "--preset", "vga640x480"], in: folder)
        #expect(preset.status == 64 && preset.error.contains("--preset"), "\(preset.error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }
}
