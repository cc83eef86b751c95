// Pinch to zoom, with a smooth ramp for buttons.
import OpenAVCaptureShim

final class PinchZoomController {
    private var startFactor: CGFloat = 1
    let maximumUIZoom: CGFloat = 8

    func pinchBegan(device: AVCaptureDevice) {
        startFactor = device.videoZoomFactor
    }

    func pinchChanged(scale: CGFloat, device: AVCaptureDevice) {
        let limit = min(maximumUIZoom, device.activeFormat.videoMaxZoomFactor)
        let factor = max(1, min(startFactor * scale, limit))
        do {
            try device.lockForConfiguration()
            device.videoZoomFactor = factor
            device.unlockForConfiguration()
        } catch {
            print(error)
        }
    }

    func rampToTwoTimes(device: AVCaptureDevice) throws {
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        if device.isRampingVideoZoom {
            device.cancelVideoZoomRamp()
        }
        device.ramp(toVideoZoomFactor: min(2, device.activeFormat.videoMaxZoomFactor), withRate: 4)
    }
}
