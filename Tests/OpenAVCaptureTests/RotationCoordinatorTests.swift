import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing

/// `AVCaptureDevice.RotationCoordinator`: the angles for each way the machine is turned, key-value updates, the
/// preview angle with and without a layer, and a photo taken at the capture angle read back by exiftool.
@Suite(.serialized) struct RotationCoordinatorTests {
    @Test(
        "The capture angle follows the machine: portrait 90, landscapeLeft 0, landscapeRight 180, upside down 270",
        arguments: [
            (AVCaptureDeviceOrientationSource.Orientation.portrait, CGFloat(90)), (.landscapeLeft, 0),
            (.landscapeRight, 180), (.portraitUpsideDown, 270),
        ])
    func captureAngles(orientation: AVCaptureDeviceOrientationSource.Orientation, angle: CGFloat) {
        let source = AVCaptureDeviceOrientationSource()
        let coordinator = AVCaptureDevice.RotationCoordinator(
            device: VirtualDevices.back, previewLayer: nil, orientationSource: source)
        #expect(coordinator.videoRotationAngleForHorizonLevelCapture == 0)
        source.orientation = orientation
        #expect(coordinator.videoRotationAngleForHorizonLevelCapture == angle)
        #expect(coordinator.videoRotationAngleForHorizonLevelPreview == 0, "no preview layer: 0, as Apple's")
        let front = AVCaptureDevice.RotationCoordinator(
            device: VirtualDevices.front, previewLayer: nil, orientationSource: source)
        #expect(front.videoRotationAngleForHorizonLevelCapture == angle)
        #expect(coordinator.device === VirtualDevices.back)
    }

    @Test("Lying flat or unknown keeps the last angle")
    func flatKeepsTheLastAngle() {
        let source = AVCaptureDeviceOrientationSource(orientation: .portrait)
        let coordinator = AVCaptureDevice.RotationCoordinator(
            device: VirtualDevices.back, previewLayer: nil, orientationSource: source)
        #expect(coordinator.videoRotationAngleForHorizonLevelCapture == 90)
        source.orientation = .faceUp
        #expect(coordinator.videoRotationAngleForHorizonLevelCapture == 90)
        source.orientation = .landscapeRight
        source.orientation = .unknown
        #expect(coordinator.videoRotationAngleForHorizonLevelCapture == 180)
    }

    @Test("Both angles are key-value observable with Apple's call shape, and notify only real changes")
    func keyValueObservation() throws {
        let source = AVCaptureDeviceOrientationSource()
        let session = AVCaptureSession()
        let layer = AVCaptureVideoPreviewLayer(session: session)
        let coordinator = AVCaptureDevice.RotationCoordinator(
            device: VirtualDevices.back, previewLayer: layer, orientationSource: source)
        #expect(coordinator.previewLayer === layer)
        let seen = Mutex<(capture: [CGFloat], preview: [CGFloat])>(([], []))
        let captureToken = coordinator.observe(\.videoRotationAngleForHorizonLevelCapture, options: [.initial, .new]) {
            _, change in
            if let angle = change.newValue { seen.withLock { $0.capture.append(angle) } }
        }
        let previewToken = coordinator.observe(\.videoRotationAngleForHorizonLevelPreview, options: [.new]) {
            _, change in
            if let angle = change.newValue { seen.withLock { $0.preview.append(angle) } }
        }
        source.orientation = .portrait
        source.orientation = .faceDown
        source.orientation = .portrait
        source.orientation = .landscapeRight
        // An application locked in portrait: the preview stays at the portrait screen's angle, capture follows.
        source.interfaceOrientation = .portrait
        source.orientation = .landscapeLeft
        withExtendedLifetime((captureToken, previewToken)) {}
        #expect(seen.withLock { $0.capture } == [0, 90, 180, 0])
        #expect(seen.withLock { $0.preview } == [90, 180, 90])
        #expect(coordinator.videoRotationAngleForHorizonLevelPreview == 90)
    }

    @Test("A coordinator made with Apple's initializer follows the shared source")
    func sharedSource() {
        let coordinator = AVCaptureDevice.RotationCoordinator(device: VirtualDevices.back, previewLayer: nil)
        let shared = AVCaptureDeviceOrientationSource.shared
        let before = shared.orientation
        defer { shared.orientation = before }
        shared.orientation = .portraitUpsideDown
        #expect(coordinator.videoRotationAngleForHorizonLevelCapture == 270)
    }

    @Test("A photo taken at the capture angle of a portrait machine is tagged 'Rotate 90 CW' (exiftool)")
    func photoAtTheCaptureAngle() throws {
        let output = AVCapturePhotoOutput()
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
        let source = AVCaptureDeviceOrientationSource(orientation: .landscapeLeft)
        let coordinator = AVCaptureDevice.RotationCoordinator(
            device: VirtualDevices.back, previewLayer: nil, orientationSource: source)
        let connection = try #require(output.connection(with: .video))
        // What Apple's sample code does: apply the angle whenever it changes.
        let token = coordinator.observe(\.videoRotationAngleForHorizonLevelCapture, options: [.initial, .new]) {
            _, change in
            if let angle = change.newValue, connection.isVideoRotationAngleSupported(angle) {
                connection.videoRotationAngle = angle
            }
        }
        defer { token.invalidate() }
        source.orientation = .portrait
        #expect(connection.videoRotationAngle == 90)
        session.startRunning()
        defer { session.stopRunning() }
        let (photo, recorder) = takePhoto(output, AVCapturePhotoSettings())
        let taken = try #require(photo, "\(recorder.errors)")
        guard MediaTool.available([.exiftool], for: "RotationCoordinatorTests.photoAtTheCaptureAngle") else { return }
        let url = try scratchURL("portrait.jpg", suite: "rotation-tests")
        try #require(taken.fileDataRepresentation()).write(to: url)
        let report = try ExifToolReport(url)
        #expect(report.number("IFD0", "Orientation") == 6, "EXIF 6 is 'Rotate 90 CW'")
    }
}
