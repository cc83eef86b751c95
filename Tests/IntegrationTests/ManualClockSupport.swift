// A recording stepped on a manual clock (TestSupport's `withManualClock`) until it ends by itself.

import OpenAVCaptureTesting
import Testing
import TestSupport

/// Starts `session`, records `output` into `url` with `devices` on a manual clock stepped `frame` at a time (the
/// output caught up between steps) until the recording ends by itself (a limit) or the clock reaches `limit`
/// seconds, and stops the session. The delegate, whether or not the recording finished.
func recordStepping(
    _ session: AVCaptureSession, _ output: AVCaptureMovieFileOutput, to url: URL, devices: [AVCaptureDevice],
    frame: CMTime, limit: Double
) throws -> MovieRecordingDelegate {
    try withManualClock(devices) { clock in
        session.startRunning()
        defer { session.stopRunning() }
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        while !delegate.events.contains("didFinish"), clock.elapsed.seconds < limit {
            guard clock.advance(by: frame, step: frame, settling: [output]) else {
                Issue.record("the recording stopped keeping up at \(clock.elapsed.seconds) s")
                break
            }
        }
        return delegate
    }
}
