import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing
import TestSupport

/// The photo output: Apple's delegate order, settings rules, flash against scene light, orientation, sizes.
/// Each test on virtual devices of its own, so the tests run in parallel (`Tests/suites-parallel.txt`).
@Suite(.ownVirtualDevices) struct AVCapturePhotoOutputTests {
    @Test("The delegate hears willBegin, willCapture, didCapture, didFinishProcessing, didFinishCapture, in order")
    func delegateOrder() throws {
        let output = AVCapturePhotoOutput()
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let settings = AVCapturePhotoSettings()
        let (photo, recorder) = takePhoto(output, settings)
        let id = settings.uniqueID
        #expect(
            recorder.events == [
                .willBegin(id), .willCapture(id), .didCapture(id), .didFinishProcessing(id, failed: false),
                .didFinishCapture(id, failed: false),
            ])
        let taken = try #require(photo)
        #expect(taken.resolvedSettings.uniqueID == id)
        #expect(taken.resolvedSettings.photoDimensions.width == 640)
        #expect(taken.resolvedSettings.expectedPhotoCount == 1)
        #expect(taken.timestamp.isNumeric)
        #expect(taken.pixelBuffer == nil)
        let file = try #require(taken.fileDataRepresentation())
        #expect(Array(file.prefix(2)) == [0xFF, 0xD8])
        let exif = try #require(taken.metadata[kCGImagePropertyExifDictionary] as? [String: Any])
        #expect(exif[kCGImagePropertyExifPixelXDimension] as? Int == 640)
        #expect(settings.processedFileType == .jpg)
    }

    @Test("A stopped session: didFinishProcessingPhoto and didFinishCapture carry AVError.sessionNotRunning")
    func notRunning() throws {
        let output = AVCapturePhotoOutput()
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [output])
        defer { withExtendedLifetime(session) {} }
        let settings = AVCapturePhotoSettings()
        let (photo, recorder) = takePhoto(output, settings)
        #expect(photo == nil)
        #expect((recorder.errors.first as? AVError)?.code == .sessionNotRunning)
        let id = settings.uniqueID
        #expect(
            recorder.events == [
                .willBegin(id), .didFinishProcessing(id, failed: true), .didFinishCapture(id, failed: true),
            ])
    }

    @Test("Capabilities: codecs, pixel formats, flash modes of the back and front cameras")
    func capabilities() throws {
        let back = AVCapturePhotoOutput()
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [back])
        defer { withExtendedLifetime(session) {} }
        #expect(back.availablePhotoCodecTypes.first == .jpeg)
        #expect(back.availablePhotoPixelFormatTypes.contains(kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange))
        #expect(back.supportedFlashModes == [.off, .on, .auto])
        let front = AVCapturePhotoOutput()
        let frontSession = try makeSession(devices: [VirtualDevices.front], outputs: [front])
        defer { withExtendedLifetime(frontSession) {} }
        #expect(front.supportedFlashModes == [.off])
        #expect(!VirtualDevices.front.hasFlash)
    }

    @Test(
        "The connection's orientation becomes the EXIF orientation; the pixels stay as captured",
        arguments: [
            (0, false, 1), (90, false, 6), (180, false, 3), (270, false, 8), (0, true, 2), (90, true, 5),
        ])
    func orientation(angle: Int, mirrored: Bool, expected: Int) throws {
        let output = AVCapturePhotoOutput()
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
        let connection = try #require(output.connection(with: .video))
        connection.videoRotationAngle = CGFloat(angle)
        connection.isVideoMirrored = mirrored
        session.startRunning()
        defer { session.stopRunning() }
        let (photo, _) = takePhoto(
            output,
            AVCapturePhotoSettings(format: [
                kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            ]))
        let taken = try #require(photo)
        #expect(taken.metadata[kCGImagePropertyOrientation] as? Int == expected)
        #expect(
            (taken.metadata[kCGImagePropertyTIFFDictionary] as? [String: Any])?[kCGImagePropertyTIFFOrientation] as? Int
                == expected)
        let pixels = try #require(taken.pixelBuffer)
        #expect(CVPixelBufferGetWidth(pixels) == 320 && CVPixelBufferGetHeight(pixels) == 240)
        // The frame index code reads only in the unturned, unmirrored picture.
        #expect(VirtualFrameReader.readFrameIndex(from: pixels) != nil || VirtualFrameReader.isFlashFrame(pixels))
    }

    @Test("The .photo preset takes photos in the device's photo format, 4032x3024; other presets the video size")
    func photoPresetSize() throws {
        let output = AVCapturePhotoOutput()
        let session = try makeSession(preset: .photo, devices: [VirtualDevices.back], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let (photo, _) = takePhoto(output, AVCapturePhotoSettings())
        let taken = try #require(photo)
        #expect(taken.resolvedSettings.photoDimensions.width == 4032)
        #expect(taken.resolvedSettings.photoDimensions.height == 3024)
        #expect(taken.metadata[kCGImagePropertyPixelWidth] as? Int == 4032)
    }

    @Test("A location given as Apple's {GPS} metadata comes back in the photo's metadata")
    func location() throws {
        let output = AVCapturePhotoOutput()
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let settings = AVCapturePhotoSettings()
        settings.metadata = [
            kCGImagePropertyGPSDictionary: [
                kCGImagePropertyGPSLatitude: 51.5007, kCGImagePropertyGPSLatitudeRef: "N",
                kCGImagePropertyGPSLongitude: 0.1246, kCGImagePropertyGPSLongitudeRef: "W",
                kCGImagePropertyGPSAltitude: 12.5, kCGImagePropertyGPSAltitudeRef: 0,
            ] as [String: Any]
        ]
        let (photo, _) = takePhoto(output, settings)
        let taken = try #require(photo)
        let gps = try #require(taken.metadata[kCGImagePropertyGPSDictionary] as? [String: Any])
        #expect(gps[kCGImagePropertyGPSLatitude] as? Double == 51.5007)
        #expect(gps[kCGImagePropertyGPSLongitudeRef] as? String == "W")
        #expect(gps[kCGImagePropertyGPSAltitude] as? Double == 12.5)
    }

    @Test("A {GPS} position not a number or out of range gives no location, a bad altitude none (NaN trapped)")
    // Found by the still fuzz target (Fuzz/Corpus/still/d-nan-latitude.bin): a NaN latitude trapped in EXIF writing.
    func unusableLocation() throws {
        let output = AVCapturePhotoOutput()
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let positions: [(latitude: Double, longitude: Double)] = [(.nan, 2), (48, .infinity), (1e10, 2), (91, 2)]
        for position in positions {
            let settings = AVCapturePhotoSettings()
            settings.metadata = [
                kCGImagePropertyGPSDictionary: [
                    kCGImagePropertyGPSLatitude: position.latitude, kCGImagePropertyGPSLongitude: position.longitude,
                ] as [String: Any]
            ]
            let (photo, _) = takePhoto(output, settings)
            let taken = try #require(photo, "\(position)")
            #expect(taken.metadata[kCGImagePropertyGPSDictionary] == nil, "\(position)")
            #expect(taken.fileDataRepresentation()?.starts(with: [0xFF, 0xD8]) == true, "\(position)")
        }
        let settings = AVCapturePhotoSettings()
        settings.metadata = [
            kCGImagePropertyGPSDictionary: [
                kCGImagePropertyGPSLatitude: 51.5007, kCGImagePropertyGPSLongitude: 0.1246,
                kCGImagePropertyGPSAltitude: Double.nan,
            ] as [String: Any]
        ]
        let (photo, _) = takePhoto(output, settings)
        let taken = try #require(photo)
        let gps = try #require(taken.metadata[kCGImagePropertyGPSDictionary] as? [String: Any])
        #expect(gps[kCGImagePropertyGPSLatitude] as? Double == 51.5007)
        #expect(gps[kCGImagePropertyGPSAltitude] == nil)

        // 10 000 km up: EXIF's altitude (millimetres in a UInt32) is clamped; it trapped past 4 295 km.
        let high = AVCapturePhotoSettings()
        high.metadata = [
            kCGImagePropertyGPSDictionary: [
                kCGImagePropertyGPSLatitude: 51.5007, kCGImagePropertyGPSLongitude: 0.1246,
                kCGImagePropertyGPSAltitude: 1e7,
            ] as [String: Any]
        ]
        let (highPhoto, _) = takePhoto(output, high)
        #expect(highPhoto?.fileDataRepresentation()?.starts(with: [0xFF, 0xD8]) == true)
    }

    // MARK: Flash against scene light

    /// Takes an NV12 photo with `mode` while a data output watches the frames around it; returns the photo's grey
    /// patch brightness, the brightness of the neighbouring frames (two before, two after), and EXIF's Flash.
    static func flashPhoto(
        _ mode: AVCaptureDevice.FlashMode, sceneLight: Double, highResolution: Bool = false
    ) throws
        -> (photo: Double, neighbours: [Double], exifFlash: Int?, fired: Bool)
    {
        let camera = VirtualDevices.back
        let controller = try #require(camera.virtualCamera)
        defer { controller.restoreDefaults() }
        controller.sceneLight = sceneLight
        let photos = AVCapturePhotoOutput()
        photos.isHighResolutionCaptureEnabled = highResolution
        let frames = AVCaptureVideoDataOutput()
        let brightness = Mutex<[CMTime: Double]>([:])
        let delegate = RecordingDelegate { sample, _ in
            guard let image = sample.imageBuffer, !VirtualFrameReader.isFlashFrame(image),
                let level = VirtualFrameReader.measureGrayPatchBrightness(in: image)
            else { return }
            brightness.withLock { $0[sample.presentationTimeStamp] = level }
        }
        frames.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "frames"))
        frames.alwaysDiscardsLateVideoFrames = false
        let session = try makeSession(preset: .qvga320x240, devices: [camera], outputs: [photos, frames])
        session.startRunning()
        defer { session.stopRunning() }
        // Let auto exposure settle on the scene first.
        #expect(delegate.wait(for: 20))
        let deadline = Date().addingTimeInterval(5)
        while camera.isAdjustingExposure && Date() < deadline { _ = delegate.wait(for: delegate.received.count + 1) }
        for _ in 0..<3 {
            let settings = AVCapturePhotoSettings(format: [
                kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            ])
            settings.flashMode = mode
            settings.isHighResolutionPhotoEnabled = highResolution
            let (photo, _) = takePhoto(photos, settings)
            let taken = try #require(photo)
            let pixels = try #require(taken.pixelBuffer)
            #expect(CVPixelBufferGetWidth(pixels) == (highResolution ? 4032 : 320))
            // The camera's whole-second sync frame is white whatever the flash: take another photo.
            if VirtualFrameReader.isFlashFrame(pixels) { continue }
            let frameDuration = CMTime(value: 1, timescale: 30)
            #expect(delegate.wait(for: delegate.received.count + 3))
            let around = [-2, -1, 1, 2].compactMap { offset in
                brightness.withLock { $0[taken.timestamp + frameDuration * Int32(offset)] }
            }
            let exif = taken.metadata[kCGImagePropertyExifDictionary] as? [String: Any]
            return (
                try #require(VirtualFrameReader.measureGrayPatchBrightness(in: pixels)), around,
                exif?[kCGImagePropertyExifFlash] as? Int, taken.resolvedSettings.isFlashEnabled
            )
        }
        Issue.record("every photo landed on a sync frame")
        return (0, [], nil, false)
    }

    @Test(".on fires: the photo is brighter than the frames around it, and EXIF says fired")
    func flashOn() throws {
        let result = try Self.flashPhoto(.on, sceneLight: 1)
        #expect(result.fired)
        #expect(result.exifFlash == 0x09)
        #expect(!result.neighbours.isEmpty)
        for neighbour in result.neighbours { #expect(result.photo > 1.8 * neighbour, "\(result)") }
    }

    @Test(".on with high resolution: the 4032x3024 still is the lit frame too")
    func flashOnHighResolution() throws {
        let result = try Self.flashPhoto(.on, sceneLight: 1, highResolution: true)
        #expect(result.fired && result.exifFlash == 0x09)
        #expect(!result.neighbours.isEmpty)
        for neighbour in result.neighbours { #expect(result.photo > 1.8 * neighbour, "\(result)") }
    }

    @Test("High resolution at a 640x480 session: a 4032x3024 still of the same frame the stream delivered")
    func highResolution() throws {
        let photos = AVCapturePhotoOutput()
        photos.isHighResolutionCaptureEnabled = true
        let frames = AVCaptureVideoDataOutput()
        let indices = Mutex<[CMTime: UInt32]>([:])
        let delegate = RecordingDelegate { sample, _ in
            guard let image = sample.imageBuffer, let index = VirtualFrameReader.readFrameIndex(from: image) else {
                return
            }
            indices.withLock { $0[sample.presentationTimeStamp] = index }
        }
        frames.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "frames"))
        frames.alwaysDiscardsLateVideoFrames = false
        let session = try makeSession(preset: .vga640x480, devices: [VirtualDevices.back], outputs: [photos, frames])
        session.startRunning()
        defer { session.stopRunning() }
        #expect(delegate.wait(for: 5))
        for _ in 0..<3 {
            let settings = AVCapturePhotoSettings(format: [
                kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            ])
            settings.isHighResolutionPhotoEnabled = true
            let (photo, _) = takePhoto(photos, settings)
            let taken = try #require(photo)
            #expect(
                taken.resolvedSettings.photoDimensions.width == 4032
                    && taken.resolvedSettings.photoDimensions.height == 3024)
            let pixels = try #require(taken.pixelBuffer)
            #expect(CVPixelBufferGetWidth(pixels) == 4032 && CVPixelBufferGetHeight(pixels) == 3024)
            guard let index = VirtualFrameReader.readFrameIndex(from: pixels) else { continue }  // a sync frame
            #expect(delegate.wait(for: delegate.received.count + 2))
            #expect(indices.withLock { $0[taken.timestamp] } == index)
            return
        }
        Issue.record("every still landed on a sync frame")
    }

    @Test(".auto fires in a dark scene, not in a normal one")
    func flashAuto() throws {
        let dark = try Self.flashPhoto(.auto, sceneLight: 0.2)
        #expect(dark.fired)
        #expect(dark.exifFlash == 0x19)
        for neighbour in dark.neighbours { #expect(dark.photo > 1.8 * neighbour, "\(dark)") }
        let normal = try Self.flashPhoto(.auto, sceneLight: 1)
        #expect(!normal.fired)
        #expect(normal.exifFlash == 0x18)
        for neighbour in normal.neighbours { #expect(abs(normal.photo / neighbour - 1) < 0.1, "\(normal)") }
    }

    @Test(".off never fires, even in the dark")
    func flashOff() throws {
        let result = try Self.flashPhoto(.off, sceneLight: 0.2)
        #expect(!result.fired)
        #expect(result.exifFlash == 0x10)
        #expect(!result.neighbours.isEmpty)
        for neighbour in result.neighbours { #expect(abs(result.photo / neighbour - 1) < 0.1, "\(result)") }
    }

    @Test("isFlashScene follows the scene light for .auto scene monitoring")
    func flashScene() throws {
        let camera = VirtualDevices.back
        let controller = try #require(camera.virtualCamera)
        defer { controller.restoreDefaults() }
        let output = AVCapturePhotoOutput()
        let frames = AVCaptureVideoDataOutput()
        let delegate = RecordingDelegate()
        frames.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "frames"))
        let session = try makeSession(preset: .qvga320x240, devices: [camera], outputs: [output, frames])
        let monitoring = AVCapturePhotoSettings()
        monitoring.flashMode = .auto
        output.photoSettingsForSceneMonitoring = monitoring
        session.startRunning()
        defer { session.stopRunning() }
        #expect(delegate.wait(for: 3))
        #expect(!output.isFlashScene)
        let seen = Mutex<[Bool]>([])
        let observation = output.observe(\.isFlashScene, options: [.new]) { _, change in
            seen.withLock { $0.append(change.newValue!) }
        }
        defer { observation.invalidate() }
        controller.sceneLight = 0.1
        #expect(delegate.wait(for: delegate.received.count + 3))
        #expect(output.isFlashScene)
        controller.sceneLight = 1
        #expect(delegate.wait(for: delegate.received.count + 3))
        #expect(!output.isFlashScene)
        #expect(seen.withLock { $0 } == [true, false])
    }

    @Test("Settings: init(from:) copies with a new uniqueID; the file type follows the codec; pixels have none")
    func settingsValues() {
        let jpeg = AVCapturePhotoSettings()
        jpeg.flashMode = .auto
        jpeg.isHighResolutionPhotoEnabled = true
        let copy = AVCapturePhotoSettings(from: jpeg)
        #expect(copy.uniqueID != jpeg.uniqueID)
        #expect(copy.flashMode == .auto && copy.isHighResolutionPhotoEnabled)
        #expect(copy.processedFileType == .jpg)
        #expect(AVCapturePhotoSettings(format: [AVVideoCodecKey: AVVideoCodecType.hevc]).processedFileType == .heic)
        let pixels = AVCapturePhotoSettings(format: [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA])
        #expect(pixels.processedFileType == nil)
        #expect(AVCapturePhotoSettings(format: nil).format?[AVVideoCodecKey] as? AVVideoCodecType == .jpeg)
    }

    // MARK: Misuse traps, as Apple raises

    @Test("A quality outside 0...1 traps at capture")
    func qualityTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let output = AVCapturePhotoOutput()
            let session = try makeSession(devices: [VirtualDevices.back], outputs: [output])
            defer { withExtendedLifetime(session) {} }
            let settings = AVCapturePhotoSettings(format: [
                AVVideoCodecKey: AVVideoCodecType.jpeg, AVVideoCompressionPropertiesKey: [AVVideoQualityKey: 1.5],
            ])
            output.capturePhoto(with: settings, delegate: PhotoRecorder())
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("AVVideoQualityKey"), "\(message)")
    }

    @Test("Metadata other than {GPS} is left out and the photo taken, as Apple documents no exception for it")
    func unknownMetadataIsLeftOut() throws {
        let output = AVCapturePhotoOutput()
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let settings = AVCapturePhotoSettings()
        settings.metadata = [
            kCGImagePropertyExifDictionary: ["UserComment": "left out"],
            kCGImagePropertyGPSDictionary: [kCGImagePropertyGPSLatitude: 48.8584, kCGImagePropertyGPSLongitude: 2.2945],
        ]
        let (photo, _) = takePhoto(output, settings)
        let taken = try #require(photo)
        let exif = taken.metadata[kCGImagePropertyExifDictionary] as? [String: Any]
        #expect(exif?["UserComment"] == nil)
        #expect((taken.metadata[kCGImagePropertyGPSDictionary] as? [String: Any])?[kCGImagePropertyGPSLatitude] as? Double == 48.8584)
        guard MediaTool.available([.exiftool], for: "AVCapturePhotoOutputTests.unknownMetadataIsLeftOut") else { return }
        let url = try scratchURL("left-out.jpg", suite: "photo-tests")
        try #require(taken.fileDataRepresentation()).write(to: url)
        let report = try ExifToolReport(url)
        #expect(report.string("ExifIFD", "UserComment") == nil)
        #expect(abs((report.number("GPS", "GPSLatitude") ?? 0) - 48.8584) < 1e-4)
    }

    @Test("Settings used twice trap, naming the rule")
    func reusedSettingsTrap() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let output = AVCapturePhotoOutput()
            let session = try makeSession(devices: [VirtualDevices.back], outputs: [output])
            session.startRunning()
            let settings = AVCapturePhotoSettings()
            _ = takePhoto(output, settings)
            output.capturePhoto(with: settings, delegate: PhotoRecorder())
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("already used"), "\(message)")
    }

    @Test("A flash mode the camera lacks traps (the front camera has no flash)")
    func unsupportedFlashTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let output = AVCapturePhotoOutput()
            let session = try makeSession(devices: [VirtualDevices.front], outputs: [output])
            defer { withExtendedLifetime(session) {} }
            let settings = AVCapturePhotoSettings()
            settings.flashMode = .on
            output.capturePhoto(with: settings, delegate: PhotoRecorder())
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("supportedFlashModes"), "\(message)")
    }

    @Test("High resolution without isHighResolutionCaptureEnabled traps")
    func highResolutionTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let output = AVCapturePhotoOutput()
            let session = try makeSession(devices: [VirtualDevices.back], outputs: [output])
            defer { withExtendedLifetime(session) {} }
            let settings = AVCapturePhotoSettings()
            settings.isHighResolutionPhotoEnabled = true
            output.capturePhoto(with: settings, delegate: PhotoRecorder())
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("isHighResolutionCaptureEnabled"), "\(message)")
    }

    @Test("No video connection traps; so does an output whose session is gone")
    func noConnectionTraps() async {
        await #expect(processExitsWith: .failure) {
            AVCapturePhotoOutput().capturePhoto(with: AVCapturePhotoSettings(), delegate: PhotoRecorder())
        }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let output = AVCapturePhotoOutput()
            _ = try makeSession(devices: [VirtualDevices.back], outputs: [output])
            #expect(output.supportedFlashModes.isEmpty)  // no camera without a session
            output.capturePhoto(with: AVCapturePhotoSettings(), delegate: PhotoRecorder())
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("active and enabled video connection"), "\(message)")
    }

    @Test("A codec the output cannot encode traps; unknown format keys trap at once")
    func formatTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let output = AVCapturePhotoOutput()
            let session = try makeSession(devices: [VirtualDevices.back], outputs: [output])
            defer { withExtendedLifetime(session) {} }
            output.capturePhoto(
                with: AVCapturePhotoSettings(format: [AVVideoCodecKey: AVVideoCodecType.h264]),
                delegate: PhotoRecorder())
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("availablePhotoCodecTypes"), "\(message)")
        await #expect(processExitsWith: .failure) {
            _ = AVCapturePhotoSettings(format: [AVVideoCodecKey: AVVideoCodecType.jpeg, "Typo": 1])
        }
    }
}
