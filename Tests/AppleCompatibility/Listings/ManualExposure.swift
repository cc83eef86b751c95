// Manual exposure controls of a pro camera app: bias, and custom duration and ISO within the format's limits.
import OpenAVCaptureShim

final class ManualExposureController {
    let device: AVCaptureDevice

    init(device: AVCaptureDevice) {
        self.device = device
    }

    func setBias(_ bias: Float) throws {
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        let clamped = min(max(bias, device.minExposureTargetBias), device.maxExposureTargetBias)
        device.setExposureTargetBias(clamped, completionHandler: nil)
    }

    func setCustom(shutterSeconds: Double, iso: Float, completion: @escaping @Sendable (CMTime) -> Void) throws {
        guard device.isExposureModeSupported(.custom) else { return }
        let format = device.activeFormat
        let requested = CMTimeMakeWithSeconds(shutterSeconds, preferredTimescale: 1_000_000)
        let duration = CMTimeMaximum(format.minExposureDuration, CMTimeMinimum(requested, format.maxExposureDuration))
        let clampedISO = min(max(iso, format.minISO), format.maxISO)
        try device.lockForConfiguration()
        device.setExposureModeCustom(duration: duration, iso: clampedISO) { syncTime in
            completion(syncTime)
        }
        device.unlockForConfiguration()
    }

    var summary: String {
        "\(device.exposureDuration.seconds)s ISO \(device.iso) offset \(device.exposureTargetOffset)"
    }
}
