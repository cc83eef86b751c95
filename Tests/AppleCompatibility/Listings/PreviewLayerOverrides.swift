// A preview layer subclass that lays out an overlay and converts taps through the overridden conversion, as scanner
// views do.
import OpenAVCaptureShim

final class ScannerPreviewLayer: AVCaptureVideoPreviewLayer, @unchecked Sendable {
    let overlay = CALayer()

    override func layoutSublayers() {
        super.layoutSublayers()
        overlay.frame = bounds.insetBy(dx: bounds.width * 0.1, dy: bounds.height * 0.3)
    }

    override func captureDevicePointConverted(fromLayerPoint pointInLayer: CGPoint) -> CGPoint {
        let point = super.captureDevicePointConverted(fromLayerPoint: pointInLayer)
        return CGPoint(x: min(max(point.x, 0), 1), y: min(max(point.y, 0), 1))
    }

    override func metadataOutputRectConverted(fromLayerRect rectInLayerCoordinates: CGRect) -> CGRect {
        super.metadataOutputRectConverted(fromLayerRect: rectInLayerCoordinates)
    }

    override var videoGravity: AVLayerVideoGravity {
        get { super.videoGravity }
        set { super.videoGravity = newValue }
    }
}
