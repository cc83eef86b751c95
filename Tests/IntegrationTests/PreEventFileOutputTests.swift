// The pre-event output (beyond Apple) on a movie file source whose frames carry their index and whose sound is
// silent but for a 440 Hz burst: the level trigger fires at the burst, the file starts at the key frame a pre-roll
// before it, and ffmpeg reads the frames and the burst back where they belong.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Testing
import TestSupport

/// A 30 fps movie of the virtual camera's frames 0..<frames (320x240) with 48 kHz mono PCM: silence, and a 440 Hz
/// tone at 0.8 of full scale from `burst.lowerBound` to `burst.upperBound` seconds.
func burstSource(_ name: String, frames: Int, burst: Range<Double>) async throws -> URL {
    let video = try writerScratchURL("\(name)-video.mov")
    try await writeMovie(
        to: video, MovieRecipe(fileType: .mov, frames: frames, width: 320, height: 240, audioFormat: nil))
    let url = try writerScratchURL("\(name).mov")
    let expression = "if(between(t,\(burst.lowerBound),\(burst.upperBound)),0.8*sin(2*PI*440*t),0)"
    let made = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-y", "-i", video.path, "-f", "lavfi", "-i",
        "aevalsrc=exprs='\(expression)':s=48000", "-map", "0:v", "-map", "1:a", "-c:v", "copy", "-c:a", "pcm_s16le",
        "-t", String(Double(frames) / 30), url.path,
    ])
    try #require(made.status == 0, "ffmpeg: \(made.error)")
    return url
}

@Suite("The pre-event output: the seconds before a trigger, from a bounded ring", .serialized)
struct PreEventFileOutputTests {
    @Test("Level trigger at a burst 3.1 s in, pre-roll 1 s, post-roll 1 s: frames 60… (the key frame at 2 s), the burst 1.1 s in")
    func levelTrigger() async throws {
        guard MediaTool.available(for: "PreEventFileOutputTests.levelTrigger") else { return }
        let source = try await burstSource("pre-event-level", frames: 150, burst: 3.1..<3.3)
        let devices = try MovieFileDevice(url: source)
        let output = AVCapturePreEventFileOutput()
        output.preRollDuration = CMTime(value: 1, timescale: 1)
        output.postRollDuration = CMTime(value: 1, timescale: 1)
        let url = try scratchURL("pre-event-level.mov", suite: "pre-event-tests")
        let delegate = MovieRecordingDelegate()
        output.setAudioLevelTrigger(threshold: -20, fileURL: { url }, recordingDelegate: delegate)
        let session = try makeSession(
            preset: .inputPriority, devices: [try #require(devices.camera), try #require(devices.microphone)],
            outputs: [output])
        session.startRunning()
        #expect(delegate.waitForFinish(timeout: 20), "no file was triggered: \(delegate.events)")
        session.stopRunning()
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        #expect(delegate.events == ["didStart", "willFinish", "didFinish"], "\(delegate.events)")

        let frames = try #require(try consecutiveFrames(url, "event"))
        #expect(frames.lowerBound == 60, "the file starts at frame \(frames.lowerBound), not the key frame at 2 s")
        // The burst ends at 3.3 s; the last loud buffer keeps the file going a second past it.
        #expect((127...128).contains(frames.upperBound - 1), "the file ends at frame \(frames.upperBound - 1)")
        #expect(try firstFrameIsKey(url))
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        let samples = try decodedSamples(url)
        let onset = try #require(samples.firstIndex { abs(Int($0)) > 8000 }, "no burst in the file's sound")
        // 3.1 s in the source is 1.1 s into a file that starts at 2 s: 52,800 samples, within an AAC frame.
        #expect(abs(onset - 52_800) <= 1024, "the burst starts at sample \(onset) of the file")
        #expect(output.largestBufferedBytes <= output.maximumBufferedBytes)
    }

    @Test("API trigger with a 24 kB cap under a 10 s pre-roll: the ring stays within it, the file starts on a key frame")
    func capAndApiTrigger() async throws {
        guard MediaTool.available(for: "PreEventFileOutputTests.capAndApiTrigger") else { return }
        let source = try await burstSource("pre-event-cap", frames: 180, burst: 10..<11)
        // Stepped a frame at a time, each step encoded before the next: the ring sees the source as a machine that
        // keeps up would, however loaded this one is.
        let clock = VirtualDeviceClock()
        let frame = CMTime(value: 1, timescale: 30)
        let devices = try MovieFileDevice(url: source, clock: .manual(clock))
        let output = AVCapturePreEventFileOutput()
        output.maximumBufferedBytes = 24_000
        output.videoBitRate = 1_000_000
        let session = try makeSession(
            preset: .inputPriority, devices: [try #require(devices.camera), try #require(devices.microphone)],
            outputs: [output])
        session.startRunning()
        // The ring fills past its cap: 2.6 s of the source.
        #expect(clock.advance(by: CMTime(value: 78, timescale: 30), step: frame, settling: [output]))
        let url = try scratchURL("pre-event-cap.mov", suite: "pre-event-tests")
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        let heldAtTrigger = output.bufferedDuration.seconds
        // Half a second of the source goes into the file after the trigger.
        #expect(clock.advance(by: CMTime(value: 15, timescale: 30), step: frame, settling: [output]))
        #expect(delegate.waitForStart(), "the trigger did not open a file")
        output.stopRecording()
        // The file ends with the sound up to its last frame: the source plays on until it has.
        for _ in 0..<30 where !delegate.events.contains("didFinish") {
            #expect(clock.advance(by: frame, step: frame, settling: [output]))
        }
        #expect(delegate.waitForFinish(), "didFinish never came")
        session.stopRunning()
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        #expect(output.largestBufferedBytes <= 24_000, "\(output.largestBufferedBytes) bytes held")
        #expect(heldAtTrigger < 9, "\(heldAtTrigger) s held: the cap did not bind")
        let frames = try #require(try consecutiveFrames(url, "capped event"))
        #expect(
            frames.lowerBound % 30 == 0 && frames.lowerBound > 0,
            "starts at frame \(frames.lowerBound) (held \(heldAtTrigger) s, \(output.largestBufferedBytes) bytes at most)")
        #expect(try firstFrameIsKey(url))
    }
}

@Suite(
    "Pre-event recording through avcapture record --pre-roll", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct PreEventToolTests {
    @Test("--pre-roll 1 --post-roll 1 --trigger level:-20 on a file source: one file from the key frame at 2 s")
    func levelTrigger() async throws {
        guard MediaTool.available(for: "PreEventToolTests.levelTrigger") else { return }
        let source = try await burstSource("pre-event-cli", frames: 150, burst: 3.1..<3.3)
        let directory = source.deletingLastPathComponent()
        let folder = directory.appendingPathComponent("events-cli")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let result = try avcapture(
            [
                "record", "events-cli/event-%H%M%S.mov", "--video", "file:" + source.lastPathComponent,
                "--pre-roll", "1", "--post-roll", "1", "--trigger", "level:-20",
            ], in: directory, devices: nil)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.outputText.contains("1 event file written; stopped: end of input"), "\(result.outputText)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        try #require(files.count == 1, "\(files)")
        let url = folder.appendingPathComponent(files[0])
        #expect(files[0].wholeMatch(of: /event-\d{6}\.mov/) != nil, "\(files[0])")
        let frames = try #require(try consecutiveFrames(url, "event"))
        #expect(frames.lowerBound == 60, "the file starts at frame \(frames.lowerBound)")
        #expect(try firstFrameIsKey(url))
    }

    @Test("--trigger signal,stdin: SIGUSR2 opens a file and a second SIGUSR2 ends it, a line opens another, Ctrl-C ends all")
    func signalAndLine() throws {
        guard MediaTool.available(for: "PreEventToolTests.signalAndLine") else { return }
        let folder = try scratchURL("events-signal", suite: "pre-event-tests")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: toolPath!)
        process.arguments = [
            "record", folder.path + "/ev-%H%M%S.mov", "--preset", "320x240", "--pre-roll", "1",
            "--trigger", "signal,stdin",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["OPENAV_DEVICES"] = "virtual"
        process.environment = environment
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        defer { process.killAndReap() }
        // Waits until standard error has said `text` (the tool prints a status line twice a second).
        var said = ""
        func waitFor(_ text: String) -> Bool {
            let deadline = Date().addingTimeInterval(20)
            while !said.contains(text) {
                if Date() > deadline { return false }
                let data = errors.fileHandleForReading.availableData
                if data.isEmpty { return false }
                said += String(decoding: data, as: UTF8.self)
            }
            return true
        }
        // Waits until the tool's status line says the event file holds `seconds` (it prints
        // "RECORDING <file> <seconds> s" twice a second while a file records).
        func waitForRecorded(_ seconds: Double) -> Bool {
            func recorded() -> Double {
                let values = said.components(separatedBy: "RECORDING ").dropFirst().compactMap { part in
                    part.split(separator: " ").dropFirst().first.flatMap { Double($0) }
                }
                return values.last ?? 0
            }
            let deadline = Date().addingTimeInterval(20)
            while recorded() < seconds {
                if Date() > deadline { return false }
                let data = errors.fileHandleForReading.availableData
                if data.isEmpty { return false }
                said += String(decoding: data, as: UTF8.self)
            }
            return true
        }
        try #require(waitFor("memory ring"), "the tool never started: \(said)")
        try #require(waitFor("ring   1."), "the ring never held a second: \(said)")
        kill(process.processIdentifier, SIGUSR2)
        try #require(waitFor("Event: writing"), "SIGUSR2 opened no file: \(said)")
        try #require(waitForRecorded(0.6), "the file never held 0.6 s: \(said)")
        kill(process.processIdentifier, SIGUSR2)
        try #require(waitFor("Event: finished"), "the second SIGUSR2 did not end the file: \(said)")
        said = ""
        input.fileHandleForWriting.write(Data("now\n".utf8))
        try #require(waitFor("Event: writing"), "the line opened no file: \(said)")
        try #require(waitForRecorded(0.6), "the second file never held 0.6 s: \(said)")
        kill(process.processIdentifier, SIGINT)
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: printed, as: UTF8.self)
        #expect(process.terminationStatus == 0, "exit \(process.terminationStatus): \(said)")
        #expect(text.contains("2 event files written; stopped: interrupted (Ctrl-C)"), "\(text)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".mov") }
        #expect(files.count == 2, "\(files)")
        for name in files {
            let url = folder.appendingPathComponent(name)
            #expect(try firstFrameIsKey(url), "\(name) does not start on a key frame")
            #expect(try ffmpegDecodeErrors(url).isEmpty, "\(name) does not decode")
            let frames = try decodedFrameIndices(url)
            #expect(frames.count >= 30, "\(name): \(frames.count) frames")
            #expect(indexSteps(frames).isEmpty, "\(name): the frame indices jump")
        }
    }
}
