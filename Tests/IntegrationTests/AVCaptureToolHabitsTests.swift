// The avcapture binary taking what ffmpeg and v4l2-ctl users type: a camera format by pixel format and by the
// index 'formats' prints, /dev/video* and hw:X,Y as devices, sizes with suffixes, JSON that parses, a word when
// there are no devices, and shell completions that list the choices.

import Foundation
import TestSupport
import Testing

@Suite(
    "avcapture takes what ffmpeg and v4l2-ctl users type", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct AVCaptureToolHabitsTests {
    private func scratch() throws -> URL {
        let directory = try scratchURL("habits", suite: "avcapture-habits")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Records half a second from `camera` with `format` (the --format value and any further options) and
    /// returns the "Recording …" line, which names the camera's size, rate and pixel format.
    private func recordingLine(camera: String, _ options: [String]) throws -> String {
        let directory = try scratch()
        let name = "clip-\(UInt32.random(in: 0...UInt32.max)).mov"
        let result = try avcapture(
            ["record", name, "--video", camera, "--audio", "none", "--duration", "0.5"] + options, in: directory)
        #expect(result.status == 0, "\(options): \(result.error)")
        return result.error.split(separator: "\n").first { $0.hasPrefix("Recording ") }.map(String.init) ?? result.error
    }

    @Test("--format WxH@FPS:PIXFMT picks MJPEG or H.264 where the webcam offers both at that size")
    func pixelFormatSuffix() throws {
        #expect(
            try recordingLine(camera: "usb", ["--format", "1920x1080@30:mjpeg"]).contains("1920x1080 @ 30 fps (mjpeg)"))
        #expect(
            try recordingLine(camera: "usb", ["--format", "1920x1080@30:h264"]).contains("1920x1080 @ 30 fps (h264)"))
        // The FourCC 'formats' prints, and --pixel-format, say the same.
        #expect(
            try recordingLine(camera: "usb", ["--format", "1920x1080@15:avc1"]).contains("1920x1080 @ 15 fps (h264)"))
        let back = try recordingLine(camera: "back", ["--format", "640x480@30", "--pixel-format", "yuyv"])
        #expect(back.contains("640x480 @ 30 fps (yuyv)"), "\(back)")
    }

    @Test("--format N is the format 'formats' numbers N, at its highest rate or the one after @")
    func formatIndex() throws {
        let listing = try avcapture(["formats", "usb", "--json"], in: try scratch())
        #expect(listing.status == 0, "\(listing.error)")
        let report = try #require(try JSONSerialization.jsonObject(with: listing.output) as? [String: Any])
        let formats = try #require(report["formats"] as? [[String: Any]])
        let mjpeg = try #require(
            formats.first { $0["pixelFormat"] as? String == "mjpeg" && $0["width"] as? Int == 1280 }?["index"] as? Int)
        #expect(try recordingLine(camera: "usb", ["--format", "\(mjpeg)"]).contains("1280x720 @ 30 fps (mjpeg)"))
        #expect(try recordingLine(camera: "usb", ["--format", "\(mjpeg)@15"]).contains("1280x720 @ 15 fps (mjpeg)"))
        // The text listing shows the same name beside the FourCC.
        let text = try avcapture(["formats", "usb"], in: try scratch())
        #expect(text.outputText.contains("  \(mjpeg)  jpeg (mjpeg) 1280x720 @ 30, 15 fps"), "\(text.outputText)")
    }

    @Test("frames --camera-format 1280x720@30:mjpeg: the webcam's MJPEG, decoded, written as raw NV12")
    func framesCameraFormat() throws {
        let result = try avcapture(
            ["frames", "--video", "usb", "--camera-format", "1280x720@30:mjpeg", "--format", "nv12", "--count", "2"],
            in: try scratch())
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.count == 2 * 1280 * 720 * 3 / 2, "\(result.output.count) bytes")
    }

    @Test(
        "Formats and devices that are not there: one line naming what there is, and the status",
        arguments: [
            (["--video", "usb", "--format", "99"], Int32(64), "has no format 99"),
            (["--video", "usb", "--format", "1280x720@30:yuyv"], 64, "pixel formats at that size: mjpeg"),
            (["--video", "usb", "--format", "1280x720@60:mjpeg"], 64, "rates at that size"),
            (["--format", "1280x720@30:theora"], 64, "theora"),
            (["--video", "/dev/video99"], 69, "/dev/video99 does not exist; available cameras"),
            (["--video", "/dev/null"], 69, "no camera is /dev/null"),
            (["--audio", "hw:9,0"], 69, "no microphone is hw:9,0; available microphones"),
            (["--audio", "plughw:9,0"], 69, "no microphone is plughw:9,0"),
            (["--bitrate", "lots"], 64, "lots"),
            (["--max-size", "5X"], 64, "5X"),
        ])
    func refusals(options: [String], status: Int32, message: String) throws {
        let result = try avcapture(["record", "refused.mov", "--duration", "0.5"] + options, in: try scratch())
        #expect(result.status == status, "\(options): \(result.error)")
        #expect(result.error.contains(message), "\(options): \(result.error)")
        #expect(result.error.split(separator: "\n").count <= 2, "more than one line: \(result.error)")
    }

    @Test("--max-size 300k is 300 000 bytes: the movie stops within it")
    func sizeSuffix() throws {
        guard MediaTool.available(for: "AVCaptureToolHabitsTests.sizeSuffix") else { return }
        let directory = try scratch()
        let result = try avcapture(
            [
                "record", "limited.mov", "--video", "file:" + (try noisyClip()).path, "--audio", "none", "--max-size",
                "300k",
            ],
            in: directory)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.outputText.contains("stopped: reached --max-size"), "\(result.outputText)")
        let size = try #require(fileSize(directory.appendingPathComponent("limited.mov")))
        #expect(size <= 300_000 && size >= 270_000, "\(size) B")
    }

    @Test("devices --json and formats --json are JSON to Python's json module")
    func jsonParses() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else {
            print("skipped: no /usr/bin/python3")
            return
        }
        let directory = try scratch()
        for arguments in [["devices", "--json"], ["formats", "usb", "--json"], ["formats", "microphone", "--json"]] {
            let result = try avcapture(arguments, in: directory)
            #expect(result.status == 0, "\(arguments): \(result.error)")
            let file = directory.appendingPathComponent("listing.json")
            try result.output.write(to: file)
            let parsed = try ToolResult.run(executable: "/usr/bin/python3", ["-m", "json.tool", file.path])
            #expect(parsed.status == 0, "\(arguments): \(parsed.error)")
        }
    }

    @Test("devices says on stderr when it finds nothing, and how to find something; exit 0 and [] for --json")
    func emptyDevices() throws {
        // OPENAV_DEVICES=real lists this machine's own devices, which a test machine often lacks; with devices
        // present, the note must not appear.
        var environment = ProcessInfo.processInfo.environment
        environment["DISPLAY"] = nil
        environment["WAYLAND_DISPLAY"] = nil
        let directory = try scratch()
        let result = try avcapture(["devices", "--json"], in: directory, devices: "real", environment: environment)
        #expect(result.status == 0, "\(result.error)")
        let entries = try #require(try JSONSerialization.jsonObject(with: result.output) as? [Any])
        let text = try avcapture(["devices"], in: directory, devices: "real", environment: environment)
        #expect(text.status == 0, "\(text.error)")
        if entries.isEmpty {
            #expect(text.outputText.isEmpty, "\(text.outputText)")
            for error in [result.error, text.error] {
                #expect(error.contains("no cameras, microphones or screens found"), "\(error)")
                #expect(error.contains("OPENAV_DEVICES=virtual") && error.contains("video group"), "\(error)")
            }
        } else {
            print("devices: this machine has \(entries.count) real devices; the empty-list note is not shown")
            #expect(!text.error.contains("no cameras, microphones or screens found"), "\(text.error)")
        }
    }

    @Test("Help and the bash completion script list the choices")
    func completions() throws {
        let directory = try scratch()
        let script = try avcapture(["--generate-completion-script", "bash"], in: directory)
        #expect(script.status == 0, "\(script.error)")
        for value in ["landscape-right", "portrait-upside-down", "prores", "mjpeg", "1280x720", "time-domain"] {
            #expect(script.outputText.contains(value), "\(value) is not in the bash completions")
        }
        let help = try avcapture(["record", "--help"], in: directory)
        // Help wraps its lines; the words are what count.
        let words = help.outputText.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("(values: portrait, portrait-upside-down, landscape-left, landscape-right)"), "\(words)")
        #expect(words.contains("(values: mjpeg, yuyv, uyvy, nv12"), "\(words)")
        #expect(words.contains("--screen [<N>]"), "\(words)")
    }
}

@Suite(
    "avcapture records MPEG-1/2 files: a DVB stick's .ts, a camcorder's .mpg", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct AVCaptureToolMPEGSourceTests {
    @Test(
        "record --video file:CLIP writes H.264 and AAC as long as the clip, decoding without an error",
        arguments: [
            ("dvb.ts", ["-c:v", "mpeg2video", "-bf", "2", "-c:a", "mp2"], "mp2v"),
            ("camcorder.mpg", ["-c:v", "mpeg1video", "-c:a", "mp2", "-f", "mpeg"], "mp1v"),
        ])
    func mpegSource(name: String, codec: [String], fourCC: String) throws {
        guard MediaTool.available(for: "AVCaptureToolMPEGSourceTests.mpegSource") else { return }
        let directory = try scratchURL("mpeg-\(name)", suite: "avcapture-habits")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let clip = directory.appendingPathComponent(name)
        let made = try MediaTool.ffmpeg.run(
            [
                "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi",
                "-i", "sine=frequency=440:sample_rate=48000", "-t", "2",
            ] + codec + [clip.path])
        try #require(made.status == 0, "ffmpeg could not make \(name): \(made.error)")

        let formats = try avcapture(["formats", "file:\(name)"], in: directory)
        #expect(formats.status == 0, "\(formats.error)")
        #expect(formats.outputText.contains("\(fourCC) 320x240 @ 25 fps"), "\(formats.outputText)")

        let result = try avcapture(["record", "out.mov", "--video", "file:\(name)"], in: directory)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.outputText.contains("stopped: end of input"), "\(result.outputText)")
        let movie = directory.appendingPathComponent("out.mov")
        let report = try FFprobeReport(movie)
        #expect(report.stream("video")?["codec_name"] as? String == "h264")
        #expect(report.stream("video")?["width"] as? Int == 320)
        #expect(report.stream("audio")?["codec_name"] as? String == "aac", "the MP2 sound comes through")
        let duration = try #require(FFprobeReport.number(report.format["duration"]))
        #expect(abs(duration - 2) <= 0.15, "\(duration) s of a 2 s clip")
        #expect(try ffmpegDecodeErrors(movie).isEmpty)
    }
}
