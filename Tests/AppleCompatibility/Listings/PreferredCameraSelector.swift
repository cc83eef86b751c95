// Choosing the camera with the system's preferred-camera API and remembering the user's choice.
import OpenAVCaptureShim

enum PreferredCameraSelector {
    static func bestCamera() -> AVCaptureDevice? {
        if let preferred = AVCaptureDevice.systemPreferredCamera {
            return preferred
        }
        return AVCaptureDevice.default(for: .video)
    }

    static func userPicked(_ device: AVCaptureDevice) {
        AVCaptureDevice.userPreferredCamera = device
    }

    static func isPreferred(_ device: AVCaptureDevice) -> Bool {
        AVCaptureDevice.userPreferredCamera?.uniqueID == device.uniqueID
    }
}
