import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing

/// A session subclass in another module, as apps write them: only possible because the class is `open`.
private final class RecordingSession: AVCaptureSession, @unchecked Sendable {
    private(set) var configuredCameras: [String] = []

    func configure(camera: AVCaptureDevice) throws {
        beginConfiguration()
        defer { commitConfiguration() }
        let input = try AVCaptureDeviceInput(device: camera)
        if canAddInput(input) {
            addInput(input)
            configuredCameras.append(camera.localizedName)
        }
    }
}

/// A video data output subclass, as some camera libraries keep their delegate state in one.
private final class TaggedVideoOutput: AVCaptureVideoDataOutput, @unchecked Sendable {
    let tag = "preview"
}

/// The names, shapes and members of Apple's API that capture code from other projects uses (issue 21), checked
/// through the public API against Apple's documented behaviour for a camera of the kind Linux has.
@Suite struct AppleAPIShapeTests {
    @Test func authorizationStatusIsTopLevelAndTheNestedNameStillWorks() {
        let status: AVAuthorizationStatus = AVCaptureDevice.authorizationStatus(for: .video)
        #expect(status == .authorized)
        let nested: AVCaptureDevice.AuthorizationStatus = status
        #expect(nested.rawValue == 3)
        #expect(AVAuthorizationStatus(rawValue: 0) == .notDetermined)
        #expect(AVAuthorizationStatus(rawValue: 2) == .denied)
    }

    @Test func colorSpacesAreTypedAndOnlySRGBIsOffered() throws {
        let camera = VirtualDevices.back
        for format in camera.formats {
            let spaces: [AVCaptureColorSpace] = format.supportedColorSpaces
            #expect(spaces == [.sRGB])
        }
        #expect(camera.activeColorSpace == .sRGB)
        try camera.lockForConfiguration()
        camera.activeColorSpace = .sRGB
        camera.unlockForConfiguration()
        #expect(camera.activeColorSpace == .sRGB)
    }

    @Test func appsCanSubclassTheSessionAndOutputs() throws {
        let session = RecordingSession()
        try session.configure(camera: VirtualDevices.front)
        let output = TaggedVideoOutput()
        #expect(session.canAddOutput(output))
        session.addOutput(output)
        #expect(session.configuredCameras == ["Virtual Front Camera"])
        #expect(output.connection(with: .video) != nil)
        #expect(output.tag == "preview")
        let asObject: NSObject = session
        #expect(asObject.isEqual(session))
    }

    @Test func thePixelBufferAdaptorIsAnNSObject() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("adaptor-\(UUID().uuidString).mov")
        let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
        let input = AVAssetWriterInput(
            mediaType: .video,
            outputSettings: [AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 320, AVVideoHeightKey: 240])
        writer.add(input)
        let adaptor = AVAssetWriterInputPixelBufferAdaptor(
            assetWriterInput: input,
            sourcePixelBufferAttributes: [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA])
        let object: any NSObjectProtocol = adaptor
        #expect(object.isEqual(adaptor))
        #expect(adaptor.assetWriterInput === input)
        #expect(input.naturalSize == .zero)
        input.naturalSize = CGSize(width: 320, height: 240)
        #expect(input.naturalSize == CGSize(width: 320, height: 240))
    }

    @Test func preferredCameraFollowsTheUsersChoiceWhileItIsConnected() throws {
        // The choice cannot be cleared (setting nil has no effect, as AVCaptureDevice.h says), so the test starts by
        // choosing the back camera rather than assuming no choice.
        AVCaptureDevice.userPreferredCamera = VirtualDevices.back
        defer { AVCaptureDevice.userPreferredCamera = VirtualDevices.back }
        #expect(AVCaptureDevice.systemPreferredCamera === VirtualDevices.back)
        let front = VirtualDevices.front
        AVCaptureDevice.userPreferredCamera = front
        #expect(AVCaptureDevice.systemPreferredCamera === front)
        let controller = try #require(front.virtualCamera)
        defer { controller.restoreDefaults() }
        controller.unplug()
        #expect(AVCaptureDevice.systemPreferredCamera === VirtualDevices.back)
        controller.replug()
        #expect(AVCaptureDevice.systemPreferredCamera === front)
    }

    @Test func lensFactsAreApplesAnswersForAPhysicalCameraThatReportsNone() {
        for camera in [VirtualDevices.back, VirtualDevices.front] {
            #expect(camera.minimumFocusDistance == -1)
            #expect(camera.lensAperture == 0)
            #expect(camera.constituentDevices.isEmpty)
            #expect(camera.virtualDeviceSwitchOverVideoZoomFactors.isEmpty)
            #expect(!camera.isVirtualDevice)
        }
    }

    @Test func formatsDescribeAutoFocusMultiCamAndPhotoSizes() throws {
        let back = VirtualDevices.back
        let focuses = back.isFocusModeSupported(.continuousAutoFocus) || back.isFocusModeSupported(.autoFocus)
        #expect(focuses)
        for format in back.formats {
            #expect(format.autoFocusSystem == .contrastDetection)
            #expect(format.isMultiCamSupported, "every camera format runs in a multi-camera session")
            let own = CMVideoFormatDescriptionGetDimensions(format.formatDescription)
            #expect(format.supportedMaxPhotoDimensions.first == own)
        }
        let photoSizes = back.formats.flatMap(\.supportedMaxPhotoDimensions)
        #expect(photoSizes.contains(CMVideoDimensions(width: 4032, height: 3024)))
        let front = VirtualDevices.front
        let frontFocuses = front.isFocusModeSupported(.continuousAutoFocus) || front.isFocusModeSupported(.autoFocus)
        #expect(front.formats.allSatisfy { $0.autoFocusSystem == (frontFocuses ? .contrastDetection : .none) })
        let microphoneFormat = try #require(VirtualDevices.microphone.formats.first)
        #expect(microphoneFormat.autoFocusSystem == .none)
        #expect(microphoneFormat.supportedMaxPhotoDimensions.isEmpty)
    }

    @Test func depthExistsAndReportsNoDepth() throws {
        let camera = VirtualDevices.back
        #expect(camera.formats.allSatisfy { $0.supportedDepthDataFormats.isEmpty })
        #expect(camera.activeDepthDataFormat == nil)
        try camera.lockForConfiguration()
        camera.activeDepthDataFormat = nil
        camera.unlockForConfiguration()
        let depth = AVCaptureDepthDataOutput()
        #expect(depth.isFilteringEnabled && depth.alwaysDiscardsLateDepthData)
        let session = try makeSession(devices: [camera], outputs: [])
        #expect(!session.canAddOutput(depth))
        #expect(AVCaptureSession().canAddOutput(AVCaptureVideoDataOutput()))
        var map: CVPixelBuffer?
        #expect(CVPixelBufferCreate(nil, 64, 48, kCVPixelFormatType_DepthFloat32, nil, &map) == kCVReturnSuccess)
        let depthData = AVDepthData(depthDataMap: try #require(map), accuracy: .relative, quality: .low, isFiltered: false)
        #expect(depthData.depthDataType == kCVPixelFormatType_DepthFloat32)
        #expect(CVPixelBufferGetBytesPerRow(depthData.depthDataMap) >= 64 * 4)
    }

    @Test func photoQualityPrioritizationHasApplesDefaultsAndOrder() {
        let output = AVCapturePhotoOutput()
        #expect(output.maxPhotoQualityPrioritization == .balanced)
        let settings = AVCapturePhotoSettings()
        #expect(settings.photoQualityPrioritization == .balanced)
        #expect(AVCapturePhotoOutput.QualityPrioritization.speed < .balanced)
        #expect(AVCapturePhotoOutput.QualityPrioritization.quality.rawValue == 3)
        output.maxPhotoQualityPrioritization = .quality
        #expect(output.maxPhotoQualityPrioritization == .quality)
        #expect(AVFileType.avci.rawValue == "public.avci")
        #expect(!output.availablePhotoFileTypes.contains(.avci))
    }

    @Test func askingForMoreQualityThanTheOutputAllowsTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            final class Ignore: NSObject, AVCapturePhotoCaptureDelegate {}
            let output = AVCapturePhotoOutput()
            let session = try! makeSession(devices: [AVCaptureDevice.default(for: .video)!], outputs: [output])
            session.startRunning()
            let settings = AVCapturePhotoSettings()
            settings.photoQualityPrioritization = .quality
            output.capturePhoto(with: settings, delegate: Ignore())
        }.map { result in
            #expect(
                String(decoding: result.standardErrorContent, as: UTF8.self).contains("maxPhotoQualityPrioritization"))
        }
    }

    @Test func dataDroppedReasonHasApplesRawValues() {
        #expect(AVCaptureOutput.DataDroppedReason.none.rawValue == 0)
        #expect(AVCaptureOutput.DataDroppedReason.lateData.rawValue == 1)
        #expect(AVCaptureOutput.DataDroppedReason.outOfBuffers.rawValue == 2)
        #expect(AVCaptureOutput.DataDroppedReason.discontinuity.rawValue == 3)
    }

    @Test func discoverySessionTellsObserversWhenACameraComesAndGoes() throws {
        let discovery = AVCaptureDevice.DiscoverySession(
            deviceTypes: [.builtInWideAngleCamera], mediaType: .video, position: .unspecified)
        let seen = Mutex<[[String]]>([])
        let observation = discovery.observe(\.devices, options: [.initial, .new]) { _, change in
            if let devices = change.newValue { seen.withLock { $0.append(devices.map(\.localizedName)) } }
        }
        defer { observation.invalidate() }
        let controller = try #require(VirtualDevices.front.virtualCamera)
        defer { controller.restoreDefaults() }
        controller.unplug()
        controller.replug()
        #expect(
            seen.withLock { $0 } == [
                ["Virtual Back Camera", "Virtual Front Camera"], ["Virtual Back Camera"],
                ["Virtual Back Camera", "Virtual Front Camera"],
            ])
    }

    @Test func sizesAndRectsTransformAsCoreGraphicsDoes() {
        let quarterTurn = CGAffineTransform(rotationAngle: .pi / 2)
        let turned = CGSize(width: 1920, height: 1080).applying(quarterTurn)
        #expect(abs(turned.width) == 1080 && abs(turned.height) == 1920)
        let moved = CGSize(width: 4, height: 3).applying(CGAffineTransform(translationX: 100, y: 100))
        #expect(moved == CGSize(width: 4, height: 3))
        let rect = CGRect(x: 10, y: 20, width: 30, height: 40).applying(quarterTurn)
        #expect(rect == CGRect(x: -60, y: 10, width: 40, height: 30))
    }

    @Test func subjectAreaMonitoringIsKeptUnderTheLock() throws {
        let camera = VirtualDevices.back
        #expect(!camera.isSubjectAreaChangeMonitoringEnabled)
        try camera.lockForConfiguration()
        camera.isSubjectAreaChangeMonitoringEnabled = true
        camera.unlockForConfiguration()
        #expect(camera.isSubjectAreaChangeMonitoringEnabled)
        try camera.lockForConfiguration()
        camera.isSubjectAreaChangeMonitoringEnabled = false
        camera.unlockForConfiguration()
        #expect(AVCaptureDevice.subjectAreaDidChangeNotification.rawValue == "AVCaptureDeviceSubjectAreaDidChangeNotification")
    }
}
