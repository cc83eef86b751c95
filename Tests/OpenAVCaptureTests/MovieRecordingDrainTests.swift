// How a recording of a camera and a microphone ends when the sound is behind the picture at its end (a drain) and
// the microphone then ends: through the public API, on a movie file's camera and microphone and on the virtual ones,
// the recording engine's host-time backstop pushed out of reach, so only the microphone's own end can finish the
// file. (The picture's backstop, for a microphone that stalls: RecordingDrainTests.)

import Foundation
import OpenAVCaptureTesting
import Synchronization
import TestSupport
import Testing

@testable import OpenAVCapture

/// Keeps the finish's error and lets the test wait for it.
private final class FinishWaiter: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    private let finishError = Mutex<(any Error)?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    var error: AVError? { finishError.withLock { $0 as? AVError } }

    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        finishError.withLock { $0 = error }
        finished.signal()
    }

    func waitForFinish(timeout: TimeInterval) -> Bool { finished.wait(timeout: .now() + timeout) == .success }
}

@Suite("a recording's drain at the end of its input")
struct MovieRecordingDrainTests {
    @Test("sound shorter than the picture: the microphone's end finishes the file, not a host-time backstop")
    func shorterSoundEndsWithTheInput() throws {
        guard MediaTool.available(for: "MovieRecordingDrainTests.shorterSoundEndsWithTheInput") else { return }
        // 1.5 s of picture (45 frames at 30 fps) and 1 s of sound: at the picture's end the sound is behind it.
        let source = try scratchURL("short-sound.mov", suite: "recording-drain-tests")
        let made = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=1.5", "-f",
            "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1", "-map", "0:v", "-map", "1:a", "-c:v",
            "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "pcm_s16le", source.path,
        ])
        try #require(made.status == 0, "ffmpeg: \(made.error)")
        let movie = try MovieFileDevice(url: source)
        let session = AVCaptureSession()
        session.beginConfiguration()
        session.sessionPreset = .inputPriority
        for device in [try #require(movie.camera), try #require(movie.microphone)] {
            session.addInput(try AVCaptureDeviceInput(device: device))
        }
        let output = AVCaptureMovieFileOutput()
        // Where no device ends a drain, it ends after this much host time; an hour is past the wait below.
        output.engine.silentSessionBackstop = 3600
        session.addOutput(output)
        session.commitConfiguration()
        let url = try scratchURL("short-sound-recorded.mov", suite: "recording-drain-tests")
        try? FileManager.default.removeItem(at: url)
        let waiter = FinishWaiter()
        // Asked before the file plays, so its first frame is in the recording.
        output.startRecording(to: url, recordingDelegate: waiter)
        session.startRunning()
        defer { session.stopRunning() }
        // The file plays in real time (1.5 s); the wait only bounds a failure, far below the backstop.
        try #require(waiter.waitForFinish(timeout: 60), "the recording did not end with its microphone")
        #expect(waiter.error?.code == .deviceWasDisconnected, "\(String(describing: waiter.error))")
        let report = try FFprobeReport(url)
        let video = try #require(report.stream("video"), "no picture in the recording")
        let audio = try #require(report.stream("audio"), "no sound in the recording")
        #expect(FFprobeReport.number(video["nb_read_frames"]) == 45, "\(video)")
        let soundLength = try #require(FFprobeReport.number(audio["duration"]), "\(audio)")
        #expect(abs(soundLength - 1) < 0.05, "the sound lasts \(soundLength) s")
    }

    @Test("the microphone unplugged as the recording stops: its end finishes the file at once, the clock held")
    func microphoneGoneAtTheEnd() throws {
        guard MediaTool.available(for: "MovieRecordingDrainTests.microphoneGoneAtTheEnd") else { return }
        let microphone = try #require(VirtualMicrophoneController(VirtualDevices.microphone))
        defer { microphone.replug() }
        try withManualClock([VirtualDevices.back, VirtualDevices.microphone]) { clock in
            let output = AVCaptureMovieFileOutput()
            output.engine.silentSessionBackstop = 3600
            let session = try makeSession(
                preset: .qvga320x240, devices: [VirtualDevices.back, VirtualDevices.microphone], outputs: [output])
            session.startRunning()
            defer { session.stopRunning() }
            let frame = CMTime(value: 1, timescale: 30)
            #expect(clock.advance(by: frame * Int32(3), step: frame, settling: [output]))
            let url = try scratchURL("drain-gone-\(UUID().uuidString).mov", suite: "recording-drain-tests")
            let waiter = FinishWaiter()
            output.startRecording(to: url, recordingDelegate: waiter)
            #expect(clock.advance(by: frame * Int32(30), step: frame, settling: [output]))
            output.stopRecording()
            microphone.unplug()
            // No sound is coming: the file finishes with no more picture, no time on the session's clock, and the
            // host-time backstop an hour away. The wait only bounds a failure.
            try #require(waiter.waitForFinish(timeout: 60), "the recording did not end with its microphone")
            let probe = try FFprobeReport(url)
            #expect(probe.stream("video") != nil && probe.stream("audio") != nil)
            #expect(try ffmpegDecodeErrors(url).isEmpty)
        }
    }
}
