// A recording that survives an unplugged camera or microphone (AVCaptureMovieFileOutput.survivesDisconnection,
// ours): the virtual devices are unplugged and replugged mid-recording, and the one file is read back with ffprobe
// and ffmpeg: the frame-index codes before and after the gap, the timestamp jump, and A/V sync from flashes and
// beeps on both sides of it.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import TestSupport
import Testing

/// Records the recording and disconnection callbacks, in order, with the gaps the delegate was told of.
final class ReconnectionDelegate: NSObject, AVCaptureFileOutputDisconnectionDelegate, @unchecked Sendable {
    struct Lost {
        let device: String
        let at: CMTime
    }
    struct Regained {
        let device: String
        let gap: CMTimeRange
        /// When the call came, on the host clock (for the reconnection delay).
        let hostTime: CMTime
    }

    private let log = Mutex<[String]>([])
    private let losses = Mutex<[Lost]>([])
    private let returns = Mutex<[Regained]>([])
    private let finishError = Mutex<(any Error)?>(nil)
    private let finished = DispatchSemaphore(value: 0)
    private let started = DispatchSemaphore(value: 0)
    private let lost = DispatchSemaphore(value: 0)
    private let regained = DispatchSemaphore(value: 0)

    var events: [String] { log.withLock { $0 } }
    var lostDevices: [Lost] { losses.withLock { $0 } }
    var regainedDevices: [Regained] { returns.withLock { $0 } }
    var error: (any Error)? { finishError.withLock { $0 } }

    func fileOutput(
        _ output: AVCaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {
        log.withLock { $0.append("didStart") }
        started.signal()
    }
    func fileOutput(
        _ output: AVCaptureFileOutput, recordingTo fileURL: URL, didLoseDevice device: AVCaptureDevice,
        at gapStart: CMTime
    ) {
        log.withLock { $0.append("didLose") }
        losses.withLock { $0.append(Lost(device: device.uniqueID, at: gapStart)) }
        lost.signal()
    }
    func fileOutput(
        _ output: AVCaptureFileOutput, recordingTo fileURL: URL, didRegainDevice device: AVCaptureDevice,
        gap: CMTimeRange
    ) {
        let now = CMClockGetTime(CMClockGetHostTimeClock())
        log.withLock { $0.append("didRegain") }
        returns.withLock { $0.append(Regained(device: device.uniqueID, gap: gap, hostTime: now)) }
        regained.signal()
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

    func waitForStart() -> Bool { started.wait(timeout: .now() + 10) == .success }
    func waitForLoss() -> Bool { lost.wait(timeout: .now() + 10) == .success }
    func waitForReturn() -> Bool { regained.wait(timeout: .now() + 10) == .success }
    func waitForFinish() -> Bool { finished.wait(timeout: .now() + 15) == .success }
}

/// The presentation time (seconds in the file) of every video frame, from ffprobe.
func videoFrameTimes(_ url: URL) throws -> [Double] {
    try MediaTool.ffprobe.run([
        "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time", "-of", "csv=p=0", url.path,
    ]).outputText.split(whereSeparator: \.isNewline).compactMap { line in
        line.split(separator: ",").first.flatMap { Double($0) }
    }
}

/// A stream's duration in seconds, as ffprobe reads it.
func streamDuration(_ url: URL, _ type: String) throws -> Double {
    let probe = try FFprobeReport(url)
    return try #require(FFprobeReport.number(probe.stream(type)?["duration"]), "no \(type) duration")
}

/// A movie recording of the virtual back camera and microphone (320x240), running for at least `seconds` when made;
/// `end()` stops its session and puts back the defaults of the device the test unplugs.
private struct RunningRecording {
    let url: URL
    let output = AVCaptureMovieFileOutput()
    let session: AVCaptureSession
    let delegate = ReconnectionDelegate()
    private let restore: () -> Void

    init(
        _ name: String, survivesDisconnection: Bool = true, limit: CMTime = .invalid, for seconds: Double,
        restoring restore: @escaping () -> Void
    ) throws {
        url = try scratchURL(name, suite: "reconnect")
        output.survivesDisconnection = survivesDisconnection
        output.maxRecordedDuration = limit
        session = try makeMovieSession(output)
        self.restore = restore
        session.startRunning()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(delegate.waitForStart())
        let output = output
        let reached = waitUntil { output.recordedDuration.seconds >= seconds }
        #expect(reached, "\(seconds) s were never recorded")
    }

    func end() {
        session.stopRunning()
        restore()
    }
}

@Suite("Recordings that survive an unplugged device", .serialized)
struct ReconnectingRecordingTests {
    static let frame = 1.0 / 30

    @Test(
        "The camera unplugged and replugged: one file, the frames before and after, a timestamp gap of the outage, sound in sync"
    )
    func cameraComesBack() throws {
        guard MediaTool.available(for: "ReconnectingRecordingTests.cameraComesBack") else { return }
        let url = try scratchURL("camera-gap.mov", suite: "reconnect")
        let camera = try #require(VirtualDevices.back.virtualCamera)
        let output = AVCaptureMovieFileOutput()
        output.survivesDisconnection = true
        // An independent witness of the camera's timestamps: a video data output on the same session.
        let witness = RecordingDelegate()
        let frames = AVCaptureVideoDataOutput()
        frames.setSampleBufferDelegate(witness, queue: DispatchQueue(label: "reconnect.witness"))
        let session = try makeSession(
            preset: .qvga320x240, devices: [VirtualDevices.back, VirtualDevices.microphone], outputs: [output, frames])
        let notifications = NotificationRecorder(
            [AVCaptureDevice.wasDisconnectedNotification, AVCaptureDevice.wasConnectedNotification],
            object: camera.device)
        session.startRunning()
        defer {
            session.stopRunning()
            camera.restoreDefaults()
        }
        let delegate = ReconnectionDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(delegate.waitForStart())
        #expect(waitUntil { output.recordedDuration.seconds >= 1.2 }, "1.2 s were never recorded")

        let unplugged = Date()
        camera.unplug()
        #expect(delegate.waitForLoss(), "didLoseDevice never came")
        #expect(output.isRecording, "the recording ended with the camera")
        // The outage itself: the camera stays away this long.
        Thread.sleep(forTimeInterval: 1.0)
        let outage = Date().timeIntervalSince(unplugged)
        camera.replug()
        #expect(delegate.waitForReturn(), "didRegainDevice never came")
        let gapEnd = try #require(delegate.regainedDevices.first?.gap.end.seconds)
        #expect(waitUntil { output.recordedDuration.seconds >= gapEnd + 1.6 }, "the recording did not go on")
        output.stopRecording()
        #expect(delegate.waitForFinish())

        #expect(delegate.events == ["didStart", "didLose", "didRegain", "willFinish", "didFinish"])
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        #expect(delegate.lostDevices.map(\.device) == [camera.device.uniqueID])
        #expect(delegate.regainedDevices.map(\.device) == [camera.device.uniqueID])
        #expect(
            notifications.recorded
                == [
                    AVCaptureDevice.wasDisconnectedNotification.rawValue,
                    AVCaptureDevice.wasConnectedNotification.rawValue,
                ])
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path) == [
                url.lastPathComponent
            ])
        #expect(try ffmpegDecodeErrors(url) == "")

        // The timestamps have the gap: one jump, at least the outage (the last frame before came before the unplug,
        // the first after after the replug), and exactly the camera's own (as the witness saw it).
        let times = try videoFrameTimes(url)
        let jumps = zip(times, times.dropFirst()).enumerated().filter { $0.element.1 - $0.element.0 > 1.5 * Self.frame }
        try #require(jumps.count == 1, "timestamp jumps at \(jumps.map(\.offset))")
        let gapAt = jumps[0].offset + 1
        let jump = jumps[0].element.1 - jumps[0].element.0
        #expect(jump >= outage - Self.frame, "jump \(jump) s for an outage of \(outage) s")
        let seen = witness.received.map(\.time.seconds)
        let cameraJumps = zip(seen, seen.dropFirst()).map { $1 - $0 }.filter { $0 > 1.5 * Self.frame }
        #expect(cameraJumps.count == 1 && abs(cameraJumps[0] - jump) < 0.001, "camera \(cameraJumps) s, file \(jump) s")
        // The picture: the frames before the gap and those after, each stream's frame indices once and in order
        // (the replugged camera's stream counts afresh).
        let indices = try decodedFrameIndices(url)
        try #require(indices.count == times.count, "\(indices.count) frames decoded, \(times.count) timed")
        #expect(
            gapAt >= 30 && times.count - gapAt >= 45, "\(gapAt) frames before the gap, \(times.count - gapAt) after")
        #expect(indexSteps(Array(indices[..<gapAt])).isEmpty && indexSteps(Array(indices[gapAt...])).isEmpty)
        #expect(indices[gapAt...].compactMap { $0 }.first.map { $0 < 3 } == true, "after the gap: \(indices[gapAt...])")
        // The gap the delegate was told of is the one in the file.
        let gap = try #require(delegate.regainedDevices.first?.gap)
        #expect(abs(gap.start.seconds - (times[gapAt - 1] + Self.frame - times[0])) <= Self.frame, "gap \(gap)")
        #expect(abs(gap.duration.seconds - (jump - Self.frame)) <= Self.frame, "gap \(gap), jump \(jump)")

        // The sound went on (the microphone stayed): as long as the picture, and every flash meets its beep.
        let audioLength = try streamDuration(url, "audio")
        let videoLength = try streamDuration(url, "video")
        #expect(abs(audioLength - videoLength) <= 0.1, "audio \(audioLength) s, video \(videoLength) s")
        try expectFlashesMeetBeeps(url, afterTime: times[gapAt])
    }

    @Test("The microphone unplugged and replugged: the picture goes on, silence in the gap, the sound after it in sync")
    func microphoneComesBack() throws {
        guard MediaTool.available(for: "ReconnectingRecordingTests.microphoneComesBack") else { return }
        let microphone = try #require(VirtualDevices.microphone.virtualMicrophone)
        let recording = try RunningRecording("microphone-gap.mov", for: 1.2, restoring: microphone.restoreDefaults)
        defer { recording.end() }
        let (url, output, delegate) = (recording.url, recording.output, recording.delegate)
        microphone.unplug()
        #expect(delegate.waitForLoss(), "didLoseDevice never came")
        let lostAt = output.recordedDuration.seconds
        // The outage: the picture records on for 1.2 s without sound.
        #expect(waitUntil { output.recordedDuration.seconds >= lostAt + 1.2 }, "the picture stopped too")
        microphone.replug()
        #expect(delegate.waitForReturn(), "didRegainDevice never came")
        let resumedAt = output.recordedDuration.seconds
        #expect(waitUntil { output.recordedDuration.seconds >= resumedAt + 1.6 }, "the recording did not go on")
        output.stopRecording()
        #expect(delegate.waitForFinish())

        #expect(delegate.events == ["didStart", "didLose", "didRegain", "willFinish", "didFinish"])
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        #expect(try ffmpegDecodeErrors(url) == "")
        // The picture never stopped: every frame once, no timestamp gap.
        #expect(indexSteps(try decodedFrameIndices(url)).isEmpty)
        let times = try videoFrameTimes(url)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 <= 1.5 * Self.frame })
        // The sound fills the picture's length (silence where the microphone was away) and is in sync after it.
        let audioLength = try streamDuration(url, "audio")
        let videoLength = try streamDuration(url, "video")
        #expect(abs(audioLength - videoLength) <= 0.1, "audio \(audioLength) s, video \(videoLength) s")
        let gap = try #require(delegate.regainedDevices.first?.gap)
        #expect(gap.duration.seconds >= 1.1, "gap \(gap)")
        let beeps = try AVSyncTests.beepTimes(url)
        #expect(
            !beeps.contains { $0 > gap.start.seconds + 0.06 && $0 < gap.end.seconds - 0.06 },
            "beeps \(beeps) inside the gap \(gap.start.seconds)–\(gap.end.seconds) s")
        try expectFlashesMeetBeeps(url, afterTime: gap.end.seconds)
    }

    @Test("Without the option the microphone's unplugging ends the recording, as Apple's does")
    func withoutTheOption() throws {
        guard MediaTool.available(for: "ReconnectingRecordingTests.withoutTheOption") else { return }
        #expect(!AVCaptureMovieFileOutput().survivesDisconnection, "Apple's behaviour unless asked")
        let microphone = try #require(VirtualDevices.microphone.virtualMicrophone)
        let recording = try RunningRecording(
            "ended.mov", survivesDisconnection: false, for: 0.5, restoring: microphone.restoreDefaults)
        defer { recording.end() }
        let (url, delegate) = (recording.url, recording.delegate)
        microphone.unplug()
        #expect(delegate.waitForFinish())
        #expect(delegate.events == ["didStart", "willFinish", "didFinish"])
        #expect((delegate.error as? AVError)?.code == .deviceWasDisconnected, "\(String(describing: delegate.error))")
        #expect(try ffmpegDecodeErrors(url) == "")
    }

    @Test("Stopping while the camera is away finishes the file normally, with what came before")
    func stopWhileAway() throws {
        guard MediaTool.available(for: "ReconnectingRecordingTests.stopWhileAway") else { return }
        let camera = try #require(VirtualDevices.back.virtualCamera)
        let recording = try RunningRecording("stopped-away.mov", for: 0.8, restoring: camera.restoreDefaults)
        defer { recording.end() }
        let (url, output, delegate) = (recording.url, recording.output, recording.delegate)
        camera.unplug()
        #expect(delegate.waitForLoss(), "didLoseDevice never came")
        output.stopRecording()
        #expect(delegate.waitForFinish())
        #expect(delegate.events == ["didStart", "didLose", "willFinish", "didFinish"])
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        #expect(try ffmpegDecodeErrors(url) == "")
        let indices = try decodedFrameIndices(url)
        #expect(indices.count >= 20, "\(indices.count) frames")
        #expect(indexSteps(indices).isEmpty)
    }

    @Test("maxRecordedDuration ends a recording whose camera never came back, the sound reaching the limit")
    func durationLimitWhileAway() throws {
        guard MediaTool.available(for: "ReconnectingRecordingTests.durationLimitWhileAway") else { return }
        let camera = try #require(VirtualDevices.back.virtualCamera)
        let recording = try RunningRecording(
            "limit-away.mov", limit: CMTime(value: 2, timescale: 1), for: 0.8, restoring: camera.restoreDefaults)
        defer { recording.end() }
        let (url, delegate) = (recording.url, recording.delegate)
        camera.unplug()
        #expect(delegate.waitForFinish())
        #expect(delegate.events == ["didStart", "didLose", "willFinish", "didFinish"])
        #expect((delegate.error as? AVError)?.code == .maximumDurationReached, "\(String(describing: delegate.error))")
        #expect(try ffmpegDecodeErrors(url) == "")
        let audioLength = try streamDuration(url, "audio")
        #expect(abs(audioLength - 2) <= 0.05, "audio \(audioLength) s")
        #expect(try streamDuration(url, "video") < 1.5)
    }

    @Test("A camera's H.264 written as it comes goes on after the gap at a key frame, the file decoding cleanly")
    func passthroughComesBack() throws {
        guard MediaTool.available(for: "ReconnectingRecordingTests.passthroughComesBack") else { return }
        let url = try scratchURL("passthrough-gap.mov", suite: "reconnect")
        let webcam = try H264PassthroughTests.webcamAt1080pH264()
        let camera = try #require(webcam.virtualCamera)
        defer { camera.restoreDefaults() }
        let output = AVCaptureMovieFileOutput()
        output.survivesDisconnection = true
        let session = try makeSession(preset: .inputPriority, devices: [webcam], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let delegate = ReconnectionDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(delegate.waitForStart())
        #expect(waitUntil(timeout: 30) { output.recordedDuration.seconds >= 1 }, "1 s was never recorded")
        camera.unplug()
        #expect(delegate.waitForLoss(), "didLoseDevice never came")
        // The outage itself: the webcam stays away this long.
        Thread.sleep(forTimeInterval: 0.5)
        camera.replug()
        #expect(delegate.waitForReturn(), "didRegainDevice never came")
        let gapEnd = try #require(delegate.regainedDevices.first?.gap.end.seconds)
        #expect(waitUntil(timeout: 30) { output.recordedDuration.seconds >= gapEnd + 1 }, "the recording stopped")
        output.stopRecording()
        #expect(delegate.waitForFinish())
        #expect(delegate.events == ["didStart", "didLose", "didRegain", "willFinish", "didFinish"])
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        #expect(try ffmpegDecodeErrors(url) == "")
        // The packets as they are in the file: one timestamp jump, and the first packet after it is a key frame.
        let packets = try MediaTool.ffprobe.run([
            "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags", "-of", "csv=p=0",
            url.path,
        ]).outputText.split(whereSeparator: \.isNewline).compactMap { line -> (time: Double, isKey: Bool)? in
            let fields = line.split(separator: ",")
            guard fields.count >= 2, let time = Double(fields[0]) else { return nil }
            return (time, fields[1].contains("K"))
        }.sorted { $0.time < $1.time }
        let jumps = zip(packets, packets.dropFirst()).enumerated().filter {
            $0.element.1.time - $0.element.0.time > 0.4
        }
        try #require(jumps.count == 1, "jumps at \(jumps.map(\.offset)) in \(packets.map(\.time))")
        #expect(packets[jumps[0].offset + 1].isKey, "the first packet after the gap is no key frame")
        #expect(
            packets.count - jumps[0].offset - 1 >= 10, "\(packets.count - jumps[0].offset - 1) frames after the gap")
    }

    /// Every flash frame from `afterTime` on (file seconds) has its beep within 5 ms, and there is one at least.
    private func expectFlashesMeetBeeps(_ url: URL, afterTime: Double) throws {
        let flashes = try AVSyncTests.flashTimes(url).flashes.filter { $0 >= afterTime }
        let beeps = try AVSyncTests.beepTimes(url)
        #expect(!flashes.isEmpty, "no flash after \(afterTime) s")
        for flash in flashes {
            let beep = try #require(beeps.min { abs($0 - flash) < abs($1 - flash) }, "no beeps")
            #expect(abs(beep - flash) <= 0.005, "flash at \(flash) s, nearest beep at \(beep) s")
        }
    }
}
