// Ending the flow of media: by the caller (`stopRunning()`), or by the session itself when a commit makes the
// configuration one it cannot run (a multi-camera session's hardware cost over budget).

import CaptureDrivers
import Foundation

extension AVCaptureSession {
    /// Stops every device stream and tells the outputs, which finish their recordings. Under the lock, running.
    func endStreaming() {
        for output in outputList { output.sessionWillStopRunning() }
        setState(.stopping)
        for stream in streams.values { stream.end() }
        streams.removeAll()
        setState(.idle)
        for output in outputList { output.sessionDidStopRunning() }
    }

    /// A running session's configuration became one it cannot run: it stops, as Apple's does, and posts
    /// `.AVCaptureSessionRuntimeError` with `error`, then `.AVCaptureSessionDidStopRunning`. Recordings in progress
    /// are finished (their files playable). Under the lock; the notifications go from the event queue.
    func halt(for error: AVError) {
        endStreaming()
        eventQueue.async {
            self.post(AVCaptureSession.runtimeErrorNotification, [AVCaptureSessionErrorKey: error])
            self.post(AVCaptureSession.didStopRunningNotification, [:])
        }
    }
}

extension AVCaptureDevice {
    /// Whether the device is a camera: video, and not a screen. A plain session takes one at a time.
    package var isCamera: Bool { hasMediaType(.video) && !(backend is any ScreenDevice) }
}
