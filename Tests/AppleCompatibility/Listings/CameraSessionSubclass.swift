// Subclassing AVCaptureSession to keep app state with it, as several camera libraries do. The subclasses restate
// `@unchecked Sendable`: compiles on Apple's platforms too, and keeps Swift's restating warning quiet here, where the
// capture classes are Sendable.
import OpenAVCaptureShim

final class ManagedCaptureSession: AVCaptureSession, @unchecked Sendable {
    private(set) var configurationCount = 0
    var preferredCamera: AVCaptureDevice.Position = .back

    func reconfigure(_ changes: () throws -> Void) rethrows {
        beginConfiguration()
        defer {
            commitConfiguration()
            configurationCount += 1
        }
        try changes()
    }

    var videoInputs: [AVCaptureDeviceInput] {
        inputs.compactMap { $0 as? AVCaptureDeviceInput }.filter { $0.device.hasMediaType(.video) }
    }
}

final class NamedVideoOutput: AVCaptureVideoDataOutput, @unchecked Sendable {
    var name = "frames"
}

final class RecordingMovieOutput: AVCaptureMovieFileOutput, @unchecked Sendable {
    var lastURL: URL?
}
