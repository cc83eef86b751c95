// A retail barcode scanner: several symbologies, a scan window limited with rectOfInterest, corners in view space.
import OpenAVCaptureShim

final class BarcodeScannerRegion: NSObject, AVCaptureMetadataOutputObjectsDelegate, @unchecked Sendable {
    let output = AVCaptureMetadataOutput()
    private let queue = DispatchQueue(label: "barcode.scanner")
    private(set) var results: [(AVMetadataObject.ObjectType, String)] = []

    static let wanted: [AVMetadataObject.ObjectType] = [.ean8, .ean13, .upce, .code128, .code39, .itf14, .dataMatrix]

    func install(in session: AVCaptureSession, previewLayer: AVCaptureVideoPreviewLayer, scanWindow: CGRect) {
        guard session.canAddOutput(output) else { return }
        session.addOutput(output)
        output.setMetadataObjectsDelegate(self, queue: queue)
        output.metadataObjectTypes = Self.wanted.filter { output.availableMetadataObjectTypes.contains($0) }
        output.rectOfInterest = previewLayer.metadataOutputRectConverted(fromLayerRect: scanWindow)
    }

    func metadataOutput(
        _ output: AVCaptureMetadataOutput, didOutput metadataObjects: [AVMetadataObject],
        from connection: AVCaptureConnection
    ) {
        for case let code as AVMetadataMachineReadableCodeObject in metadataObjects {
            guard let value = code.stringValue else { continue }
            let turned = output.transformedMetadataObject(for: code, connection: connection)
            let corners = (turned as? AVMetadataMachineReadableCodeObject)?.corners ?? code.corners
            if corners.count == 4 {
                results.append((code.type, value))
            }
        }
    }
}
