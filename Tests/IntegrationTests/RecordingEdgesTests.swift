// Nothing lost at the edges of a recording, proven without tolerance on a movie file source.
//
// The rule (Apple's, ours): a recording begins with the first buffers that arrive after `startRecording`; for a
// file source asked to record before the session runs, that is the file's first frame and first sample. It ends
// with the last buffers before its end: the end of the input (every frame and sample), `maxRecordedDuration` (the
// limit, to the sample), a stop, a pause (resumed later) and a file switch (the old file gets everything before the
// new file's first video frame, the new one everything from it on). The source's audio is noise, so every sample
// is its own witness; its frames carry their index (the virtual camera's code), so every frame is too.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing
import TestSupport

/// A source movie: the virtual camera's frames 0..<`frames` at 30 fps (H.264, 320x240) and as long of 48 kHz mono
/// noise stored as 16-bit PCM, so the samples a recording gets are the source's own, bit for bit.
struct EdgeSource {
    static let sampleRate = 48_000
    let url: URL
    let frames: Int
    /// The source's samples, as ffmpeg decodes them.
    let samples: [Int16]

    static func make(_ name: String, frames: Int) async throws -> EdgeSource {
        let video = try writerScratchURL("\(name)-video.mov")
        try await writeMovie(
            to: video, MovieRecipe(fileType: .mov, frames: frames, width: 320, height: 240, audioFormat: nil))
        let url = try writerScratchURL("\(name).mov")
        let seconds = String(Double(frames) / 30)
        let made = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-y", "-i", video.path, "-f", "lavfi", "-i",
            "anoisesrc=color=white:amplitude=0.5:seed=22:sample_rate=\(sampleRate)", "-map", "0:v", "-map", "1:a",
            "-c:v", "copy", "-c:a", "pcm_s16le", "-ac", "1", "-t", seconds, url.path,
        ])
        try #require(made.status == 0, "ffmpeg: \(made.error)")
        return EdgeSource(url: url, frames: frames, samples: try decodedSamples(url))
    }
}

/// The first audio track of `url` decoded by ffmpeg (edit lists honoured) as 16-bit mono samples.
func decodedSamples(_ url: URL) throws -> [Int16] {
    let result = try MediaTool.ffmpeg.run(
        ["-nostdin", "-v", "error", "-i", url.path, "-map", "0:a:0", "-f", "s16le", "-ac", "1", "-"])
    try #require(result.status == 0, "ffmpeg \(url.lastPathComponent): \(result.error)")
    return result.output.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
}

/// Where `piece` sits in `source` as an exact copy, or nil: the first sample decides, the rest must agree.
func exactOffset(of piece: ArraySlice<Int16>, in source: [Int16]) -> Int? {
    guard let first = piece.first, piece.count <= source.count else { return nil }
    var start = 0
    while let found = source[start...].firstIndex(of: first) {
        let end = found + piece.count
        if end <= source.count, source[found..<end].elementsEqual(piece) { return found }
        start = found + 1
        if start >= source.count { break }
    }
    return nil
}

/// The length of the longest prefix of `recorded` equal to `source` from `start` on.
func matchingRun(_ recorded: ArraySlice<Int16>, _ source: [Int16], from start: Int) -> Int {
    var count = 0
    for (sample, original) in zip(recorded, source[start...]) {
        guard sample == original else { break }
        count += 1
    }
    return count
}

/// A movie (file) output recording `source`'s camera and microphone, asked to record before the session runs.
final class EdgeRecording {
    let session: AVCaptureSession
    let output: AVCaptureMovieFileOutput
    let devices: MovieFileDevice

    init(_ source: EdgeSource, pcm: Bool, clock: VirtualDeviceClockMode = .realTime) throws {
        devices = try MovieFileDevice(url: source.url, clock: clock)
        output = AVCaptureMovieFileOutput()
        session = try makeSession(
            preset: .inputPriority, devices: [try #require(devices.camera), try #require(devices.microphone)],
            outputs: [output])
        if pcm, let audio = output.connection(with: .audio) {
            output.setOutputSettings(
                [AVFormatIDKey: kAudioFormatLinearPCM, AVLinearPCMBitDepthKey: 16, AVNumberOfChannelsKey: 1],
                for: audio)
        }
    }

    /// Starts recording into `url` (and the session, the first time).
    func start(_ url: URL, _ delegate: MovieRecordingDelegate) {
        try? FileManager.default.removeItem(at: url)
        output.startRecording(to: url, recordingDelegate: delegate)
        if !session.isRunning { session.startRunning() }
    }

    /// Records into scratch file `name` until the recording ends by itself (the end of the input, a limit), then
    /// stops the session.
    func recordUntilItEnds(into name: String) throws -> (url: URL, delegate: MovieRecordingDelegate) {
        let url = try scratchURL(name, suite: "edges-tests")
        let delegate = MovieRecordingDelegate()
        start(url, delegate)
        #expect(delegate.waitForFinish(timeout: 20), "didFinish never came")
        session.stopRunning()
        return (url, delegate)
    }

    /// Waits (polling the output, at most `timeout` s) until it has recorded `seconds`.
    func waitUntilRecorded(_ seconds: Double, timeout: Double = 10) -> Bool {
        waitUntil(timeout: timeout, every: 0.005) { output.recordedDuration.seconds >= seconds }
    }
}

/// Frame positions of a recording: the decoded frames' indices, flash frames (every whole second, no code) placed
/// by their neighbours. Returns the indices in file order, or records an issue when they are not consecutive.
func consecutiveFrames(_ url: URL, _ label: String) throws -> Range<Int>? {
    let indices = try decodedFrameIndices(url)
    guard let firstKnown = indices.firstIndex(where: { $0 != nil }) else {
        Issue.record("\(label): no readable frame in \(indices.count)")
        return nil
    }
    let steps = indexSteps(indices)
    #expect(steps.isEmpty, "\(label): the frame indices jump: \(steps) in \(indices)")
    let first = Int(indices[firstKnown]!) - firstKnown
    return first..<(first + indices.count)
}

@Suite("The edges of a recording: every frame and sample from a file source, exactly", .serialized)
struct RecordingEdgesTests {
    @Test("To the end of the input, into WAV, AIFF and CAF: the source sample for sample, first and last included",
          arguments: [("wav", AVFileType.wav), ("aiff", .aiff), ("caf", .caf)])
    func audioFileToTheEnd(fileExtension: String, fileType: AVFileType) async throws {
        guard MediaTool.available(for: "RecordingEdgesTests.audioFileToTheEnd") else { return }
        let source = try await EdgeSource.make("edge-audio-\(fileExtension)", frames: 45)
        let devices = try MovieFileDevice(url: source.url)
        let output = AVCaptureAudioFileOutput()
        let session = try makeSession(devices: [try #require(devices.microphone)], outputs: [output])
        let url = try scratchURL("edge-to-end.\(fileExtension)", suite: "edges-tests")
        try? FileManager.default.removeItem(at: url)
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, outputFileType: fileType, recordingDelegate: delegate)
        session.startRunning()
        #expect(delegate.waitForFinish(), "didFinish never came")
        session.stopRunning()
        #expect(delegate.avError?.code == .deviceWasDisconnected, "\(String(describing: delegate.error))")
        let recorded = try decodedSamples(url)
        #expect(recorded.count == source.samples.count, "\(recorded.count) of \(source.samples.count) samples")
        let agreeing = matchingRun(recorded[...], source.samples, from: 0)
        #expect(agreeing == recorded.count && recorded.count == source.samples.count, "the first \(agreeing) agree")
    }

    @Test("To the end of the input, a movie with LPCM: every frame index once and every sample, first and last")
    func movieToTheEnd() async throws {
        guard MediaTool.available(for: "RecordingEdgesTests.movieToTheEnd") else { return }
        let source = try await EdgeSource.make("edge-movie", frames: 45)
        let recording = try EdgeRecording(source, pcm: true)
        let (url, delegate) = try recording.recordUntilItEnds(into: "edge-movie-to-end.mov")
        #expect(delegate.avError?.code == .deviceWasDisconnected, "\(String(describing: delegate.error))")
        #expect(try FFprobeReport(url).stream("audio")?["codec_name"] as? String == "pcm_s16le")
        #expect(try consecutiveFrames(url, "movie") == 0..<source.frames)
        let recorded = try decodedSamples(url)
        #expect(recorded.count == source.samples.count, "\(recorded.count) of \(source.samples.count) samples")
        let agreeing = matchingRun(recorded[...], source.samples, from: 0)
        #expect(agreeing == source.samples.count, "the first \(agreeing) samples agree")
    }

    @Test("AAC's encoder delay is signalled (an edit list): decoded, the audio lines up with the source to the sample")
    func aacLinesUp() async throws {
        guard MediaTool.available(for: "RecordingEdgesTests.aacLinesUp") else { return }
        let source = try await EdgeSource.make("edge-aac", frames: 45)
        let recording = try EdgeRecording(source, pcm: false)
        let (url, _) = try recording.recordUntilItEnds(into: "edge-aac.mov")
        #expect(try FFprobeReport(url).stream("audio")?["codec_name"] as? String == "aac")
        #expect(try consecutiveFrames(url, "AAC movie") == 0..<source.frames)
        let decoded = try decodedSamples(url).map(Double.init)
        let original = source.samples.map(Double.init)
        try #require(decoded.count >= 4096, "\(decoded.count) samples")
        // The lag that best lines the decoded audio up with the source, over ±2048 samples on its first 0.5 s.
        let window = min(24_000, decoded.count - 2048, original.count - 2048)
        func correlation(_ lag: Int) -> Double {
            var sum = 0.0
            for i in 2048..<window { sum += decoded[i] * original[i + lag] }
            return sum
        }
        let best = (-2048...2048).max { correlation($0) < correlation($1) }
        #expect(best == 0, "the decoded audio is \(String(describing: best)) samples off the source")
        // The first AAC frame carries the source's first 1024 samples: not silence.
        func rms(_ values: ArraySlice<Double>) -> Double {
            (values.reduce(0) { $0 + $1 * $1 } / Double(values.count)).squareRoot()
        }
        let ratio = rms(decoded[0..<1024]) / rms(original[0..<1024])
        #expect(ratio > 0.7 && ratio < 1.3, "the first 1024 samples are at \(ratio) of the source's level")
        #expect(abs(decoded.count - original.count) < 1024, "\(decoded.count) samples of \(original.count)")
    }

    @Test("maxRecordedDuration: the first second's 30 frames and 48,000 samples, not one more")
    func durationLimit() async throws {
        guard MediaTool.available(for: "RecordingEdgesTests.durationLimit") else { return }
        let source = try await EdgeSource.make("edge-limit", frames: 60)
        let recording = try EdgeRecording(source, pcm: true)
        recording.output.maxRecordedDuration = CMTime(value: 1, timescale: 1)
        let (url, delegate) = try recording.recordUntilItEnds(into: "edge-limit.mov")
        #expect(delegate.avError?.code == .maximumDurationReached, "\(String(describing: delegate.error))")
        #expect(try consecutiveFrames(url, "limit") == 0..<30)
        let recorded = try decodedSamples(url)
        #expect(recorded.count == EdgeSource.sampleRate, "\(recorded.count) samples")
        let agreeing = matchingRun(recorded[...], source.samples, from: 0)
        #expect(agreeing >= EdgeSource.sampleRate, "the first \(agreeing) samples are the source's")
    }

    @Test("A stop in the middle: the frames from the first on, the samples from the first on, ending together")
    func stopInTheMiddle() async throws {
        guard MediaTool.available(for: "RecordingEdgesTests.stopInTheMiddle") else { return }
        let source = try await EdgeSource.make("edge-stop", frames: 90)
        // Stepped a frame at a time, each handled before the next: the sound up to the last frame's end comes
        // before the picture runs the drain's backstop past the edge, however loaded the machine is.
        let clock = VirtualDeviceClock()
        let recording = try EdgeRecording(source, pcm: true, clock: .manual(clock))
        let url = try scratchURL("edge-stop.mov", suite: "edges-tests")
        let delegate = MovieRecordingDelegate()
        recording.start(url, delegate)
        let frame = CMTime(value: 1, timescale: 30)
        #expect(clock.advance(by: CMTime(value: 36, timescale: 30), step: frame, settling: [recording.output]))
        recording.output.stopRecording()
        // The source plays on until the file has its sound up to the last frame's end.
        for _ in 0..<30 where !delegate.events.contains("didFinish") {
            #expect(clock.advance(by: frame, step: frame, settling: [recording.output]))
        }
        #expect(delegate.waitForFinish(), "didFinish never came")
        recording.session.stopRunning()
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        let frames = try #require(try consecutiveFrames(url, "stopped"))
        #expect(frames.lowerBound == 0 && frames.count < source.frames, "\(frames)")
        let recorded = try decodedSamples(url)
        #expect(matchingRun(recorded[...], source.samples, from: 0) == recorded.count, "not the source's first samples")
        expectEndsTogether(samples: recorded.count, frames: frames.upperBound, "stopped")
    }

    @Test("Pause and resume: what was recorded is the source's two runs, each exact, the paused stretch left out")
    func pauseAndResume() async throws {
        guard MediaTool.available(for: "RecordingEdgesTests.pauseAndResume") else { return }
        let source = try await EdgeSource.make("edge-pause", frames: 90)
        // Stepped a frame at a time, each step handled before the next, so the pause and the resume fall between
        // two known frames however loaded the machine is.
        let clock = VirtualDeviceClock()
        let recording = try EdgeRecording(source, pcm: true, clock: .manual(clock))
        let url = try scratchURL("edge-pause.mov", suite: "edges-tests")
        let delegate = MovieRecordingDelegate()
        recording.start(url, delegate)
        let frame = CMTime(value: 1, timescale: 30)
        #expect(clock.advance(by: CMTime(value: 24, timescale: 30), step: frame, settling: [recording.output]))
        recording.output.pauseRecording()
        // The source plays on, paused: half a second of it is left out.
        #expect(clock.advance(by: CMTime(value: 15, timescale: 30), step: frame, settling: [recording.output]))
        recording.output.resumeRecording()
        // To the end of the source, and past it: the recording ends with its input.
        #expect(clock.advance(by: CMTime(value: 60, timescale: 30), step: frame, settling: [recording.output]))
        #expect(delegate.waitForFinish(timeout: 20), "didFinish never came")
        recording.session.stopRunning()
        #expect(delegate.events.contains("didPause") && delegate.events.contains("didResume"), "\(delegate.events)")

        let indices = try decodedFrameIndices(url)
        let known = indices.enumerated().compactMap { position, index in index.map { (position, Int($0)) } }
        let jumps = indexSteps(indices)
        #expect(jumps.count == 1, "one jump (the pause) expected: \(jumps) in \(indices)")
        let frameJump = try #require(jumps.first)
        // Frames: 0..<a, then b..<end, each once.
        let afterPause = try #require(known.first { $0.0 >= frameJump.position })
        let resumedAt = afterPause.1 - (afterPause.0 - frameJump.position)
        #expect(Int(known.first!.1) - known.first!.0 == 0, "the first frame is not the source's first")
        #expect(afterPause.1 + (indices.count - afterPause.0) == source.frames, "the last frame is not the source's")
        let recorded = try decodedSamples(url)
        let firstRun = matchingRun(recorded[...], source.samples, from: 0)
        let secondRun = recorded[firstRun...]
        let resumedSample = try #require(
            exactOffset(of: secondRun, in: source.samples), "the audio after the pause is not a run of the source's")
        #expect(resumedSample + secondRun.count == source.samples.count, "the audio does not end with the source's")
        expectEndsTogether(samples: firstRun, frames: frameJump.position, "paused")
        expectEndsTogether(samples: resumedSample, frames: resumedAt, "resumed")
    }

    @Test("Switching files: the two files hold every frame and every sample once, the second starting where the first ends")
    func fileSwitch() async throws {
        guard MediaTool.available(for: "RecordingEdgesTests.fileSwitch") else { return }
        let source = try await EdgeSource.make("edge-switch", frames: 90)
        let recording = try EdgeRecording(source, pcm: true)
        let first = try scratchURL("edge-switch-1.mov", suite: "edges-tests")
        let second = try scratchURL("edge-switch-2.mov", suite: "edges-tests")
        let firstDelegate = MovieRecordingDelegate()
        let secondDelegate = MovieRecordingDelegate()
        recording.start(first, firstDelegate)
        #expect(recording.waitUntilRecorded(1.1))
        recording.start(second, secondDelegate)
        #expect(firstDelegate.waitForFinish(), "the first file never finished")
        #expect(secondDelegate.waitForFinish(timeout: 20), "the second file never finished")
        recording.session.stopRunning()
        #expect(firstDelegate.error == nil, "\(String(describing: firstDelegate.error))")

        let firstFrames = try #require(try consecutiveFrames(first, "first file"))
        let secondFrames = try #require(try consecutiveFrames(second, "second file"))
        #expect(firstFrames.lowerBound == 0, "\(firstFrames)")
        #expect(secondFrames.lowerBound == firstFrames.upperBound, "\(firstFrames) then \(secondFrames)")
        #expect(secondFrames.upperBound == source.frames, "\(secondFrames)")
        let firstSamples = try decodedSamples(first)
        let secondSamples = try decodedSamples(second)
        let together = firstSamples + secondSamples
        let agreeing = matchingRun(together[...], source.samples, from: 0)
        let statistics = recording.output.recordingStatistics
        #expect(agreeing == source.samples.count && together.count == agreeing,
                "\(firstSamples.count) + \(secondSamples.count) samples of \(source.samples.count); \(statistics)")
        expectEndsTogether(samples: firstSamples.count, frames: firstFrames.upperBound, "switched")
    }
}

@Suite(
    "The edges of a recording through avcapture, as a user runs it", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct RecordingEdgesToolTests {
    @Test("audio --audio file:REL, OPENAV_DEVICES unset: the file's sound from first sample to last; --duration 1 to the sample")
    func audioFromAFile() async throws {
        guard MediaTool.available(for: "RecordingEdgesToolTests.audioFromAFile") else { return }
        let source = try await EdgeSource.make("edge-cli", frames: 45)
        let directory = source.url.deletingLastPathComponent()
        let relative = "file:" + source.url.lastPathComponent + "#audio"
        for (name, extra, count) in [
            ("edge-cli-all.wav", [String](), source.samples.count), ("edge-cli-1s.wav", ["--duration", "1"], 48_000),
        ] {
            let result = try avcapture(["audio", name, "--overwrite", "--audio", relative] + extra, in: directory, devices: nil)
            #expect(result.status == 0, "\(name): \(result.error)")
            let recorded = try decodedSamples(directory.appendingPathComponent(name))
            let agreeing = matchingRun(recorded[...], source.samples, from: 0)
            #expect(recorded.count == count && agreeing == count, "\(name): \(recorded.count) samples, \(agreeing) the source's")
        }
    }
}

/// An audio edge and a video edge in the same place: `samples` (a sample index) within one frame interval of
/// frame index `frames`. Buffers arrive in whole frames and periods, so the edges can differ by less than that.
func expectEndsTogether(samples: Int, frames: Int, _ label: String) {
    let audioSeconds = Double(samples) / Double(EdgeSource.sampleRate)
    let videoSeconds = Double(frames) / 30
    #expect(abs(audioSeconds - videoSeconds) <= 1.0 / 30 + 1e-9,
            "\(label): audio edge at \(audioSeconds) s, video edge at \(videoSeconds) s")
}
