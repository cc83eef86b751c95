// The end of a recording whose sound stops coming: the file waits for the microphone's last sound up to the last
// frame's end (a drain); when the microphone stalls instead, the picture running half a second past that end on the
// session's clock finishes it (when it goes away, its end does at once: MovieRecordingDrainTests). Stepped on a
// manual clock: no host time is waited for.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import TestSupport
import Testing

@Suite("The drain at a recording's end, on the session's clock", .serialized)
struct RecordingDrainTests {
    @Test("The microphone stalled as the recording stops: the file is finished once the picture is 0.5 s past its end")
    func microphoneStalledAtTheEnd() throws {
        guard MediaTool.available(for: "RecordingDrainTests.microphoneStalledAtTheEnd") else { return }
        let microphone = try #require(VirtualMicrophoneController(VirtualDevices.microphone))
        defer { microphone.replug() }
        try withManualClock([VirtualDevices.back, VirtualDevices.microphone]) { clock in
            let output = AVCaptureMovieFileOutput()
            let session = try makeMovieSession(output)
            session.startRunning()
            defer { session.stopRunning() }
            let frame = CMTime(value: 1, timescale: 30)
            #expect(clock.advance(by: frame * Int32(3), step: frame, settling: [output]))
            let url = try scratchURL("drain-\(UUID().uuidString).mov", suite: "recording-drain-tests")
            let delegate = MovieRecordingDelegate()
            output.startRecording(to: url, recordingDelegate: delegate)
            #expect(clock.advance(by: frame * Int32(30), step: frame, settling: [output]))
            #expect(delegate.events.contains("didStart"))
            // Longer than the test's clock goes: no sound comes after the stop.
            microphone.stall(for: 60)
            output.stopRecording()
            // The drain waits on the session's clock, not the host's: with the clock held, a second of host time
            // passes and the file is not finished (this wait must take real time to show that).
            #expect(!waitUntil(timeout: 1, every: 0.05) { delegate.events.contains("willFinish") })
            // The camera goes on: 10 frames (0.33 s) are not enough, 10 more take the picture past the half second.
            #expect(clock.advance(by: frame * Int32(10), step: frame, settling: [output]))
            #expect(!waitUntil(timeout: 0.3, every: 0.05) { delegate.events.contains("willFinish") })
            #expect(clock.advance(by: frame * Int32(10), step: frame, settling: [output]))
            #expect(waitUntil(timeout: 2, every: 0.02) { delegate.events.contains("willFinish") })
            #expect(delegate.waitForFinish())
            let probe = try FFprobeReport(url)
            #expect(probe.stream("video") != nil && probe.stream("audio") != nil)
            #expect(try ffmpegDecodeErrors(url).isEmpty)
        }
    }
}
