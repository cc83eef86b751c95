// Virtual devices put on one manual clock for the length of a test's recording.

import OpenAVCaptureTesting
import Testing

/// Runs `body` with `devices` (virtual cameras and microphones) paced by one new manual clock, then puts them back
/// on the real-time clock. Set before the devices start: a device takes its clock as it starts.
func withManualClock<Result>(
    _ devices: [AVCaptureDevice], _ body: (VirtualDeviceClock) throws -> Result
) throws -> Result {
    let clock = VirtualDeviceClock()
    var restores: [() -> Void] = []
    defer { restores.forEach { $0() } }
    for device in devices {
        if let camera = VirtualCameraController(device) {
            camera.clockMode = .manual(clock)
            restores.append { camera.clockMode = .realTime }
        } else {
            let microphone = try #require(VirtualMicrophoneController(device), "\(device.localizedName) is not virtual")
            microphone.clockMode = .manual(clock)
            restores.append { microphone.clockMode = .realTime }
        }
    }
    return try body(clock)
}

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
