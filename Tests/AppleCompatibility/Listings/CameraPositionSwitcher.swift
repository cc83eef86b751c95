// Flipping between the front and back cameras inside one configuration transaction.
import OpenAVCaptureShim

final class CameraPositionSwitcher {
    private let discovery = AVCaptureDevice.DiscoverySession(
        deviceTypes: [.builtInWideAngleCamera, .builtInDualCamera, .builtInTrueDepthCamera],
        mediaType: .video,
        position: .unspecified)

    func device(facing position: AVCaptureDevice.Position) -> AVCaptureDevice? {
        discovery.devices.first { $0.position == position }
    }

    func switchCamera(in session: AVCaptureSession) throws {
        guard let current = session.inputs.compactMap({ $0 as? AVCaptureDeviceInput }).first else { return }
        let wanted: AVCaptureDevice.Position = current.device.position == .back ? .front : .back
        guard let next = device(facing: wanted) else { return }
        let newInput = try AVCaptureDeviceInput(device: next)
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        session.removeInput(current)
        if session.canAddInput(newInput) {
            session.addInput(newInput)
        } else {
            session.addInput(current)
        }
    }
}
