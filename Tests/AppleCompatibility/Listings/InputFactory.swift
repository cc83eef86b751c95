// Capture inputs made through the metatype, as generic camera helpers and input subclasses do.
import OpenAVCaptureShim

final class TrackedDeviceInput: AVCaptureDeviceInput, @unchecked Sendable {
    static func make(for device: AVCaptureDevice) throws -> Self {
        try Self(device: device)
    }
}

enum InputFactory {
    static func input<Input: AVCaptureDeviceInput>(_ kind: Input.Type, for device: AVCaptureDevice) throws -> Input {
        try kind.init(device: device)
    }

    /// A new input of the same class as `existing`, for another camera (switching cameras keeps the subclass).
    static func replacement(for existing: AVCaptureDeviceInput, device: AVCaptureDevice) throws -> AVCaptureDeviceInput {
        try type(of: existing).init(device: device)
    }
}
