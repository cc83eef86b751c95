// A flashlight button: torch on at a level, off again.
import OpenAVCaptureShim

enum TorchToggle {
    static func toggle(_ device: AVCaptureDevice, level: Float = 0.5) {
        guard device.hasTorch, device.isTorchAvailable else { return }
        do {
            try device.lockForConfiguration()
            if device.torchMode == .on {
                device.torchMode = .off
            } else {
                try device.setTorchModeOn(level: min(level, AVCaptureDevice.maxAvailableTorchLevel))
            }
            device.unlockForConfiguration()
        } catch {
            print("Torch could not be used: \(error.localizedDescription)")
        }
    }

    static func isLit(_ device: AVCaptureDevice) -> Bool {
        device.isTorchActive
    }
}
