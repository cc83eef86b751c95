// Locking white balance to gray-world gains, clamped to what the device allows.
import OpenAVCaptureShim

enum WhiteBalanceLock {
    static func normalized(
        _ gains: AVCaptureDevice.WhiteBalanceGains, for device: AVCaptureDevice
    ) -> AVCaptureDevice.WhiteBalanceGains {
        var g = gains
        g.redGain = max(1.0, min(g.redGain, device.maxWhiteBalanceGain))
        g.greenGain = max(1.0, min(g.greenGain, device.maxWhiteBalanceGain))
        g.blueGain = max(1.0, min(g.blueGain, device.maxWhiteBalanceGain))
        return g
    }

    static func lockCurrent(_ device: AVCaptureDevice) throws {
        guard device.isWhiteBalanceModeSupported(.locked) else { return }
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        if device.isLockingWhiteBalanceWithCustomDeviceGainsSupported {
            let gains = normalized(device.deviceWhiteBalanceGains, for: device)
            device.setWhiteBalanceModeLocked(with: gains, completionHandler: nil)
        } else {
            device.whiteBalanceMode = .locked
        }
    }
}
