import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing

/// Deferred photo delivery: a proxy with a quick preview as soon as the frame is taken, the finished file from the
/// proxy later, read back by exiftool.
@Suite(.serialized) struct DeferredPhotoDeliveryTests {
    @Test("Off by default; supported in a session with a camera, not outside one")
    func defaults() throws {
        #expect(!AVCapturePhotoOutput().isAutoDeferredPhotoDeliverySupported)
        let output = AVCapturePhotoOutput()
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [output])
        defer { withExtendedLifetime(session) {} }
        #expect(output.isAutoDeferredPhotoDeliverySupported && !output.isAutoDeferredPhotoDeliveryEnabled)
        output.isAutoDeferredPhotoDeliveryEnabled = true
        #expect(output.isAutoDeferredPhotoDeliveryEnabled)
    }

    @Test("A JPEG photo comes as a proxy with a quarter-size preview; its file is the full photo (exiftool)")
    func proxyThenFile() throws {
        let output = AVCapturePhotoOutput()
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
        output.isAutoDeferredPhotoDeliveryEnabled = true
        session.startRunning()
        defer { session.stopRunning() }
        let settings = AVCapturePhotoSettings()
        let delegate = DeferredRecorder()
        output.capturePhoto(with: settings, delegate: delegate)
        #expect(delegate.waitForFinish())
        let id = settings.uniqueID
        #expect(delegate.events == ["willBegin", "willCapture", "didCapture", "deferredProxy", "didFinishCapture"])
        let proxy = try #require(delegate.proxy)
        #expect(proxy.resolvedSettings.uniqueID == id)
        #expect(proxy.timestamp.isNumeric)
        let preview = try #require(proxy.previewPixelBuffer)
        #expect(CVPixelBufferGetPixelFormatType(preview) == kCVPixelFormatType_32BGRA)
        #expect(CVPixelBufferGetWidth(preview) == 80 && CVPixelBufferGetHeight(preview) == 60)
        let proxySize = proxy.resolvedSettings.deferredPhotoProxyDimensions
        #expect(proxySize.width == 80 && proxySize.height == 60)
        #expect(proxy.resolvedSettings.photoDimensions.width == 320)

        let file = try #require(proxy.fileDataRepresentation())
        #expect(proxy.isProcessingFinished)
        #expect(Array(file.prefix(2)) == [0xFF, 0xD8])
        guard MediaTool.available([.exiftool], for: "DeferredPhotoDeliveryTests.proxyThenFile") else { return }
        let url = try scratchURL("deferred.jpg", suite: "deferred-tests")
        try file.write(to: url)
        let report = try ExifToolReport(url)
        #expect(report.warnings.isEmpty, "\(report.warnings)")
        #expect(report.number("File", "ImageWidth") == 320 && report.number("File", "ImageHeight") == 240)
        #expect(report.string("IFD0", "Make") == VirtualDevices.back.manufacturer)
        #expect(report.number("ExifIFD", "ExifImageWidth") == 320)
    }

    @Test("An uncompressed photo is never deferred: didFinishProcessingPhoto gets its pixels")
    func pixelsAreNotDeferred() throws {
        let output = AVCapturePhotoOutput()
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
        output.isAutoDeferredPhotoDeliveryEnabled = true
        session.startRunning()
        defer { session.stopRunning() }
        let settings = AVCapturePhotoSettings(format: [
            kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
        ])
        let (photo, recorder) = takePhoto(output, settings)
        #expect(photo?.pixelBuffer != nil, "\(recorder.errors)")
        #expect(photo?.resolvedSettings.deferredPhotoProxyDimensions.width == 0)
    }
}

/// Records the callbacks of a deferred capture by name, and the proxy.
final class DeferredRecorder: NSObject, AVCapturePhotoCaptureDelegate, @unchecked Sendable {
    private let state = Mutex<(events: [String], proxy: AVCaptureDeferredPhotoProxy?)>(([], nil))
    private let finished = DispatchSemaphore(value: 0)

    var events: [String] { state.withLock { $0.events } }
    var proxy: AVCaptureDeferredPhotoProxy? { state.withLock { $0.proxy } }
    func waitForFinish() -> Bool { finished.wait(timeout: .now() + 20) == .success }

    private func note(_ event: String) { state.withLock { $0.events.append(event) } }

    func photoOutput(_ output: AVCapturePhotoOutput, willBeginCaptureFor resolvedSettings: AVCaptureResolvedPhotoSettings) {
        note("willBegin")
    }

    func photoOutput(_ output: AVCapturePhotoOutput, willCapturePhotoFor resolvedSettings: AVCaptureResolvedPhotoSettings) {
        note("willCapture")
    }

    func photoOutput(_ output: AVCapturePhotoOutput, didCapturePhotoFor resolvedSettings: AVCaptureResolvedPhotoSettings) {
        note("didCapture")
    }

    func photoOutput(_ output: AVCapturePhotoOutput, didFinishProcessingPhoto photo: AVCapturePhoto, error: (any Error)?) {
        note("didFinishProcessing")
    }

    func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishCapturingDeferredPhotoProxy deferredPhotoProxy: AVCaptureDeferredPhotoProxy?,
        error: (any Error)?
    ) {
        state.withLock {
            $0.events.append(error == nil ? "deferredProxy" : "deferredProxyFailed")
            $0.proxy = deferredPhotoProxy
        }
    }

    func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishCaptureFor resolvedSettings: AVCaptureResolvedPhotoSettings,
        error: (any Error)?
    ) {
        note("didFinishCapture")
        finished.signal()
    }
}
