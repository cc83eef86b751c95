import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing

/// The older still output, as the seed "Capturing Still Images" drives it.
@Suite(.serialized) struct AVCaptureStillImageOutputTests {
    /// The seed's connection search: the first connection with a video port.
    static func videoConnection(of output: AVCaptureOutput) -> AVCaptureConnection? {
        for connection in output.connections {
            for port in connection.inputPorts where port.mediaType == .video { return connection }
        }
        return nil
    }

    @Test("The seed: find the video connection, capture asynchronously, read the EXIF attachment and the JPEG")
    func seedCapture() throws {
        let output = AVCaptureStillImageOutput()
        #expect(output.outputSettings[AVVideoCodecKey] as? AVVideoCodecType == .jpeg)
        #expect(output.availableImageDataCodecTypes == [.jpeg])
        #expect(
            output.availableImageDataCVPixelFormatTypes.first?.uint32Value
                == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
        let session = try makeSession(preset: .vga640x480, devices: [VirtualDevices.back], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let connection = try #require(Self.videoConnection(of: output))

        let (sample, error) = captureStill(output, from: connection)
        #expect(error == nil)
        let buffer = try #require(sample)
        #expect(buffer.formatDescription?.mediaSubType.rawValue == kCMVideoCodecType_JPEG)
        #expect(buffer.formatDescription?.dimensions.width == 640)
        #expect(buffer.presentationTimeStamp.isNumeric)

        let exif = try #require(
            CMGetAttachment(buffer, key: kCGImagePropertyExifDictionary, attachmentModeOut: nil) as? [String: Any])
        #expect(exif[kCGImagePropertyExifPixelXDimension] as? Int == 640)
        #expect(exif[kCGImagePropertyExifPixelYDimension] as? Int == 480)
        #expect((exif[kCGImagePropertyExifISOSpeedRatings] as? [Int])?.first ?? 0 > 0)
        #expect(exif[kCGImagePropertyExifFlash] as? Int == 0x10)  // back camera, flash off, not fired
        #expect((exif[kCGImagePropertyExifDateTimeOriginal] as? String)?.count == 19)
        let tiff = try #require(
            CMGetAttachment(buffer, key: kCGImagePropertyTIFFDictionary, attachmentModeOut: nil) as? [String: Any])
        #expect(tiff[kCGImagePropertyTIFFModel] as? String == "Virtual Back Camera")
        #expect(CMGetAttachment(buffer, key: kCGImagePropertyOrientation, attachmentModeOut: nil) as? Int == 1)

        let jpeg = try #require(AVCaptureStillImageOutput.jpegStillImageNSDataRepresentation(buffer))
        #expect(Array(jpeg.prefix(4)) == [0xFF, 0xD8, 0xFF, 0xE1])
        #expect(jpeg == buffer.dataBuffer?.dataBytes())
        #expect(jpeg.count == buffer.totalSampleSize)
    }

    @Test("isCapturingStillImage is observable: true while a still is taken, false after")
    func capturingIsObservable() throws {
        let output = AVCaptureStillImageOutput()
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let seen = Mutex<[Bool]>([])
        let observation = output.observe(\.isCapturingStillImage, options: [.new]) { _, change in
            seen.withLock { $0.append(change.newValue!) }
        }
        defer { observation.invalidate() }
        #expect(!output.isCapturingStillImage)
        _ = captureStill(output, from: try #require(output.connection(with: .video)))
        #expect(seen.withLock { $0 } == [true, false])
        #expect(!output.isCapturingStillImage)
    }

    @Test("Uncompressed stills: the pixels in the asked format, as captured, with the properties attached")
    func uncompressed() throws {
        let output = AVCaptureStillImageOutput()
        output.outputSettings = [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA]
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let connection = try #require(output.connection(with: .video))
        connection.videoRotationAngle = 90
        let (sample, _) = captureStill(output, from: connection)
        let image = try #require(sample?.imageBuffer)
        #expect(CVPixelBufferGetPixelFormatType(image) == kCVPixelFormatType_32BGRA)
        #expect(CVPixelBufferGetWidth(image) == 320)  // not turned: the orientation says how to show it
        #expect(CMGetAttachment(sample!, key: kCGImagePropertyOrientation, attachmentModeOut: nil) as? Int == 6)
    }

    @Test("The device's flashMode .on fires the flash for the still (the older API's way), .off does not")
    func deviceFlashMode() throws {
        let camera = VirtualDevices.back
        let controller = try #require(camera.virtualCamera)
        defer { controller.restoreDefaults() }
        let output = AVCaptureStillImageOutput()
        let session = try makeSession(preset: .qvga320x240, devices: [camera], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let connection = try #require(output.connection(with: .video))
        func flash(of mode: AVCaptureDevice.FlashMode) throws -> Int? {
            try camera.lockForConfiguration()
            camera.flashMode = mode
            camera.unlockForConfiguration()
            let buffer = try #require(captureStill(output, from: connection).sample)
            let exif =
                CMGetAttachment(buffer, key: kCGImagePropertyExifDictionary, attachmentModeOut: nil) as? [String: Any]
            return exif?[kCGImagePropertyExifFlash] as? Int
        }
        #expect(try flash(of: .on) == 0x09)
        #expect(try flash(of: .off) == 0x10)
        #expect(try flash(of: .auto) == 0x18)  // a normal scene: auto does not fire
    }

    @Test("A still asked of a stopped session fails with AVError.sessionNotRunning")
    func notRunning() throws {
        let output = AVCaptureStillImageOutput()
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [output])
        defer { withExtendedLifetime(session) {} }
        let (sample, error) = captureStill(output, from: try #require(output.connection(with: .video)))
        #expect(sample == nil)
        #expect((error as? AVError)?.code == .sessionNotRunning)
    }

    @Test("Stills taken back to back each arrive, in order, from successive frames")
    func severalStills() throws {
        let output = AVCaptureStillImageOutput()
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let connection = try #require(output.connection(with: .video))
        var times: [CMTime] = []
        for _ in 0..<3 {
            let (sample, error) = captureStill(output, from: connection)
            #expect(error == nil)
            times.append(try #require(sample).presentationTimeStamp)
        }
        #expect(times == times.sorted() && Set(times).count == 3)
    }

    // MARK: Misuse traps, as Apple raises

    @Test("outputSettings with a codec other than JPEG trap, naming the rule")
    func badCodecTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            AVCaptureStillImageOutput().outputSettings = [AVVideoCodecKey: AVVideoCodecType.h264]
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("availableImageDataCodecTypes"), "\(message)")
        await #expect(processExitsWith: .failure) {
            AVCaptureStillImageOutput().outputSettings = [kCVPixelBufferPixelFormatTypeKey: 0x1234_5678]
        }
    }

    @Test("Capturing from a connection of another output traps")
    func foreignConnectionTraps() async {
        await #expect(processExitsWith: .failure) {
            let still = AVCaptureStillImageOutput()
            let other = AVCaptureVideoDataOutput()
            let session = try makeSession(devices: [VirtualDevices.back], outputs: [still, other])
            defer { withExtendedLifetime(session) {} }
            still.captureStillImageAsynchronously(from: other.connection(with: .video)!) { _, _ in }
        }
    }

    @Test("Capturing from a disabled connection traps")
    func disabledConnectionTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let still = AVCaptureStillImageOutput()
            let session = try makeSession(devices: [VirtualDevices.back], outputs: [still])
            defer { withExtendedLifetime(session) {} }
            let connection = still.connection(with: .video)!
            connection.isEnabled = false
            still.captureStillImageAsynchronously(from: connection) { _, _ in }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("active, enabled connection"), "\(message)")
    }

    @Test("jpegStillImageNSDataRepresentation of a buffer without JPEG traps")
    func notJPEGTraps() async {
        await #expect(processExitsWith: .failure) {
            var pixels: CVPixelBuffer?
            CVPixelBufferCreate(nil, 16, 16, kCVPixelFormatType_32BGRA, nil, &pixels)
            let sample = try CMSampleBuffer(
                imageBuffer: pixels!, formatDescription: CMFormatDescription(imageBuffer: pixels!),
                sampleTiming: CMSampleTimingInfo())
            _ = AVCaptureStillImageOutput.jpegStillImageNSDataRepresentation(sample)
        }
    }
}
