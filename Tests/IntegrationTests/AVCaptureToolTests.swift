// The avcapture binary end to end on the virtual devices: every command, its files read by ffprobe, ffmpeg and
// exiftool, Ctrl-C in the middle of a recording, and every bad-input case with its exit status.

import Foundation
import Testing
import TestSupport

/// The built avcapture binary, beside the test bundle (`swift build --build-tests` builds both).
let toolPath: String? = {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let candidates = [
        executable.deletingLastPathComponent().appendingPathComponent("avcapture").path,
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("avcapture").path,
    ]
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
}()

/// Runs avcapture on the virtual devices.
private func avcapture(_ arguments: [String]) throws -> ToolResult {
    var environment = ProcessInfo.processInfo.environment
    environment["OPENAV_DEVICES"] = "virtual"
    return try ToolResult.run(executable: toolPath!, arguments, environment: environment)
}

private func toolScratch(_ name: String) throws -> URL { try scratchURL(name, suite: "avcapture-tool") }

/// Runs avcapture in `directory` (for relative paths), through coreutils' `env -C`, with `OPENAV_DEVICES` set to
/// `devices` (nil: unset, as a user has it), in `environment` (the test process's by default).
func avcapture(
    _ arguments: [String], in directory: URL, devices: String? = "virtual",
    environment base: [String: String] = ProcessInfo.processInfo.environment
) throws -> ToolResult {
    var environment = base
    environment["OPENAV_DEVICES"] = devices
    environment["OPENAV_FFMPEG_LOG"] = nil
    return try ToolResult.run(
        executable: "/usr/bin/env", ["-C", directory.path, toolPath!] + arguments, environment: environment)
}

@Suite(
    "avcapture, the command-line tool", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct AVCaptureToolTests {
    @Test("devices --json lists the virtual cameras and microphone, the defaults marked")
    func devices() throws {
        let result = try avcapture(["devices", "--json"])
        #expect(result.status == 0, "\(result.error)")
        let entries = try #require(try JSONSerialization.jsonObject(with: result.output) as? [[String: Any]])
        #expect(
            entries.map { $0["uniqueID"] as? String } == [
                "virtual:back-camera", "virtual:front-camera", "virtual:usb-webcam", "virtual:microphone",
            ])
        #expect(entries.map { $0["isDefault"] as? Bool } == [true, false, false, true])
        #expect(entries.map { $0["index"] as? Int } == [0, 1, 2, 3])
    }

    @Test("formats --json gives the formats with frame rates and the controls with ranges")
    func formats() throws {
        let result = try avcapture(["formats", "back", "--json"])
        #expect(result.status == 0, "\(result.error)")
        let report = try #require(try JSONSerialization.jsonObject(with: result.output) as? [String: Any])
        let formats = try #require(report["formats"] as? [[String: Any]])
        #expect(formats.contains { $0["width"] as? Int == 1920 && ($0["frameRates"] as? [String])?.contains("1-60") == true })
        let controls = try #require(report["controls"] as? [[String: Any]])
        let zoom = try #require(controls.first { $0["name"] as? String == "zoom" })
        #expect(zoom["maximum"] as? String == "16")
    }

    @Test("record writes a movie ffprobe reads with the asked length, tracks and metadata; probe agrees")
    func record() throws {
        guard MediaTool.available(for: "AVCaptureToolTests.record") else { return }
        let url = try toolScratch("record.mov")
        let result = try avcapture([
            "record", url.path, "--duration", "1", "--preset", "320x240", "--metadata", "title=From the tool",
            "--location", "48.8584,2.2945",
        ])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.outputText.contains("stopped: reached --duration"), "\(result.outputText)")
        let report = try FFprobeReport(url)
        #expect(report.stream("video")?["codec_name"] as? String == "h264")
        #expect(report.stream("audio")?["codec_name"] as? String == "aac")
        #expect(report.stream("video")?["width"] as? Int == 320)
        let duration = try #require(FFprobeReport.number(report.format["duration"]))
        #expect(abs(duration - 1) <= 0.05, "\(duration) s")
        #expect(report.tags["com.apple.quicktime.title"] == "From the tool", "\(report.tags)")
        #expect(report.tags["com.apple.quicktime.location.ISO6709"] == "+48.8584+002.2945/", "\(report.tags)")
        // The movie header's creation date is when recording started, as ffmpeg reads it back.
        let created = try #require(report.tags["creation_time"]).replacing(/\.\d+Z$/, with: "Z")
        let creationDate = try #require(ISO8601DateFormatter().date(from: created), "\(created)")
        #expect(abs(creationDate.timeIntervalSinceNow) < 120, "\(created)")
        #expect(try ffmpegDecodeErrors(url).isEmpty)

        let probe = try avcapture(["probe", url.path, "--json"])
        #expect(probe.status == 0, "\(probe.error)")
        let asset = try #require(try JSONSerialization.jsonObject(with: probe.output) as? [String: Any])
        let tracks = try #require(asset["tracks"] as? [[String: Any]])
        #expect(tracks.compactMap { $0["codec"] as? String } == ["H.264", "AAC"])
        #expect((asset["metadata"] as? [String: String])?["mdta/com.apple.quicktime.title"] == "From the tool")
    }

    @Test("Ctrl-C in the middle of a recording leaves a finalized movie that decodes cleanly")
    func interruptedRecording() throws {
        guard MediaTool.available(for: "AVCaptureToolTests.interruptedRecording") else { return }
        let url = try toolScratch("interrupted.mov")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: toolPath!)
        process.arguments = ["record", url.path, "--preset", "320x240"]
        process.environment = ProcessInfo.processInfo.environment.merging(["OPENAV_DEVICES": "virtual"]) { $1 }
        let errorPipe = Pipe()
        let outputPipe = Pipe()
        process.standardError = errorPipe
        process.standardOutput = outputPipe
        try process.run()
        // Status lines ("    1.5 s  30.0 fps …") come twice a second; interrupt once one says a second has passed.
        var seen = ""
        while !seen.contains(/\s[1-9]\.\d s\s/) {
            let chunk = errorPipe.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        // The tool runs without transparent huge pages (see AVCaptureTool.main); a kernel without them has no line.
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        if let line = status.split(separator: "\n").first(where: { $0.hasPrefix("THP_enabled:") }) {
            #expect(line.hasSuffix("0"), "\(line)")
        } else {
            print("AVCaptureToolTests.interruptedRecording: no THP_enabled in /proc/PID/status; not checked")
        }
        process.interrupt()
        let summary = String(decoding: outputPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(seen)")
        #expect(summary.contains("stopped: interrupted (Ctrl-C)"), "\(summary)")
        // The file's size in the status line and the summary, in decimal units.
        #expect(seen.contains(/\s\d+(\.\d)? (kB|MB)\s/), "\(seen)")
        #expect(summary.contains(/, \d+(\.\d)? (kB|MB);/), "\(summary)")
        let report = try FFprobeReport(url)
        let duration = try #require(FFprobeReport.number(report.format["duration"]))
        #expect(duration >= 1, "\(duration) s")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
    }

    @Test("SIGUSR1 pauses and resumes a recording: the paused time is left out of the movie")
    func pauseWithSIGUSR1() throws {
        guard MediaTool.available(for: "AVCaptureToolTests.pauseWithSIGUSR1") else { return }
        let url = try toolScratch("paused.mov")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: toolPath!)
        process.arguments = ["record", url.path, "--preset", "320x240"]
        process.environment = ProcessInfo.processInfo.environment.merging(["OPENAV_DEVICES": "virtual"]) { $1 }
        let errorPipe = Pipe()
        process.standardError = errorPipe
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        var seen = ""
        /// Reads status lines until `condition` holds for what was read since the call began.
        func readUntil(_ condition: (String) -> Bool) {
            var fresh = ""
            while !condition(fresh) {
                let chunk = errorPipe.fileHandleForReading.availableData
                guard !chunk.isEmpty else { return }
                fresh += String(decoding: chunk, as: UTF8.self)
            }
            seen += fresh
        }
        readUntil { $0.contains(/\s1\.\d s\s/) }
        kill(process.processIdentifier, SIGUSR1)
        // Three status lines saying PAUSED: at least a second paused.
        readUntil { $0.components(separatedBy: "PAUSED").count > 3 }
        kill(process.processIdentifier, SIGUSR1)
        readUntil { $0.contains(/\s2\.\d s\s/) && !$0.hasSuffix("PAUSED\n") }
        process.interrupt()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(seen)")
        let duration = try #require(FFprobeReport.number(try FFprobeReport(url).format["duration"]))
        #expect(duration >= 2, "movie \(duration) s: \(seen)")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        // The paused frames are left out (one jump in the frame indices) and the timeline has no gap for them.
        let indices = try decodedFrameIndices(url)
        let steps = indexSteps(indices)
        #expect(steps.count == 1 && (steps.first?.step ?? 0) > 0, "one jump, at the pause: \(steps)")
        #expect(abs(duration - Double(indices.count) / 30) <= 2.0 / 30, "\(indices.count) frames in \(duration) s")
    }

    @Test("A movie file plays as the camera and microphone (file:PATH): the re-recorded frames keep their indices")
    func movieFileAsDevice() throws {
        guard MediaTool.available(for: "AVCaptureToolTests.movieFileAsDevice") else { return }
        let source = try toolScratch("source.mov")
        let copy = try toolScratch("copy.mov")
        #expect(try avcapture(["record", source.path, "--duration", "2", "--preset", "320x240"]).status == 0)
        let result = try avcapture([
            "record", copy.path, "--video", "file:" + source.path, "--audio", "file:" + source.path, "--duration", "1",
        ])
        #expect(result.status == 0, "\(result.error)")
        let report = try FFprobeReport(copy)
        #expect(report.stream("video")?["width"] as? Int == 320)
        #expect(report.stream("audio") != nil)
        let indices = try decodedFrameIndices(copy)
        #expect(indices.count == 30, "\(indices)")
        #expect(indexSteps(indices).isEmpty, "\(indices)")
    }

    /// One second of the virtual camera recorded by the tool into `source`, then stream-copied by ffmpeg into
    /// `container` (a file name beside it, whose extension picks the container); returns the copy.
    private func recordedClip(_ source: String, copiedTo container: String) throws -> URL {
        let source = try toolScratch(source)
        #expect(try avcapture(["record", source.path, "--overwrite", "--duration", "1", "--preset", "320x240"]).status == 0)
        let copy = source.deletingLastPathComponent().appendingPathComponent(container)
        let copied = try MediaTool.ffmpeg.run(["-nostdin", "-v", "error", "-y", "-i", source.path, "-c", "copy", copy.path])
        try #require(copied.status == 0, "\(copied.error)")
        return copy
    }

    @Test("record --video file:clip.mp4 (relative) ends with the input: exit 0, 'end of input', every frame kept")
    func movieFileEndOfInput() throws {
        guard MediaTool.available(for: "AVCaptureToolTests.movieFileEndOfInput") else { return }
        let clip = try recordedClip("end-source.mov", copiedTo: "end-clip.mp4")
        let directory = clip.deletingLastPathComponent()
        let sourceIndices = try decodedFrameIndices(clip)

        // Video and sound from the file (the file's sound goes with its picture), then video only.
        for (name, extra) in [("end-both.mov", [String]()), ("end-video.mov", ["--audio", "none"])] {
            let result = try avcapture(["record", name, "--overwrite", "--video", "file:end-clip.mp4"] + extra, in: directory)
            #expect(result.status == 0, "\(name): \(result.error)")
            #expect(result.outputText.contains("stopped: end of input"), "\(name): \(result.outputText)")
            let recorded = directory.appendingPathComponent(name)
            #expect(try decodedFrameIndices(recorded) == sourceIndices, "\(name)")
            #expect(try ffmpegDecodeErrors(recorded).isEmpty)
            #expect((try FFprobeReport(recorded).stream("audio") != nil) == extra.isEmpty, "\(name)")
        }
        // --duration longer than the input ends with the input; --loop plays on until --duration.
        let longer = try avcapture(
            ["record", "end-longer.mov", "--overwrite", "--video", "file:end-clip.mp4", "--duration", "5"], in: directory)
        #expect(longer.status == 0 && longer.outputText.contains("stopped: end of input"), "\(longer.outputText) \(longer.error)")
        let looped = try avcapture(
            ["record", "end-loop.mov", "--overwrite", "--video", "file:end-clip.mp4", "--loop", "--duration", "2.5"],
            in: directory)
        #expect(looped.status == 0 && looped.outputText.contains("reached --duration"), "\(looped.outputText) \(looped.error)")
        let loopIndices = try decodedFrameIndices(directory.appendingPathComponent("end-loop.mov"))
        #expect(loopIndices.count == 75, "\(loopIndices.count) frames")
        #expect(Array(loopIndices.prefix(sourceIndices.count)) == sourceIndices)
        #expect(Array(loopIndices.dropFirst(sourceIndices.count).prefix(sourceIndices.count)) == sourceIndices, "the second pass")
    }

    @Test("frames --video file:clip.y4m writes every frame of the file and ends with it")
    func framesFromMovieFile() throws {
        guard MediaTool.available(for: "AVCaptureToolTests.framesFromMovieFile") else { return }
        let source = try toolScratch("frames-source.y4m")
        try testPatternY4M(at: source, rate: 30, frames: 20)
        let copy = try toolScratch("frames-copy.y4m")
        _ = FileManager.default.createFile(atPath: copy.path, contents: nil)
        let handle = try FileHandle(forWritingTo: copy)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: toolPath!)
        process.arguments = ["frames", "--video", "file:" + source.path, "--preset", "320x240"]
        process.environment = ProcessInfo.processInfo.environment.merging(["OPENAV_DEVICES": "virtual"]) { $1 }
        process.standardOutput = handle
        try process.run()
        process.waitUntilExit()
        try handle.close()
        #expect(process.terminationStatus == 0)
        // Frame for frame the same pictures: ffmpeg compares them (PSNR of identical frames is "inf").
        let compared = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-i", copy.path, "-i", source.path, "-lavfi", "psnr=stats_file=-", "-f", "null", "-",
        ])
        let lines = compared.outputText.split(separator: "\n").filter { $0.contains("psnr_avg") }
        #expect(lines.count == 20, "\(compared.outputText) \(compared.error)")
        #expect(lines.allSatisfy { $0.contains("psnr_avg:inf") }, "\(lines.prefix(3))")
    }

    @Test("file: sources that cannot play: a missing file is 66 with the OS's reason, a text file 65, paths as given")
    func movieFileErrors() throws {
        let directory = try toolScratch("errors-dir").deletingLastPathComponent()
        let missing = try avcapture(["record", "x.mov", "--overwrite", "--video", "file:/no/such/file.mov"], in: directory)
        #expect(missing.status == 66, "\(missing.error)")
        #expect(missing.error.contains("/no/such/file.mov") && missing.error.contains("No such file or directory"), "\(missing.error)")
        let relative = try avcapture(["record", "x.mov", "--overwrite", "--video", "file:missing-clip.mov"], in: directory)
        #expect(relative.status == 66 && relative.error.contains("cannot open missing-clip.mov:"), "\(relative.error)")
        try Data("just words\n".utf8).write(to: directory.appendingPathComponent("words.txt"))
        let text = try avcapture(["record", "x.mov", "--overwrite", "--video", "file:words.txt"], in: directory)
        #expect(text.status == 65 && text.error.contains("words.txt is not a media file"), "\(text.error)")
        for result in [missing, relative, text] {
            #expect(result.error.split(separator: "\n").count == 1, "one line: \(result.error)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("x.mov").path))
    }

    @Test("FFmpeg's own log lines reach stderr only with --verbose (a damaged MPEG-TS file)")
    func ffmpegLogOnlyWhenVerbose() throws {
        guard MediaTool.available(for: "AVCaptureToolTests.ffmpegLogOnlyWhenVerbose") else { return }
        let damaged = try recordedClip("damaged-source.mov", copiedTo: "damaged.ts")
        let directory = damaged.deletingLastPathComponent()
        // Garbage over a few stretches of the transport stream: corrupt packets for the demuxer and the decoder.
        var bytes = try Data(contentsOf: damaged)
        for part in 1..<6 {
            let start = bytes.count * part / 7
            bytes.replaceSubrange(start..<(start + 1500), with: Data(repeating: 0x5A, count: 1500))
        }
        try bytes.write(to: damaged)
        let quiet = try avcapture(["record", "damaged-quiet.mov", "--overwrite", "--video", "file:damaged.ts"], in: directory)
        #expect(quiet.status == 0, "\(quiet.error)")
        #expect(!quiet.error.contains(" @ 0x"), "FFmpeg lines without --verbose: \(quiet.error)")
        let verbose = try avcapture(
            ["record", "damaged-verbose.mov", "--overwrite", "--verbose", "--video", "file:damaged.ts"], in: directory)
        #expect(verbose.status == 0, "\(verbose.error)")
        #expect(verbose.error.contains(" @ 0x"), "FFmpeg's lines with --verbose: \(verbose.error)")
    }

    @Test("audio writes the type its extension names")
    func audio() throws {
        guard MediaTool.available(for: "AVCaptureToolTests.audio") else { return }
        let url = try toolScratch("sound.m4a")
        let result = try avcapture(["audio", url.path, "--duration", "0.5", "--audio", "virtual"])
        #expect(result.status == 0, "\(result.error)")
        let report = try FFprobeReport(url)
        #expect(report.streams.count == 1)
        #expect(report.stream("audio")?["codec_name"] as? String == "aac")
    }

    @Test("photo writes a JPEG whose EXIF exiftool reads: camera, flash fired, GPS, size")
    func photo() throws {
        guard MediaTool.available([.exiftool], for: "AVCaptureToolTests.photo") else { return }
        let url = try toolScratch("still.jpg")
        let result = try avcapture(["photo", url.path, "--flash", "on", "--location", "-33.8568,151.2153"])
        #expect(result.status == 0, "\(result.error)")
        let exif = try MediaTool.exiftool.run(["-j", "-n", "-Make", "-Model", "-Flash", "-GPSLatitude", "-GPSLongitude", "-ImageWidth", url.path])
        let tags = try #require((try JSONSerialization.jsonObject(with: exif.output) as? [[String: Any]])?.first)
        #expect(tags["Model"] as? String == "Virtual Back Camera")
        #expect((tags["Flash"] as? Int).map { $0 & 1 } == 1, "\(tags)")
        #expect(abs((tags["GPSLatitude"] as? Double ?? 0) + 33.8568) < 1e-3, "\(tags)")
        #expect(tags["ImageWidth"] as? Int == 4032)
    }

    @Test("frames writes y4m that ffmpeg decodes, frame for frame")
    func frames() throws {
        guard MediaTool.available(for: "AVCaptureToolTests.frames") else { return }
        let url = try toolScratch("frames.y4m")
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: toolPath!)
        process.arguments = ["frames", "--count", "15", "--preset", "320x240"]
        process.environment = ProcessInfo.processInfo.environment.merging(["OPENAV_DEVICES": "virtual"]) { $1 }
        process.standardOutput = handle
        try process.run()
        process.waitUntilExit()
        try handle.close()
        #expect(process.terminationStatus == 0)
        let probe = try MediaTool.ffprobe.run([
            "-v", "error", "-count_frames", "-show_entries", "stream=width,height,nb_read_frames", "-of", "csv=p=0",
            url.path,
        ])
        #expect(probe.outputText.trimmingCharacters(in: .whitespacesAndNewlines) == "320,240,15", "\(probe.error)")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
    }

    @Test("levels prints the microphone's level in dBFS")
    func levels() throws {
        let result = try avcapture(["levels", "--duration", "1.1"])
        #expect(result.status == 0, "\(result.error)")
        // The virtual microphone's 440 Hz tone at −30 dBFS peak averages about −33 dBFS (RMS of a sine: −3 dB).
        let levels = result.outputText.matches(of: /ch1 +(-?\d+\.\d) dBFS/).compactMap { Double($0.1) }
        #expect(levels.contains { abs($0 + 33) < 1.5 }, "\(result.outputText)")
    }

    // MARK: Bad input: one line, the right status, nothing lost

    /// A file with known bytes that a failing command must leave alone.
    private func existingFile(_ name: String) throws -> (URL, Data) {
        let url = try toolScratch(name)
        let bytes = Data("precious".utf8)
        try bytes.write(to: url)
        return (url, bytes)
    }

    @Test(
        "Each bad input gives one line, its sysexits status, and leaves an existing file byte-identical",
        arguments: [
            (["record", "{file}", "--overwrite", "--video", "no-such-camera"], Int32(69), "available cameras"),
            (["record", "{file}"], 73, "--overwrite"),
            (["record", "{file}", "--overwrite", "--format", "123x45@30"], 64, "cannot stream 123x45"),
            (["record", "{file}", "--overwrite", "--preset", "high", "--format", "640x480@30"], 64, "conflict"),
            (["record", "{file}", "--overwrite", "--video", "none", "--audio", "none"], 64, "nothing to record"),
            (["record", "{file}", "--overwrite", "--audio", "nope"], 69, "available microphones"),
            (["photo", "{file}", "--overwrite", "--video", "front", "--flash", "on"], 64, "no flash"),
        ])
    func badInput(arguments: [String], status: Int32, message: String) throws {
        let isPhoto = arguments.first == "photo"
        let (url, bytes) = try existingFile(isPhoto ? "existing.jpg" : "existing.mov")
        let result = try avcapture(arguments.map { $0 == "{file}" ? url.path : $0 })
        #expect(result.status == status, "\(result.error)")
        #expect(result.error.contains(message), "\(result.error)")
        #expect(result.error.split(separator: "\n").count <= 2, "more than one line: \(result.error)")
        #expect(try Data(contentsOf: url) == bytes)
    }

    @Test("Paths that cannot be written, unknown extensions and missing inputs")
    func badPaths() throws {
        let unknown = try avcapture(["record", try toolScratch("clip.avi").path])
        #expect(unknown.status == 64 && unknown.error.contains(".mov"), "\(unknown.error)")
        let noDirectory = try avcapture(["record", "/nonexistent-directory/clip.mov"])
        #expect(noDirectory.status == 73, "\(noDirectory.error)")
        let unwritable = try avcapture(["record", "/proc/clip.mov"])
        #expect(unwritable.status == 73, "\(unwritable.error)")
        let missing = try avcapture(["probe", "/nonexistent-directory/clip.mov"])
        #expect(missing.status == 66, "\(missing.error)")
    }

    @Test("A disk that fills up ends the recording with status 74 and a finalized movie")
    func diskFull() throws {
        guard MediaTool.available(for: "AVCaptureToolTests.diskFull"),
            let disk = SmallFileSystem(megabytes: 8, for: "AVCaptureToolTests.diskFull")
        else { return }
        defer { disk.unmount() }
        // A recording keeps 1 MiB free without --min-free: 300 kB of room, filled in a few seconds by a busy picture.
        try disk.fill(leaving: (1 << 20) + 300_000)
        let room = disk.freeBytes - (1 << 20)
        let path = disk.path + "/full.mov"
        let result = try avcapture([
            "record", path, "--video", "file:" + (try noisyClip()).path, "--audio", "none", "--fragment-interval", "1",
            "--duration", "20",
        ])
        #expect(result.status == 74, "\(result.error)")
        #expect(result.error.contains("disk"), "\(result.error)")
        #expect(result.outputText.contains("Wrote"), "\(result.outputText)")
        #expect(try ffmpegDecodeErrors(URL(fileURLWithPath: path)).isEmpty)
        let size = try #require(fileSize(URL(fileURLWithPath: path)))
        #expect(size <= room && size * 10 >= room * 9, "\(size) B of the \(room) B of room")
    }

    @Test("A camera the encoder cannot keep up with here (3840x2160 at 30 fps on two cores) is said at the start, with what would")
    func encoderThatCannotKeepUpIsSaid() throws {
        guard MediaTool.available(for: "AVCaptureToolTests.encoderThatCannotKeepUpIsSaid") else { return }
        guard ProcessInfo.processInfo.activeProcessorCount <= 3 else {
            print("skipped: \(ProcessInfo.processInfo.activeProcessorCount) cores keep up with 3840x2160 at 30 fps")
            return
        }
        let clip = try toolScratch("uhd.mov")
        if !FileManager.default.fileExists(atPath: clip.path) {
            let made = try MediaTool.ffmpeg.run([
                "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=3840x2160:rate=30", "-t", "0.5", "-c:v",
                "mjpeg", "-q:v", "8", "-pix_fmt", "yuvj422p", clip.path,
            ])
            try #require(made.status == 0, "ffmpeg: \(made.error)")
        }
        let movie = try toolScratch("uhd-recorded.mov")
        try? FileManager.default.removeItem(at: movie)
        let result = try avcapture(["record", movie.path, "--video", "file:" + clip.path, "--audio", "none"])
        #expect(result.status == 0, "\(result.error)")
        let warning = result.error.split(separator: "\n").first { $0.hasPrefix("warning: ") }.map(String.init)
        #expect(warning?.contains("3840x2160 at 30 fps needs about") == true, "\(result.error)")
        #expect(warning?.contains("at 1920x1080") == true, "\(String(describing: warning))")
        #expect(try ffmpegDecodeErrors(movie).isEmpty)
    }

    @Test("--overwrite replaces an existing file only once the new one is finished")
    func overwrite() throws {
        guard MediaTool.available(for: "AVCaptureToolTests.overwrite") else { return }
        let (url, _) = try existingFile("replaced.mov")
        let result = try avcapture(["record", url.path, "--overwrite", "--duration", "0.5", "--preset", "320x240"])
        #expect(result.status == 0, "\(result.error)")
        #expect(try FFprobeReport(url).stream("video") != nil)
        let siblings = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
        #expect(!siblings.contains { $0.contains(".partial-") }, "\(siblings)")
    }

    @Test("--help documents the exit statuses, and shell completion scripts are generated")
    func helpAndCompletion() throws {
        let help = try avcapture(["--help"])
        #expect(help.status == 0)
        for status in ["64", "66", "69", "73", "74"] { #expect(help.outputText.contains(status), "\(help.outputText)") }
        for shell in ["bash", "zsh", "fish"] {
            let script = try avcapture(["--generate-completion-script", shell])
            #expect(script.status == 0)
            #expect(script.outputText.contains("avcapture") && script.outputText.contains("record"))
        }
    }

    @Test("export --slow-motion: passthrough keeps all 480 frames over 9 s; --frame-rate 30 gives 270 frames")
    func exportSlowMotion() async throws {
        guard MediaTool.available(for: "AVCaptureToolTests.exportSlowMotion") else { return }
        let source = try await ReaderMovies.shared.movie(frameRate: 240)
        let copy = try toolScratch("slow-copy.mov")
        let copied = try avcapture(["export", source.path, copy.path, "--slow-motion", "0.5-1.5:8"])
        #expect(copied.status == 0, "\(copied.error)")
        #expect(copied.outputText.contains("9.000 s"), "\(copied.outputText)")
        let copiedFrames = try decodedFrames(copy)
        #expect(copiedFrames.map(\.marker) == expectedMarkers(0..<480, frameRate: 240).map(Optional.some))

        let constant = try toolScratch("slow-30.mp4")
        let encoded = try avcapture([
            "export", source.path, constant.path, "--preset", "640x480", "--frame-rate", "30", "--slow-motion",
            "0.5-1.5:8",
        ])
        #expect(encoded.status == 0, "\(encoded.error)")
        let video = try #require(try FFprobeReport(constant).stream("video"))
        #expect(video["avg_frame_rate"] as? String == "30/1")
        #expect(try decodedFrames(constant).count == 270)

        let refused = try avcapture(["export", source.path, constant.path])
        #expect(refused.status == 73, "an existing output is refused: \(refused.error)")
        let backwards = try avcapture([
            "export", source.path, try toolScratch("x.mov").path, "--slow-motion", "1-0.5:8",
        ])
        #expect(backwards.status == 64 && backwards.error.contains("START-END:FACTOR"), "\(backwards.error)")
        let passthroughRate = try avcapture([
            "export", source.path, try toolScratch("y.mov").path, "--frame-rate", "30",
        ])
        #expect(passthroughRate.status == 64, "\(passthroughRate.error)")
    }
}
