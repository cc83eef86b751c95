import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing

/// What reaches the delegate, read from the pixels with the virtual camera's frame index code.
@Suite(.serialized) struct AVCaptureSessionPixelTests {
    /// The luma plane of an NV12 frame, tightly packed.
    static func luma(of pixelBuffer: CVPixelBuffer) -> (bytes: [UInt8], width: Int, height: Int) {
        CVPixelBufferLockBaseAddress(pixelBuffer, .readOnly)
        defer { CVPixelBufferUnlockBaseAddress(pixelBuffer, .readOnly) }
        let width = CVPixelBufferGetWidthOfPlane(pixelBuffer, 0)
        let height = CVPixelBufferGetHeightOfPlane(pixelBuffer, 0)
        let stride = CVPixelBufferGetBytesPerRowOfPlane(pixelBuffer, 0)
        let base = CVPixelBufferGetBaseAddressOfPlane(pixelBuffer, 0)!.assumingMemoryBound(to: UInt8.self)
        var bytes = [UInt8](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width { bytes[y * width + x] = base[y * stride + x] }
        }
        return (bytes, width, height)
    }

    /// Undoes "rotate clockwise by `angle`, then mirror left to right" on a delivered luma plane, giving the
    /// sensor's picture back. Written from the definition, independently of the library's transform: rotating
    /// a W×H picture 90° clockwise sends pixel (x, y) to (H − 1 − y, x).
    static func sensorPicture(fromDelivered delivered: [UInt8], width: Int, height: Int, angle: Int, mirrored: Bool)
        -> (bytes: [UInt8], width: Int, height: Int)
    {
        func at(_ x: Int, _ y: Int) -> UInt8 { delivered[y * width + (mirrored ? width - 1 - x : x)] }
        let (sensorWidth, sensorHeight) = angle % 180 == 0 ? (width, height) : (height, width)
        var sensor = [UInt8](repeating: 0, count: sensorWidth * sensorHeight)
        for y in 0..<sensorHeight {
            for x in 0..<sensorWidth {
                let value: UInt8 =
                    switch angle {
                    case 90: at(sensorHeight - 1 - y, x)
                    case 180: at(sensorWidth - 1 - x, sensorHeight - 1 - y)
                    case 270: at(y, sensorWidth - 1 - x)
                    default: at(x, y)
                    }
                sensor[y * sensorWidth + x] = value
            }
        }
        return (sensor, sensorWidth, sensorHeight)
    }

    @Test(arguments: [(90, false), (180, false), (270, false), (0, true), (90, true)])
    func orientationAndMirroringAreInTheDeliveredPixels(angle: Int, mirrored: Bool) throws {
        let output = AVCaptureVideoDataOutput()
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
        let connection = try #require(output.connection(with: .video))
        connection.videoRotationAngle = CGFloat(angle)
        connection.isVideoMirrored = mirrored
        let results = Mutex<[(size: String, rawIndex: UInt32?, sensorIndex: UInt32?, flash: Bool)]>([])
        let delegate = RecordingDelegate { sample, _ in
            guard let image = sample.imageBuffer else { return }
            let (bytes, width, height) = Self.luma(of: image)
            let sensor = Self.sensorPicture(fromDelivered: bytes, width: width, height: height, angle: angle, mirrored: mirrored)
            results.withLock {
                $0.append(
                    ("\(width)x\(height)", VirtualFrameReader.readFrameIndex(fromLuma: bytes, width: width, height: height),
                        VirtualFrameReader.readFrameIndex(fromLuma: sensor.bytes, width: sensor.width, height: sensor.height),
                        VirtualFrameReader.isFlashFrame(image)))
            }
        }
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "orientation"))
        session.startRunning()
        #expect(delegate.wait(for: 6))
        session.stopRunning()
        let frames = results.withLock { $0 }.filter { !$0.flash }
        #expect(!frames.isEmpty)
        let expectedSize = angle % 180 == 0 ? "320x240" : "240x320"
        for frame in frames {
            #expect(frame.size == expectedSize)
            // Turned back to the sensor's orientation the code reads; as delivered it does not.
            #expect(frame.sensorIndex != nil)
            #expect(frame.rawIndex == nil)
        }
        let indices = frames.compactMap(\.sensorIndex)
        #expect(zip(indices, indices.dropFirst()).allSatisfy { $1 > $0 })
    }

    @Test func theFastOutputGetsEveryFrameIndexWhileTheSlowOneDrops() throws {
        let slow = AVCaptureVideoDataOutput()
        let fast = AVCaptureVideoDataOutput()
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.front], outputs: [])
        let input = try #require(session.inputs.first)
        session.beginConfiguration()
        for output in [slow, fast] {
            session.addOutputWithNoConnections(output)
            session.addConnection(AVCaptureConnection(inputPorts: input.ports, output: output))
        }
        session.commitConfiguration()
        let indices = Mutex<[UInt32?]>([])
        let fastDelegate = RecordingDelegate { sample, _ in
            guard let image = sample.imageBuffer else { return }
            let index = VirtualFrameReader.readFrameIndex(from: image)
            // A flash frame carries no code; everything else must read.
            if index != nil || !VirtualFrameReader.isFlashFrame(image) { indices.withLock { $0.append(index) } }
        }
        let slowDelegate = RecordingDelegate(work: 0.2)
        let slowQueue = DispatchQueue(label: "slow-index")
        slow.setSampleBufferDelegate(slowDelegate, queue: slowQueue)
        fast.setSampleBufferDelegate(fastDelegate, queue: DispatchQueue(label: "fast-index"))
        // Stepped a frame at a time, the fast output caught up before the next and the slow one not waited for: the
        // fast one misses nothing however loaded the machine is, the slow one falls behind at once.
        try withManualClock([VirtualDevices.front]) { clock in
            session.startRunning()
            let frame = CMTime(value: 1, timescale: 30)
            #expect(clock.advance(by: CMTimeMultiply(frame, multiplier: 44), step: frame, settling: [fast]))
            #expect(fastDelegate.wait(for: 45))
            session.stopRunning()
            slowQueue.sync {}
            let read = indices.withLock { $0 }
            #expect(read.allSatisfy { $0 != nil })
            let numbers = read.compactMap { $0 }
            // Consecutive indices, except one skipped where a flash frame (no code) was delivered.
            for (earlier, later) in zip(numbers, numbers.dropFirst()) {
                #expect(later == earlier + 1 || later == earlier + 2, "\(earlier) → \(later)")
            }
            let flashesSkipped = zip(numbers, numbers.dropFirst()).filter { $1 == $0 + 2 }.count
            #expect(flashesSkipped <= 2, "45 frames at 30 fps hold at most two whole seconds")
            #expect(slowDelegate.dropped.count >= 30)
            #expect(slowDelegate.dropped.allSatisfy { $0.reason == "FrameWasLate" })
        }
    }
}

/// Interruptions, runtime errors and the torch, driven by the virtual devices' fault controls.
@Suite(.serialized) struct AVCaptureSessionInterruptionTests {
    /// Waits until `condition` holds, checking every few milliseconds, or the timeout passes.
    private func eventually(timeout: TimeInterval = 5, _ condition: () -> Bool) -> Bool {
        waitUntil(timeout: timeout, every: 0.005, condition)
    }

    @Test func aBusyCameraInterruptsTheSessionUntilItIsReleased() throws {
        let camera = VirtualDevices.front
        let controller = try #require(camera.virtualCamera)
        defer { controller.restoreDefaults() }
        let output = AVCaptureVideoDataOutput()
        let session = try makeSession(preset: .qvga320x240, devices: [camera], outputs: [output])
        let recorder = NotificationRecorder(
            [AVCaptureSession.wasInterruptedNotification, AVCaptureSession.interruptionEndedNotification], object: session)
        let reasons = Mutex<[Int]>([])
        let reasonToken = NotificationCenter.default.addObserver(
            forName: AVCaptureSession.wasInterruptedNotification, object: session, queue: nil
        ) { note in
            if let reason = note.userInfo?[AVCaptureSessionInterruptionReasonKey] as? Int { reasons.withLock { $0.append(reason) } }
        }
        defer { NotificationCenter.default.removeObserver(reasonToken) }
        let interruptions = Mutex<[Bool]>([])
        let token = session.observe(\.isInterrupted, options: [.new]) { _, change in
            interruptions.withLock { $0.append(change.newValue!) }
        }
        defer { token.invalidate() }
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "busy"))
        session.startRunning()
        #expect(delegate.wait(for: 3))
        controller.setBusy(true)
        #expect(eventually { session.isInterrupted })
        #expect(session.isRunning, "an interrupted session is still running")
        #expect(eventually { recorder.recorded.contains("AVCaptureSessionWasInterruptedNotification") })
        #expect(reasons.withLock { $0 } == [AVCaptureSession.InterruptionReason.videoDeviceInUseByAnotherClient.rawValue])
        let beforeRelease = delegate.received.count
        controller.setBusy(false)
        #expect(eventually { !session.isInterrupted })
        #expect(eventually { recorder.recorded.last == "AVCaptureSessionInterruptionEndedNotification" })
        #expect(delegate.wait(for: beforeRelease + 3), "frames flow again")
        session.stopRunning()
        #expect(interruptions.withLock { $0 } == [true, false])
    }

    @Test func anUnpluggedMicrophoneIsARuntimeErrorAndComesBack() throws {
        let microphone = VirtualDevices.microphone
        let controller = try #require(microphone.virtualMicrophone)
        defer { controller.restoreDefaults() }
        let output = AVCaptureAudioDataOutput()
        let session = try makeSession(devices: [microphone], outputs: [output])
        let errors = Mutex<[Int]>([])
        let errorToken = NotificationCenter.default.addObserver(
            forName: AVCaptureSession.runtimeErrorNotification, object: session, queue: nil
        ) { note in
            if let error = note.userInfo?[AVCaptureSessionErrorKey] as? AVError { errors.withLock { $0.append(error.code.rawValue) } }
        }
        defer { NotificationCenter.default.removeObserver(errorToken) }
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "unplug"))
        session.startRunning()
        #expect(delegate.wait(for: 3))
        controller.unplug()
        #expect(eventually { session.isInterrupted })
        #expect(eventually { errors.withLock { $0 } == [AVError.Code.deviceWasDisconnected.rawValue] })
        let beforeReplug = delegate.received.count
        controller.replug()
        #expect(eventually { !session.isInterrupted })
        #expect(delegate.wait(for: beforeReplug + 3))
        session.stopRunning()
    }

    @Test func theTorchLightsOnlyWhileTheSessionRuns() throws {
        let camera = VirtualDevices.back
        let controller = try #require(camera.virtualCamera)
        defer { controller.restoreDefaults() }
        try camera.lockForConfiguration()
        camera.torchMode = .on
        camera.unlockForConfiguration()
        #expect(!camera.isTorchActive)
        let session = try makeSession(preset: .qvga320x240, devices: [camera], outputs: [AVCaptureVideoDataOutput()])
        session.startRunning()
        #expect(eventually { camera.isTorchActive })
        session.stopRunning()
        #expect(eventually { !camera.isTorchActive })
    }

    @Test func thePresetFallbackChainPicksTheFirstSupportedPreset() throws {
        let session = try makeSession(preset: .high, devices: [VirtualDevices.front], outputs: [])
        let wished: [AVCaptureSession.Preset] = [
            AVCaptureSession.Preset(rawValue: "AVCaptureSessionPreset5120x2880"), .hd4K3840x2160, .high,
        ]
        #expect(!session.canSetSessionPreset(wished[0]))
        let chosen = try #require(wished.first(where: session.canSetSessionPreset))
        session.sessionPreset = chosen
        #expect(session.sessionPreset == .hd4K3840x2160)
        #expect(VirtualDevices.front.activeFormat.formatDescription.dimensions == CMVideoDimensions(width: 3840, height: 2160))
        // Setting the device's format directly switches the session to .inputPriority, as Apple's.
        try VirtualDevices.front.lockForConfiguration()
        VirtualDevices.front.activeFormat = try #require(VirtualDevices.front.formats.first)
        VirtualDevices.front.unlockForConfiguration()
        #expect(session.sessionPreset == .inputPriority)
        session.sessionPreset = .high
    }

    @Test func anUnsupportedPresetTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let session = AVCaptureSession()
            session.addInput(try! AVCaptureDeviceInput(device: AVCaptureDevice.default(for: .video)!))
            session.sessionPreset = AVCaptureSession.Preset(rawValue: "AVCaptureSessionPreset5120x2880")
        }.map { result in
            #expect(String(decoding: result.standardErrorContent, as: UTF8.self).contains("canSetSessionPreset"))
        }
    }

    @Test func addingAnOutputTwiceTraps() async {
        await #expect(processExitsWith: .failure) {
            let session = AVCaptureSession()
            let output = AVCaptureVideoDataOutput()
            session.addOutput(output)
            session.addOutput(output)
        }
    }
}
