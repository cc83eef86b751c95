// AVCaptureMovieFileOutput with the virtual back camera and microphone, files checked with ffprobe and ffmpeg.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing
import TestSupport

/// Records the recording delegate's callbacks, in order, and lets a test wait for them.
final class MovieRecordingDelegate: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    private let log = Mutex<[String]>([])
    private let finishError = Mutex<(any Error)?>(nil)
    private let finished = DispatchSemaphore(value: 0)
    private let started = DispatchSemaphore(value: 0)

    var events: [String] { log.withLock { $0 } }
    var error: (any Error)? { finishError.withLock { $0 } }
    var avError: AVError? { error as? AVError }
    var successfullyFinished: Bool? {
        (error as NSError?)?.userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {
        log.withLock { $0.append("didStart") }
        started.signal()
    }
    func fileOutput(
        _ output: AVCaptureFileOutput, didPauseRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {
        log.withLock { $0.append("didPause") }
    }
    func fileOutput(
        _ output: AVCaptureFileOutput, didResumeRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {
        log.withLock { $0.append("didResume") }
    }
    func fileOutput(
        _ output: AVCaptureFileOutput, willFinishRecordingTo fileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        log.withLock { $0.append("willFinish") }
    }
    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        finishError.withLock { $0 = error }
        log.withLock { $0.append("didFinish") }
        finished.signal()
    }

    func waitForStart(timeout: TimeInterval = 10) -> Bool { started.wait(timeout: .now() + timeout) == .success }
    func waitForFinish(timeout: TimeInterval = 15) -> Bool { finished.wait(timeout: .now() + timeout) == .success }
}

/// A running session with the virtual back camera at 320x240 and the microphone feeding `output`.
func makeMovieSession(_ output: AVCaptureMovieFileOutput, audio: Bool = true) throws -> AVCaptureSession {
    try makeSession(
        preset: .qvga320x240,
        devices: audio ? [VirtualDevices.back, VirtualDevices.microphone] : [VirtualDevices.back],
        outputs: [output])
}

/// The frame index of every decoded frame of `url`'s video (nil for flash frames), and the frame size.
func decodedFrameIndices(_ url: URL) throws -> [UInt32?] {
    let probe = try FFprobeReport(url)
    let video = try #require(probe.stream("video"))
    let width = try #require(video["width"] as? Int)
    let height = try #require(video["height"] as? Int)
    let result = try MediaTool.ffmpeg.run(
        [
            "-nostdin", "-v", "error", "-i", url.path, "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "rawvideo",
            "-pix_fmt", "gray", "-",
        ])
    try #require(result.status == 0, "ffmpeg failed: \(result.error)")
    let size = width * height
    let bytes = [UInt8](result.output)
    #expect(bytes.count % size == 0)
    return stride(from: 0, to: bytes.count - size + 1, by: size).map { start in
        VirtualFrameReader.readFrameIndex(fromLuma: Array(bytes[start..<start + size]), width: width, height: height)
    }
}

/// Checks that readable indices go up by one per decoded frame (flash frames, which carry no code, excepted);
/// returns where the step is not one (index position, step) so callers can allow expected gaps.
func indexSteps(_ indices: [UInt32?]) -> [(position: Int, step: Int)] {
    var result: [(Int, Int)] = []
    var last: (position: Int, index: UInt32)?
    for (position, index) in indices.enumerated() {
        guard let index else { continue }
        if let last {
            let step = Int(index) - Int(last.index)
            if step != position - last.position { result.append((position, step - (position - last.position))) }
        }
        last = (position, index)
    }
    return result
}

/// Records with `output` on a running session of the virtual back camera (320x240) and microphone until the
/// recording ends by itself (a limit, a full disk); returns the delegate after `didFinish`, or nil on timeout.
func recordUntilFinished(
    _ output: AVCaptureMovieFileOutput, to url: URL, timeout: TimeInterval = 15
) throws -> MovieRecordingDelegate? {
    let session = try makeMovieSession(output)
    // Stepped a frame at a time, each frame and its sound written before the next: the file holds what a machine
    // that keeps up records, however loaded this one is.
    // Until the recording ends by itself (a limit), at most a minute of the devices' time.
    let delegate = try recordStepping(
        session, output, to: url, devices: [VirtualDevices.back, VirtualDevices.microphone],
        frame: CMTime(value: 1, timescale: 30), limit: 60)
    return delegate.waitForFinish(timeout: timeout) ? delegate : nil
}


func movieScratchURL(_ name: String) throws -> URL {
    let directory = NSTemporaryDirectory() + "moviefileoutput-tests-\(getpid())"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let url = URL(fileURLWithPath: directory + "/" + name)
    try? FileManager.default.removeItem(at: url)
    return url
}

@Suite("AVCaptureMovieFileOutput, recorded from the virtual devices", .serialized)
struct AVCaptureMovieFileOutputTests {
    @Test("The seed's flow: 1 s limit and a location item give a clean 1 s movie with every frame once")
    func maxDurationWithLocation() throws {
        guard MediaTool.available(for: "AVCaptureMovieFileOutputTests.maxDurationWithLocation") else { return }
        let url = try movieScratchURL("limit.mov")
        let output = AVCaptureMovieFileOutput()
        output.maxRecordedDuration = CMTime(value: 1, timescale: 1)
        let location = AVMutableMetadataItem()
        location.identifier = .quickTimeMetadataLocationISO6709
        location.value = NSString(string: writerTestLocation)
        output.metadata = [location]
        #expect(output.availableVideoCodecTypes.first == .h264)
        let session = try makeMovieSession(output)
        session.startRunning()
        defer { session.stopRunning() }
        let video = try #require(output.connection(with: .video))
        #expect(output.outputSettings(for: video)[AVVideoCodecKey] as? AVVideoCodecType == .h264)
        #expect(output.outputSettings(for: video)[AVVideoWidthKey] as? Int == 320)

        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(output.isRecording)
        #expect(output.outputFileURL == url)
        #expect(delegate.waitForFinish(), "didFinish never came")
        #expect(delegate.events == ["didStart", "willFinish", "didFinish"])
        #expect(delegate.avError?.code == .maximumDurationReached, "\(String(describing: delegate.error))")
        #expect(delegate.successfullyFinished == true)
        #expect(!output.isRecording)
        #expect(abs(output.recordedDuration.seconds - 1) <= 1.0 / 30 + 1e-3, "\(output.recordedDuration.seconds)")

        let probe = try FFprobeReport(url)
        let videoStream = try #require(probe.stream("video"))
        #expect(videoStream["codec_name"] as? String == "h264")
        #expect(videoStream["width"] as? Int == 320 && videoStream["height"] as? Int == 240)
        let videoDuration = try #require(FFprobeReport.number(videoStream["duration"]))
        #expect(abs(videoDuration - 1) <= 1.0 / 30 + 1e-3, "video lasts \(videoDuration) s")
        let audioStream = try #require(probe.stream("audio"))
        #expect(audioStream["codec_name"] as? String == "aac")
        let audioDuration = try #require(FFprobeReport.number(audioStream["duration"]))
        #expect(abs(audioDuration - 1) <= 1.0 / 30 + 1024.0 / 48_000 + 1e-3, "audio lasts \(audioDuration) s")
        let tags = probe.tags
        #expect(
            tags["com.apple.quicktime.location.ISO6709"] == writerTestLocation
                || tags["location"] == writerTestLocation,
            "\(tags)")
        #expect(try ffmpegDecodeErrors(url) == "")

        let indices = try decodedFrameIndices(url)
        #expect(indices.count == 30, "\(indices.count) frames")
        #expect(indices.compactMap { $0 }.count >= indices.count - 2, "most frames carry a code")
        let steps = indexSteps(indices)
        #expect(steps.isEmpty, "frames lost or duplicated at \(steps)")
    }

    @Test("An existing file: fileAlreadyExists, the file untouched, didFinish alone")
    func existingFile() throws {
        let url = try movieScratchURL("existing.mov")
        let original = Data("not a movie, keep me".utf8)
        try original.write(to: url)
        let output = AVCaptureMovieFileOutput()
        let session = try makeMovieSession(output)
        session.startRunning()
        defer { session.stopRunning() }
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(delegate.waitForFinish(timeout: 5))
        #expect(delegate.events == ["didFinish"])
        #expect(delegate.avError?.code == .fileAlreadyExists)
        #expect(delegate.successfullyFinished == false)
        #expect(try Data(contentsOf: url) == original)
        #expect(!output.isRecording)
    }

    @Test("Stopping before any sample still calls didFinish (noDataCaptured, no file)")
    func stopBeforeAnySample() throws {
        let url = try movieScratchURL("nothing.mov")
        let output = AVCaptureMovieFileOutput()
        let session = try makeMovieSession(output)  // not running: no sample ever comes
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        output.stopRecording()
        #expect(delegate.waitForFinish(timeout: 5))
        #expect(delegate.events == ["didFinish"])
        #expect(delegate.avError?.code == .noDataCaptured)
        #expect(!FileManager.default.fileExists(atPath: url.path))
        _ = session
    }

    @Test("Pause and resume at chosen frames: callbacks in order, exactly the paused frames left out, no time gap")
    func pauseResume() throws {
        guard MediaTool.available(for: "AVCaptureMovieFileOutputTests.pauseResume") else { return }
        let url = try movieScratchURL("paused.mov")
        let output = AVCaptureMovieFileOutput()
        // Requests made from the sample callback take effect at that frame, so the test decides at which frames
        // the recording starts, pauses, resumes and stops instead of sleeping between them.
        let plan = FramePlan(url: url)
        output.delegate = plan
        let session = try makeMovieSession(output)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(plan.recording.waitForFinish(timeout: 20), "didFinish never came")
        let marks = plan.marks.withLock { $0 }
        let (start, pause, resume, stop) = try #require(marks.all, "the plan did not run: \(marks)")
        #expect(plan.recording.events == ["didStart", "didPause", "didResume", "willFinish", "didFinish"])
        #expect(plan.recording.error == nil, "\(String(describing: plan.recording.error))")

        let indices = try decodedFrameIndices(url)
        #expect(try ffmpegDecodeErrors(url) == "")
        let readable = indices.compactMap { $0 }
        #expect(readable.first == start && readable.last.map { $0 < stop } == true, "\(readable)")
        #expect(!readable.contains { $0 >= pause && $0 < resume }, "a paused frame was recorded")
        let steps = indexSteps(indices)
        #expect(steps.count == 1 && steps.first?.step == Int(resume - pause), "one jump, at the pause: \(steps)")
        // The paused time is left out: the video lasts as many frame times as it has frames.
        let probe = try FFprobeReport(url)
        let videoDuration = try #require(FFprobeReport.number(probe.stream("video")?["duration"]))
        #expect(abs(videoDuration - Double(indices.count) / 30) <= 1.5 / 30, "a gap in the timestamps")
    }

    @Test("A size limit ends with maximumFileSizeReached, the file within it and near it, both tracks ending together")
    func maxFileSize() throws {
        guard MediaTool.available(for: "AVCaptureMovieFileOutputTests.maxFileSize") else { return }
        let url = try movieScratchURL("size.mov")
        let output = AVCaptureMovieFileOutput()
        output.maxRecordedFileSize = 300_000
        // 640x480: the virtual picture's H.264 and AAC reach 300 kB in a few seconds.
        let session = try makeSession(
            preset: .vga640x480, devices: [VirtualDevices.back, VirtualDevices.microphone], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(delegate.waitForFinish(timeout: 60))
        #expect(delegate.avError?.code == .maximumFileSizeReached, "\(String(describing: delegate.error))")
        #expect(delegate.successfullyFinished == true)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        #expect(size <= 300_000 && size >= 270_000, "\(size) bytes")
        #expect(try ffmpegDecodeErrors(url) == "")
        // The writer stops every track at the packet that did not fit: the sound ends with the picture, within
        // one AAC packet and one frame.
        let probe = try FFprobeReport(url)
        let video = try #require(FFprobeReport.number(probe.stream("video")?["duration"]))
        let audio = try #require(FFprobeReport.number(probe.stream("audio")?["duration"]))
        #expect(abs(audio - video) <= 1024.0 / 48_000 + 1.0 / 30 + 1e-3, "video \(video) s, audio \(audio) s")
    }

    @Test("Unplugging the camera ends with deviceWasDisconnected and a playable file")
    func unplug() throws {
        guard MediaTool.available(for: "AVCaptureMovieFileOutputTests.unplug") else { return }
        let url = try movieScratchURL("unplugged.mov")
        let camera = try #require(VirtualDevices.back.virtualCamera)
        let output = AVCaptureMovieFileOutput()
        let session = try makeMovieSession(output)
        session.startRunning()
        defer {
            session.stopRunning()
            camera.restoreDefaults()
        }
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(delegate.waitForStart())
        #expect(waitUntil { output.recordedDuration.seconds >= 0.5 }, "half a second was never recorded")
        camera.unplug()
        #expect(delegate.waitForFinish())
        #expect(delegate.events == ["didStart", "willFinish", "didFinish"])
        #expect(delegate.avError?.code == .deviceWasDisconnected, "\(String(describing: delegate.error))")
        #expect(delegate.successfullyFinished == true)
        #expect(try ffmpegDecodeErrors(url) == "")
        let indices = try decodedFrameIndices(url)
        #expect(indices.count >= 10, "\(indices.count) frames")
        #expect(indexSteps(indices).isEmpty)
    }

    @Test("Stopping the session while recording finishes the file normally (error nil)")
    func sessionStopFinishes() throws {
        guard MediaTool.available(for: "AVCaptureMovieFileOutputTests.sessionStopFinishes") else { return }
        let url = try movieScratchURL("session-stopped.mov")
        let output = AVCaptureMovieFileOutput()
        let session = try makeMovieSession(output)
        session.startRunning()
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(delegate.waitForStart())
        #expect(waitUntil { output.recordedDuration.seconds >= 0.4 }, "0.4 s was never recorded")
        session.stopRunning()
        #expect(delegate.waitForFinish())
        #expect(delegate.events == ["didStart", "willFinish", "didFinish"])
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        #expect(!output.isRecording)
        #expect(try ffmpegDecodeErrors(url) == "")
        #expect(indexSteps(try decodedFrameIndices(url)).isEmpty)
    }

    @Test("Too little free disk space: diskFull before anything is written, didFinish alone")
    func minFreeDiskSpace() throws {
        let url = try movieScratchURL("no-space.mov")
        let output = AVCaptureMovieFileOutput()
        output.minFreeDiskSpaceLimit = Int64.max
        let session = try makeMovieSession(output)
        session.startRunning()
        defer { session.stopRunning() }
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(delegate.waitForFinish(timeout: 5))
        #expect(delegate.events == ["didFinish"])
        #expect(delegate.avError?.code == .diskFull)
        #expect(delegate.successfullyFinished == false)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("Starting a new recording while recording switches files with every frame exactly once")
    func switchFiles() throws {
        guard MediaTool.available(for: "AVCaptureMovieFileOutputTests.switchFiles") else { return }
        let first = try movieScratchURL("first.mov")
        let second = try movieScratchURL("second.mov")
        let output = AVCaptureMovieFileOutput()
        let session = try makeMovieSession(output)
        session.startRunning()
        defer { session.stopRunning() }
        let one = MovieRecordingDelegate()
        let two = MovieRecordingDelegate()
        output.startRecording(to: first, recordingDelegate: one)
        #expect(one.waitForStart())
        #expect(waitUntil { output.recordedDuration.seconds >= 0.8 }, "0.8 s was never recorded")
        output.startRecording(to: second, recordingDelegate: two)
        #expect(one.waitForFinish())
        #expect(output.isRecording && output.outputFileURL == second)
        #expect(waitUntil { output.outputFileURL == second && output.recordedDuration.seconds >= 0.8 })
        output.stopRecording()
        #expect(two.waitForFinish())
        #expect(one.events == ["didStart", "willFinish", "didFinish"] && one.error == nil)
        #expect(two.events == ["didStart", "willFinish", "didFinish"] && two.error == nil)
        #expect(try ffmpegDecodeErrors(first) == "")
        #expect(try ffmpegDecodeErrors(second) == "")
        let indices = try decodedFrameIndices(first) + decodedFrameIndices(second)
        #expect(indices.count > 30)
        #expect(indexSteps(indices).isEmpty, "frames lost or duplicated at the switch: \(indexSteps(indices))")
    }
}

@Suite("A device faster than the encoder", .serialized)
struct FasterThanTheEncoderTests {
    @Test("A free-running microphone: the recording finishes readable and counts the audio it left out")
    func freeRunningMicrophone() throws {
        guard MediaTool.available(for: "FasterThanTheEncoderTests.freeRunningMicrophone") else { return }
        let url = try movieScratchURL("free-running-microphone.mov")
        let microphone = try #require(VirtualDevices.microphone.virtualMicrophone)
        microphone.clockMode = .freeRunning
        defer { microphone.clockMode = .realTime }
        let output = AVCaptureMovieFileOutput()
        let session = try makeMovieSession(output)
        session.startRunning()
        defer { session.stopRunning() }
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(waitUntil(timeout: 30) { output.recordingStatistics.droppedAudioBuffers > 0 }, "no audio was left out")
        output.stopRecording()
        #expect(delegate.waitForFinish(timeout: 30), "didFinish never came")
        #expect(output.recordingStatistics.droppedAudioBuffers > 0)
        let probe = try FFprobeReport(url)
        #expect(probe.stream("video") != nil)
    }
}

/// Starts, pauses, resumes and stops a recording from the file output's sample callback at frames chosen by their
/// index: start at the first readable one, pause 20 frames later, resume 30 after the pause, stop 20 after that.
/// (At the first index at least that far: a loaded machine may drop a frame.)
final class FramePlan: NSObject, AVCaptureFileOutputDelegate, @unchecked Sendable {
    struct Marks: CustomStringConvertible {
        var start, pause, resume, stop: UInt32?
        var all: (UInt32, UInt32, UInt32, UInt32)? {
            guard let start, let pause, let resume, let stop else { return nil }
            return (start, pause, resume, stop)
        }
        var description: String { "\([start, pause, resume, stop])" }
    }

    let url: URL
    let recording = MovieRecordingDelegate()
    let marks = Mutex(Marks())

    init(url: URL) { self.url = url }

    func fileOutputShouldProvideSampleAccurateRecordingStart(_ output: AVCaptureFileOutput) -> Bool { true }

    func fileOutput(
        _ output: AVCaptureOutput, didOutputSampleBuffer sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        guard let image = sampleBuffer.imageBuffer, let fileOutput = output as? AVCaptureMovieFileOutput,
            let index = VirtualFrameReader.readFrameIndex(from: image)
        else { return }
        enum Step { case start, pause, resume, stop, none }
        let step: Step = marks.withLock { marks in
            switch (marks.start, marks.pause, marks.resume, marks.stop) {
            case (nil, _, _, _):
                marks.start = index
                return .start
            case (let start?, nil, _, _) where index >= start + 20:
                marks.pause = index
                return .pause
            case (_, let pause?, nil, _) where index >= pause + 30:
                marks.resume = index
                return .resume
            case (_, _, let resume?, nil) where index >= resume + 20:
                marks.stop = index
                return .stop
            default:
                return .none
            }
        }
        switch step {
        case .start: fileOutput.startRecording(to: url, recordingDelegate: recording)
        case .pause: fileOutput.pauseRecording()
        case .resume: fileOutput.resumeRecording()
        case .stop: fileOutput.stopRecording()
        case .none: break
        }
    }
}
