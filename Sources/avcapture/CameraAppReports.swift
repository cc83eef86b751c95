import CameraControllerExample
import Foundation
import OpenAVCapture

/// What `avcapture preview` and `avcapture serve` share as the camera controller's delegate: its reports printed one
/// line each (a photo's or a movie's path, for scripts reading the pipe; failures on stderr), and the end of a
/// recording awaited when the app quits.
///
/// Threading: the controller reports on its outputs' queues; `finishRecording()` from any thread. No state but a
/// semaphore.
class CameraAppReports: CameraControllerDelegate, @unchecked Sendable {
    let controller: CameraController
    private let recordingFinished = DispatchSemaphore(value: 0)

    init(controller: CameraController) { self.controller = controller }

    /// Ends a recording in progress and waits (up to 10 s) for its file.
    func finishRecording() {
        if controller.isRecording {
            controller.stopRecording()
            _ = recordingFinished.wait(timeout: .now() + 10)
        }
    }

    func deviceConfigurationFailed(with error: any Error) { Terminal.error("avcapture: the camera refused: \(error)") }

    func mediaCaptureFailed(with error: any Error) {
        Terminal.error("avcapture: capture failed: \(error)")
        recordingFinished.signal()
    }

    func cameraController(_ controller: CameraController, didSavePhotoAt url: URL) {
        PreviewApp.say("photo \(url.path)")
    }

    func cameraController(_ controller: CameraController, didFinishRecordingTo url: URL) {
        PreviewApp.say("movie \(url.path)")
        recordingFinished.signal()
    }
}
