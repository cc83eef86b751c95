import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing

/// "Virtual USB Webcam" through Apple's API: discovery, every format streamed through a session and decoded by the
/// graph (its MJPEG and H.264 arrive compressed, as a real webcam's), the frame index read back from the decoded
/// pixels, and hot-plug. Serialized: the webcam is shared by the process.
@Suite(.serialized) struct VirtualWebcamSessionTests {
    private var webcam: AVCaptureDevice {
        get throws { try #require(AVCaptureDevice.default(.external, for: .video, position: .unspecified)) }
    }

    @Test func theWebcamIsAnExternalCameraBesideTheVirtualOnesAndNotTheDefault() throws {
        let webcam = try webcam
        #expect(webcam.localizedName == "Virtual USB Webcam")
        #expect(webcam.uniqueID == "virtual:usb-webcam")
        #expect(webcam.deviceType == .external && webcam.position == .unspecified)
        #expect(webcam.hasMediaType(.video) && !webcam.hasMediaType(.audio))
        #expect(!webcam.hasFlash && !webcam.hasTorch)
        #expect(webcam.virtualCamera != nil)
        #expect(AVCaptureDevice.default(for: .video)?.localizedName == "Virtual Back Camera")
        #expect(AVCaptureDevice(uniqueID: "virtual:usb-webcam") === webcam)
        let formats = webcam.formats.map { format -> String in
            let size = format.formatDescription.dimensions
            return "\(size.width)x\(size.height) \(fourCC(format.formatDescription.mediaSubType.rawValue))"
        }
        #expect(formats == ["320x240 yuvs", "640x480 yuvs", "1280x720 jpeg", "1920x1080 jpeg", "1920x1080 avc1"])
        for format in webcam.formats {
            #expect(format.videoSupportedFrameRateRanges.map(\.minFrameDuration) == [
                CMTime(value: 1, timescale: 30), CMTime(value: 1, timescale: 15),
            ])
        }
        #expect(webcam.supportsSessionPreset(.hd1280x720) && webcam.supportsSessionPreset(.vga640x480))
        #expect(!webcam.supportsSessionPreset(.hd4K3840x2160))
    }

    /// Each format streams into a video data output; compressed ones come out decoded (`'420f'` from JPEG, `'420v'`
    /// from H.264), and the index drawn in each decoded frame is the one its timestamp says, with every frame of
    /// the span either delivered or reported dropped.
    @Test(arguments: [
        ("320x240 yuvs", kCVPixelFormatType_422YpCbCr8_yuvs), ("640x480 yuvs", kCVPixelFormatType_422YpCbCr8_yuvs),
        ("1280x720 jpeg", kCVPixelFormatType_420YpCbCr8BiPlanarFullRange),
        ("1920x1080 jpeg", kCVPixelFormatType_420YpCbCr8BiPlanarFullRange),
        ("1920x1080 avc1", kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange),
    ])
    func everyFormatStreamsWithItsFrameIndicesAfterDecoding(format name: String, delivered pixelFormat: OSType)
        throws
    {
        let webcam = try webcam
        let controller = try #require(webcam.virtualCamera)
        defer { controller.restoreDefaults() }
        let format = try #require(
            webcam.formats.first { format in
                let size = format.formatDescription.dimensions
                return "\(size.width)x\(size.height) \(fourCC(format.formatDescription.mediaSubType.rawValue))" == name
            })
        let output = AVCaptureVideoDataOutput()
        output.alwaysDiscardsLateVideoFrames = false
        let frames = Mutex<[(time: CMTime, index: UInt32?, isFlash: Bool, pixelFormat: OSType, width: Int)]>([])
        let read = DispatchSemaphore(value: 0)
        let delegate = RecordingDelegate { sample, _ in
            guard let image = sample.imageBuffer else { return }
            let frame = (
                time: sample.presentationTimeStamp, index: VirtualFrameReader.readFrameIndex(from: image),
                isFlash: VirtualFrameReader.isFlashFrame(image), pixelFormat: CVPixelBufferGetPixelFormatType(image),
                width: CVPixelBufferGetWidth(image))
            frames.withLock { $0.append(frame) }
            read.signal()
        }
        let queue = DispatchQueue(label: "webcam frames")
        output.setSampleBufferDelegate(delegate, queue: queue)
        let session = try makeSession(preset: .inputPriority, devices: [webcam], outputs: [output])
        try webcam.lockForConfiguration()
        webcam.activeFormat = format
        // 15 fps, the webcam's other rate, leaves a debug build room to render, compress and decode 1080p in time.
        webcam.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 15)
        webcam.activeVideoMaxFrameDuration = CMTime(value: 1, timescale: 15)
        webcam.unlockForConfiguration()
        // Stepped a frame at a time, the delegate caught up before the next: every frame comes, however slowly a
        // loaded machine decodes 1080p.
        try withManualClock([webcam]) { clock in
            session.startRunning()
            // The first frame comes as the camera starts, 29 more a fifteenth of a second apart.
            let frameTime = CMTime(value: 1, timescale: 15)
            #expect(clock.advance(by: CMTimeMultiply(frameTime, multiplier: 29), step: frameTime, settling: [output]))
            var arrived = 0
            while arrived < 30, read.wait(timeout: .now() + 10) == .success { arrived += 1 }
            session.stopRunning()
            // Drop notices still queued for the delegate arrive before this returns.
            queue.sync {}
            #expect(arrived == 30)

            let received = frames.withLock { $0 }
            try #require(received.count >= 30)
            #expect(received.allSatisfy { $0.pixelFormat == pixelFormat })
            #expect(received.allSatisfy { $0.width == Int(format.formatDescription.dimensions.width) })
            // Frame k of the stream is at (first + k) / 15 s and shows index k: the offset between the slot a
            // timestamp names and the index drawn is one constant for the whole stream.
            func slot(_ time: CMTime) -> Int64 {
                CMTimeConvertScale(time, timescale: 15, method: .roundHalfAwayFromZero).value
            }
            var offset: Int64?
            for frame in received {
                if frame.isFlash {
                    // The flash frame is the one whose interval holds a whole second: its slot is a multiple of 15.
                    #expect(slot(frame.time) % 15 == 0, "a flash at \(frame.time.seconds) s")
                    continue
                }
                let index = try #require(frame.index, "no index readable in the frame at \(frame.time.seconds) s")
                let difference = slot(frame.time) - Int64(index)
                if offset == nil { offset = difference }
                #expect(difference == offset, "the frame at \(frame.time.seconds) s shows index \(index)")
            }
            // Contiguous: every slot between the first and the last frame was delivered or reported dropped.
            let slots = Set(received.map { slot($0.time) })
            #expect(slots.count == received.count, "a frame was delivered twice")
            let dropped = Set(delegate.dropped.map { slot($0.time) })
            let first = try #require(slots.min())
            let last = try #require(slots.max())
            let missing = (first...last).filter { !slots.contains($0) && !dropped.contains($0) }
            #expect(
                missing.isEmpty,
                "frames neither delivered nor dropped: \(missing); dropped: \(dropped.sorted())")
        }
    }

    @Test func unpluggingTheWebcamPostsApplesNotificationsAndReplugBringsItBack() throws {
        let webcam = try webcam
        let controller = try #require(webcam.virtualCamera)
        defer { controller.restoreDefaults() }
        let notifications = NotificationRecorder(
            [AVCaptureDevice.wasDisconnectedNotification, AVCaptureDevice.wasConnectedNotification], object: webcam)
        let output = AVCaptureVideoDataOutput()
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "webcam unplug"))
        let session = try makeSession(preset: .hd1280x720, devices: [webcam], outputs: [output])
        #expect(webcam.activeFormat.formatDescription.mediaSubType.rawValue == fourCharCode("jpeg"))
        let interrupted = DispatchSemaphore(value: 0)
        let resumed = DispatchSemaphore(value: 0)
        let tokens = [
            NotificationCenter.default.addObserver(
                forName: AVCaptureSession.wasInterruptedNotification, object: session, queue: nil
            ) { _ in interrupted.signal() },
            NotificationCenter.default.addObserver(
                forName: AVCaptureSession.interruptionEndedNotification, object: session, queue: nil
            ) { _ in resumed.signal() },
        ]
        defer { tokens.forEach(NotificationCenter.default.removeObserver) }
        session.startRunning()
        #expect(delegate.wait(for: 3, timeout: 30))
        controller.unplug()
        #expect(!webcam.isConnected)
        #expect(interrupted.wait(timeout: .now() + 10) == .success)
        #expect(session.isInterrupted)
        #expect(
            !AVCaptureDevice.DiscoverySession(deviceTypes: [.external], mediaType: .video, position: .unspecified)
                .devices.contains { $0 === webcam })
        let beforeReplug = delegate.received.count
        controller.replug()
        #expect(webcam.isConnected)
        #expect(resumed.wait(timeout: .now() + 10) == .success)
        #expect(!session.isInterrupted)
        #expect(delegate.wait(for: beforeReplug + 3, timeout: 30))
        session.stopRunning()
        #expect(
            notifications.recorded == [
                AVCaptureDevice.wasDisconnectedNotification.rawValue, AVCaptureDevice.wasConnectedNotification.rawValue,
            ])
    }
}

private func fourCC(_ code: FourCharCode) -> String {
    String(decoding: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: code >> $0) }, as: UTF8.self)
}

private func fourCharCode(_ text: String) -> FourCharCode {
    text.utf8.reduce(0) { $0 << 8 | FourCharCode($1) }
}
