import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import TestSupport
import Testing

/// `AVCaptureMetadataOutput` reading codes a test holds in front of the virtual back camera.
@Suite(.serialized) struct AVCaptureMetadataOutputTests {
    /// A card covering a square 192 x 192 px in a 640 x 480 frame, right of centre.
    static let card = CGRect(x: 0.55, y: 0.3, width: 0.3, height: 0.4)

    /// A running session of the back camera at 640 x 480 with a metadata output for `types` and its recorder.
    private func reading(
        _ types: [AVMetadataObject.ObjectType], rectOfInterest: CGRect? = nil, recorder: MetadataRecorder = MetadataRecorder(),
        pixelFormat: FourCharCode? = nil
    ) throws -> (AVCaptureSession, AVCaptureMetadataOutput, MetadataRecorder) {
        let camera = VirtualDevices.back
        if let pixelFormat {
            try camera.lockForConfiguration()
            camera.activeFormat = try #require(
                camera.formats.first { format in
                    let size = CMVideoFormatDescriptionGetDimensions(format.formatDescription)
                    return size.width == 640 && size.height == 480
                        && CMFormatDescriptionGetMediaSubType(format.formatDescription) == pixelFormat
                })
            camera.unlockForConfiguration()
        }
        let output = AVCaptureMetadataOutput()
        output.setMetadataObjectsDelegate(recorder, queue: DispatchQueue(label: "metadata delegate"))
        let session = try makeSession(
            preset: pixelFormat == nil ? .vga640x480 : .inputPriority, devices: [camera], outputs: [output])
        output.metadataObjectTypes = types
        if let rectOfInterest { output.rectOfInterest = rectOfInterest }
        session.startRunning()
        return (session, output, recorder)
    }

    private var controller: VirtualCameraController {
        get throws { try #require(VirtualDevices.back.virtualCamera) }
    }

    @Test func availableTypesAppearOnceConnectedToACamera() throws {
        let output = AVCaptureMetadataOutput()
        #expect(output.availableMetadataObjectTypes.isEmpty)
        #expect(output.metadataObjectTypes.isEmpty)
        #expect(output.rectOfInterest == CGRect(x: 0, y: 0, width: 1, height: 1))
        _ = try makeSession(devices: [VirtualDevices.back], outputs: [output])
        let available = output.availableMetadataObjectTypes
        for type in [AVMetadataObject.ObjectType.qr, .aztec, .dataMatrix, .pdf417, .ean8, .ean13, .upce, .code39,
            .code93, .code128, .interleaved2of5, .itf14]
        {
            #expect(available.contains(type), "\(type.rawValue)")
        }
        #expect(!available.contains(.face))
    }

    @Test func aTypeThatIsNotAvailableTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            AVCaptureMetadataOutput().metadataObjectTypes = [.qr]
        }.map { result in
            #expect(String(decoding: result.standardErrorContent, as: UTF8.self).contains("availableMetadataObjectTypes"))
        }
    }

    @Test func aQRCodeInFrontOfTheCameraIsReadWithItsTextAndCorners() throws {
        let controller = try controller
        defer { controller.restoreDefaults() }
        controller.showCode("https://example.org/openavcapture", type: .qr, in: Self.card)
        let (session, _, recorder) = try reading([.qr])
        defer { session.stopRunning() }
        let code = try #require(recorder.waitForCode())
        #expect(code.type == .qr)
        #expect(code.text == "https://example.org/openavcapture")
        #expect(code.corners.count == 4)
        // The symbol fills the card's picture area; zxing's corners lie on its finder patterns' outer edges.
        let tolerance = 0.03
        #expect(abs(code.bounds.minX - Self.card.minX) < tolerance, "\(code.bounds)")
        #expect(abs(code.bounds.maxX - Self.card.maxX) < tolerance, "\(code.bounds)")
        #expect(abs(code.bounds.minY - Self.card.minY) < tolerance, "\(code.bounds)")
        #expect(abs(code.bounds.maxY - Self.card.maxY) < tolerance, "\(code.bounds)")
        let topLeft = try #require(code.corners.first)
        #expect(abs(topLeft.x - Self.card.minX) < tolerance && abs(topLeft.y - Self.card.minY) < tolerance)
    }

    @Test func aYUYVFormatIsReadInPlace() throws {
        let controller = try controller
        defer { controller.restoreDefaults() }
        controller.showCode("YUYV", type: .qr, in: Self.card)
        let (session, _, recorder) = try reading([.qr], pixelFormat: kCVPixelFormatType_422YpCbCr8_yuvs)
        defer {
            session.stopRunning()
            session.sessionPreset = .high
        }
        #expect(recorder.waitForCode()?.text == "YUYV")
    }

    static let samples: [(AVMetadataObject.ObjectType, String, String)] = [
        (.aztec, "Aztec 2024", "Aztec 2024"), (.dataMatrix, "DM-42", "DM-42"), (.pdf417, "PDF417 sample", "PDF417 sample"),
        (.ean8, "96385074", "96385074"), (.ean13, "5901234123457", "5901234123457"), (.upce, "01234565", "01234565"),
        (.code39, "CODE39", "CODE39"), (.code93, "CODE93", "CODE93"), (.code128, "Code 128", "Code 128"),
        (.itf14, "00012345678905", "00012345678905"), (.interleaved2of5, "123456", "123456"),
    ]

    @Test(arguments: samples.indices)
    func everyOfferedSymbologyIsReadLive(_ index: Int) throws {
        let (type, text, expected) = Self.samples[index]
        let controller = try controller
        defer { controller.restoreDefaults() }
        let isMatrix = [.aztec, .dataMatrix].contains(type)
        controller.showCode(
            text, type: type,
            in: isMatrix ? Self.card : CGRect(x: 0.1, y: 0.35, width: 0.8, height: type == .pdf417 ? 0.4 : 0.25))
        let (session, _, recorder) = try reading([type])
        defer { session.stopRunning() }
        let code = try #require(recorder.waitForCode(), "\(type.rawValue) not read")
        #expect(code.type == type)
        #expect(code.text == expected)
    }

    @Test func typesNotAskedForAreNotReported() throws {
        let controller = try controller
        defer { controller.restoreDefaults() }
        controller.showCode("not wanted", type: .qr, in: Self.card)
        let (session, output, recorder) = try reading([.ean13])
        defer { session.stopRunning() }
        #expect(waitUntil { output.analysisStatistics.analysed >= 10 })
        #expect(recorder.received.isEmpty)
    }

    @Test func theRectOfInterestLimitsWhereCodesAreLookedFor() throws {
        let controller = try controller
        defer { controller.restoreDefaults() }
        controller.showCode("left out", type: .qr, in: Self.card)
        let (session, output, recorder) = try reading([.qr], rectOfInterest: CGRect(x: 0, y: 0, width: 0.5, height: 1))
        #expect(waitUntil { output.analysisStatistics.analysed >= 10 })
        #expect(recorder.received.isEmpty)
        session.stopRunning()
        let (inside, _, insideRecorder) = try reading([.qr], rectOfInterest: CGRect(x: 0.5, y: 0.2, width: 0.45, height: 0.6))
        defer { inside.stopRunning() }
        let code = try #require(insideRecorder.waitForCode())
        #expect(code.text == "left out")
        // Reported in the output's coordinates, not the rectangle's.
        #expect(abs(code.bounds.minX - Self.card.minX) < 0.03)
    }

    @Test func codesThatGoAwayAreReportedOnceAsAnEmptyArray() throws {
        let controller = try controller
        defer { controller.restoreDefaults() }
        controller.showCode("here and gone", type: .qr, in: Self.card)
        let (session, output, recorder) = try reading([.qr])
        defer { session.stopRunning() }
        _ = try #require(recorder.waitForCode())
        controller.hideCode()
        #expect(waitUntil { recorder.received.last?.objects.isEmpty == true })
        let analysed = output.analysisStatistics.analysed
        #expect(waitUntil { output.analysisStatistics.analysed >= analysed + 10 })
        #expect(recorder.received.filter(\.objects.isEmpty).count == 1)
    }

    @Test func framesArrivingWhileOneIsDeliveredAreSkippedNotQueued() throws {
        let controller = try controller
        defer { controller.restoreDefaults() }
        controller.showCode("slow delegate", type: .qr, in: Self.card)
        let recorder = MetadataRecorder(holdingFirstDelivery: true)
        let (session, output, _) = try reading([.qr], recorder: recorder)
        defer { session.stopRunning() }
        #expect(recorder.waitForCode() != nil)
        // The delegate is held: every frame now is skipped, and only the held one counts as analysed.
        let analysed = output.analysisStatistics.analysed
        #expect(waitUntil { output.analysisStatistics.skipped >= 10 })
        #expect(output.analysisStatistics.analysed == analysed)
        #expect(recorder.received.count == 1)
        recorder.releaseFirstDelivery()
        #expect(waitUntil { recorder.received.count >= 3 })
    }

    @Test func objectsConvertToTheConnectionAndThePreviewLayer() throws {
        let controller = try controller
        defer { controller.restoreDefaults() }
        controller.showCode("geometry", type: .qr, in: Self.card)
        let (session, output, recorder) = try reading([.qr])
        defer { session.stopRunning() }
        _ = try #require(recorder.waitForCode())
        let object = try #require(recorder.lastMetadataObjects.first as? AVMetadataMachineReadableCodeObject)
        let connection = try #require(output.connection(with: .video))

        let layer = AVCaptureVideoPreviewLayer(session: session)
        layer.videoGravity = .resize
        layer.frame = CGRect(x: 0, y: 0, width: 640, height: 480)
        let shown = try #require(layer.transformedMetadataObject(for: object) as? AVMetadataMachineReadableCodeObject)
        #expect(shown.stringValue == "geometry")
        for (corner, normalized) in zip(shown.corners, object.corners) {
            #expect(abs(corner.x - normalized.x * 640) < 1e-6 && abs(corner.y - normalized.y * 480) < 1e-6)
        }
        let back = layer.metadataOutputRectConverted(fromLayerRect: shown.bounds)
        for (converted, original) in [(back.minX, object.bounds.minX), (back.minY, object.bounds.minY),
            (back.maxX, object.bounds.maxX), (back.maxY, object.bounds.maxY)]
        {
            #expect(abs(converted - original) < 1e-5)
        }

        let unturned = try #require(output.transformedMetadataObject(for: object, connection: connection))
        #expect(unturned.bounds == object.bounds)
        connection.videoRotationAngle = 90
        let turned = try #require(
            output.transformedMetadataObject(for: object, connection: connection) as? AVMetadataMachineReadableCodeObject)
        let first = try #require(object.corners.first)
        #expect(turned.corners.first == CGPoint(x: 1 - first.y, y: first.x))
        connection.videoRotationAngle = 0
    }
}

