// A scanner overlay: a CALayer subclass drawn over the preview, its box placed with the preview's conversions.
import OpenAVCaptureShim

final class ScannerOverlayLayer: CALayer {
    private let box = CALayer()

    override init() {
        super.init()
        box.borderWidth = 2
        box.cornerRadius = 6
        box.isHidden = true
        addSublayer(box)
    }

    override init(layer: Any) {
        super.init(layer: layer)
    }

    required init?(coder: NSCoder) {
        fatalError("init(coder:) is not used")
    }

    func show(_ rect: CGRect) {
        box.frame = rect
        box.isHidden = false
    }

    func hide() {
        box.isHidden = true
    }
}

enum PreviewHierarchy {
    static func install(session: AVCaptureSession, in container: CALayer) -> (AVCaptureVideoPreviewLayer, ScannerOverlayLayer) {
        let preview = AVCaptureVideoPreviewLayer(session: session)
        preview.frame = container.bounds
        preview.videoGravity = .resizeAspectFill
        preview.contentsGravity = .resizeAspectFill
        preview.masksToBounds = true
        container.insertSublayer(preview, at: 0)
        let overlay = ScannerOverlayLayer()
        overlay.frame = preview.bounds
        preview.addSublayer(overlay)
        return (preview, overlay)
    }

    static func rotate(_ layer: CALayer, degrees: CGFloat) {
        layer.setAffineTransform(CGAffineTransform(rotationAngle: degrees * .pi / 180))
    }

    static func tearDown(_ preview: AVCaptureVideoPreviewLayer) {
        preview.sublayers?.forEach { $0.removeFromSuperlayer() }
        preview.removeFromSuperlayer()
    }
}
