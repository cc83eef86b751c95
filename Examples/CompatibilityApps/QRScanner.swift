// A QR and barcode scanner screen: the camera the user picked (or the default one) feeds a metadata output whose
// delegate runs on the main queue; the first code read is reported and the scanner closes.
import OpenAVCaptureShim

@MainActor
final class QRScannerViewController: NSObject, AVCaptureMetadataOutputObjectsDelegate {
    let captureSession = AVCaptureSession()
    private let sessionQueue = DispatchQueue(label: "scanner session queue")
    private var found: CheckedContinuation<AVMetadataMachineReadableCodeObject, Never>?

    /// Sets the session up with the camera whose uniqueID the app saved (nil: the default camera).
    func configureSession(cameraID: String?) throws {
        let camera = cameraID.flatMap { AVCaptureDevice(uniqueID: $0) } ?? AVCaptureDevice.default(for: .video)
        guard let camera else { throw AppFailure("no camera to scan with") }
        let input = try AVCaptureDeviceInput(device: camera)
        captureSession.beginConfiguration()
        defer { captureSession.commitConfiguration() }
        guard captureSession.canAddInput(input) else { throw AppFailure("the session refused \(camera.localizedName)") }
        captureSession.addInput(input)
        let metadataOutput = AVCaptureMetadataOutput()
        guard captureSession.canAddOutput(metadataOutput) else {
            throw AppFailure("the session refused a metadata output")
        }
        captureSession.addOutput(metadataOutput)
        metadataOutput.setMetadataObjectsDelegate(self, queue: .main)
        // Only after the output is in the session does it know which types it can read.
        let wanted: [AVMetadataObject.ObjectType] = [.qr, .ean13, .ean8, .code128, .dataMatrix]
        metadataOutput.metadataObjectTypes = wanted.filter(metadataOutput.availableMetadataObjectTypes.contains)
    }

    /// Runs the camera until a code is read.
    func scan() async -> AVMetadataMachineReadableCodeObject {
        let session = captureSession
        return await withCheckedContinuation { continuation in
            found = continuation
            sessionQueue.async { session.startRunning() }
        }
    }

    nonisolated func metadataOutput(
        _ output: AVCaptureMetadataOutput, didOutput metadataObjects: [AVMetadataObject],
        from connection: AVCaptureConnection
    ) {
        MainActor.assumeIsolated {
            guard let code = metadataObjects.first as? AVMetadataMachineReadableCodeObject, code.stringValue != nil,
                let continuation = found
            else { return }
            found = nil
            let session = captureSession
            sessionQueue.async { session.stopRunning() }
            continuation.resume(returning: code)
        }
    }

    /// `compat-apps qr-scanner OUT.json [CAMERA-UNIQUE-ID]`: writes the code's type, text and place in the frame.
    static func main(_ arguments: [String]) async throws {
        let arguments = Arguments(arguments)
        let report = try arguments.url(0, "the report's path")
        let scanner = QRScannerViewController()
        try scanner.configureSession(cameraID: arguments.optional(1))
        let code = await scanner.scan()
        let bounds = code.bounds
        try writeJSON(
            [
                "type": code.type.rawValue, "value": code.stringValue ?? "",
                "bounds": [bounds.origin.x, bounds.origin.y, bounds.width, bounds.height].map { Double($0) },
                "corners": code.corners.count,
            ], to: report)
    }
}
