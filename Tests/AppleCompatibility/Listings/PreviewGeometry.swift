// Converting between the preview's coordinates and the camera's, for overlays and regions of interest.
import OpenAVCaptureShim

struct PreviewGeometry {
    let previewLayer: AVCaptureVideoPreviewLayer

    init(session: AVCaptureSession, bounds: CGRect) {
        previewLayer = AVCaptureVideoPreviewLayer(session: session)
        previewLayer.videoGravity = .resizeAspectFill
        previewLayer.frame = bounds
    }

    func devicePoint(for tap: CGPoint) -> CGPoint {
        previewLayer.captureDevicePointConverted(fromLayerPoint: tap)
    }

    func layerPoint(for devicePoint: CGPoint) -> CGPoint {
        previewLayer.layerPointConverted(fromCaptureDevicePoint: devicePoint)
    }

    func metadataRect(for visibleRect: CGRect) -> CGRect {
        previewLayer.metadataOutputRectConverted(fromLayerRect: visibleRect)
    }

    func layerRect(forMetadataRect rect: CGRect) -> CGRect {
        previewLayer.layerRectConverted(fromMetadataOutputRect: rect)
    }

    func mirrorForFrontCamera(_ isFront: Bool) {
        guard let connection = previewLayer.connection, connection.isVideoMirroringSupported else { return }
        connection.automaticallyAdjustsVideoMirroring = false
        connection.isVideoMirrored = isFront
    }
}
