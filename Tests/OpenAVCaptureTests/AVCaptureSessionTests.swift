import Foundation
import OpenAVCapture
import Synchronization
import Testing
import TestSupport

/// The session on the virtual devices, through Apple's API. Each test on virtual devices of its own, so the tests
/// run in parallel (`Tests/suites-parallel.txt`).
@Suite(.ownVirtualDevices) struct AVCaptureSessionTests {
    @Test func lifecyclePostsNotificationsAndIsRunningIsObservable() throws {
        let output = AVCaptureVideoDataOutput()
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [output])
        let recorder = NotificationRecorder(
            [AVCaptureSession.didStartRunningNotification, AVCaptureSession.didStopRunningNotification], object: session)
        let running = Mutex<[Bool]>([])
        let token = session.observe(\.isRunning, options: [.new]) { _, change in
            running.withLock { $0.append(change.newValue!) }
        }
        defer { token.invalidate() }
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "frames"))
        #expect(!session.isRunning)
        session.startRunning()
        #expect(session.isRunning)
        #expect(delegate.wait(for: 5))
        session.stopRunning()
        #expect(!session.isRunning)
        #expect(running.withLock { $0 } == [true, false])
        #expect(recorder.recorded == ["AVCaptureSessionDidStartRunningNotification", "AVCaptureSessionDidStopRunningNotification"])
        // Frames are the preset's size, the device's NV12, one frame duration apart, in order.
        let frames = delegate.received
        #expect(frames.allSatisfy { $0.width == 640 && $0.height == 480 })
        #expect(frames.allSatisfy { $0.pixelFormat == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange })
        for (earlier, later) in zip(frames, frames.dropFirst()) {
            #expect(later.time - earlier.time == CMTime(value: 1, timescale: 30))
        }
        #expect(session.synchronizationClock === CMClock.hostTimeClock)
    }

    @Test func nestedConfigurationAppliesAtTheOutermostCommit() throws {
        let session = AVCaptureSession()
        let output = AVCaptureVideoDataOutput()
        session.beginConfiguration()
        session.beginConfiguration()
        session.addInput(try AVCaptureDeviceInput(device: VirtualDevices.front))
        session.addOutput(output)
        session.commitConfiguration()
        // Still inside the outer block: connected in the graph, but the device format is applied at the end.
        #expect(session.connections.count == 1)
        session.sessionPreset = .hd1280x720
        session.commitConfiguration()
        #expect(VirtualDevices.front.activeFormat.formatDescription.dimensions == CMVideoDimensions(width: 1280, height: 720))
        #expect(output.connection(with: .video)?.inputPorts.first?.formatDescription?.dimensions.width == 1280)
        session.sessionPreset = .high
    }

    @Test func bgraConversionAtAFifteenFramePerSecondCap() throws {
        let output = AVCaptureVideoDataOutput()
        output.videoSettings = [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA]
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
        let connection = try #require(output.connection(with: .video))
        connection.videoMinFrameDuration = CMTime(value: 1, timescale: 15)
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "bgra"))
        session.startRunning()
        #expect(delegate.wait(for: 6))
        session.stopRunning()
        let frames = delegate.received
        #expect(frames.allSatisfy { $0.pixelFormat == kCVPixelFormatType_32BGRA && $0.width == 320 && $0.height == 240 })
        for (earlier, later) in zip(frames, frames.dropFirst()) {
            #expect(later.time - earlier.time == CMTime(value: 1, timescale: 15))
        }
        #expect(output.videoSettings[kCVPixelBufferPixelFormatTypeKey] as? OSType == kCVPixelFormatType_32BGRA)
    }

    @Test func anOutputOutlivingItsSessionStillReadsItsConnectionsInputs() throws {
        let output = AVCaptureVideoDataOutput()
        weak var weakSession: AVCaptureSession?
        do {
            let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
            weakSession = session
        }
        #expect(weakSession == nil)
        let input = try #require(output.connection(with: .video)?.inputPorts.first?.input as? AVCaptureDeviceInput)
        #expect(input.device.uniqueID == VirtualDevices.back.uniqueID)
    }

    @Test func aSlowDelegateLosesLateFramesWhileAnotherOutputGetsEveryFrame() throws {
        let slow = AVCaptureVideoDataOutput()
        let fast = AVCaptureVideoDataOutput()
        let session = AVCaptureSession()
        session.beginConfiguration()
        session.sessionPreset = .qvga320x240
        let input = try AVCaptureDeviceInput(device: VirtualDevices.back)
        session.addInputWithNoConnections(input)
        session.addOutputWithNoConnections(slow)
        session.addOutputWithNoConnections(fast)
        let port = try #require(input.ports.first { $0.mediaType == .video })
        for output in [slow, fast] {
            let connection = AVCaptureConnection(inputPorts: [port], output: output)
            #expect(session.canAddConnection(connection))
            session.addConnection(connection)
        }
        session.commitConfiguration()
        let slowDelegate = RecordingDelegate(work: 0.2)
        let fastDelegate = RecordingDelegate()
        let slowQueue = DispatchQueue(label: "slow")
        let fastQueue = DispatchQueue(label: "fast")
        slow.setSampleBufferDelegate(slowDelegate, queue: slowQueue)
        // The fast output queues rather than discards, so a loaded machine delaying its no-op delegate for a
        // moment cannot cost it frames; what this test isolates is the slow output's effect on it.
        fast.alwaysDiscardsLateVideoFrames = false
        fast.setSampleBufferDelegate(fastDelegate, queue: fastQueue)
        session.startRunning()
        #expect(fastDelegate.wait(for: 30))
        session.stopRunning()
        slowQueue.sync {}  // callbacks queued before the stop still arrive, as Apple's do
        fastQueue.sync {}
        // Every frame reached the fast output: consecutive frame times, except where the camera itself reported a
        // drop (a starved capture thread), which the slow delegate cannot cause.
        let fastFrames = fastDelegate.received
        let deviceDrops = Set(fastDelegate.dropped.map(\.time))
        #expect(fastDelegate.dropped.allSatisfy { $0.reason != "FrameWasLate" }, "\(fastDelegate.dropped)")
        for (earlier, later) in zip(fastFrames, fastFrames.dropFirst()) {
            var time = earlier.time + CMTime(value: 1, timescale: 30)
            while time < later.time, deviceDrops.contains(time) { time = time + CMTime(value: 1, timescale: 30) }
            #expect(time == later.time, "a frame between \(earlier.time.seconds) and \(later.time.seconds) s is missing")
        }
        // The slow one got about one frame in six and was told why it lost the others.
        #expect(slowDelegate.received.count < fastFrames.count / 3)
        #expect(slowDelegate.dropped.count > fastFrames.count / 2)
        #expect(slowDelegate.dropped.allSatisfy { $0.reason == "FrameWasLate" })
        #expect(slow.deliveryStatistics.droppedLate == slowDelegate.dropped.count)
    }

    @Test func switchingCamerasWhileRunningLeavesNoGap() throws {
        let output = AVCaptureVideoDataOutput()
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "switch"))
        session.startRunning()
        #expect(delegate.wait(for: 5))
        session.beginConfiguration()
        session.removeInput(session.inputs[0])
        session.addInput(try AVCaptureDeviceInput(device: VirtualDevices.front))
        session.commitConfiguration()
        let before = delegate.received.count
        #expect(delegate.wait(for: before + 5))
        session.stopRunning()
        let frames = delegate.received
        let lastBack = try #require(frames.last { $0.position == .back })
        let firstFront = try #require(frames.first { $0.position == .front })
        #expect(frames.firstIndex { $0.position == .front }! > frames.lastIndex { $0.position == .back }!)
        let gap = (firstFront.time - lastBack.time).seconds
        #expect(gap > 0 && gap <= 1.0 / 30 + 0.0005, "gap \(gap) s")
    }

    @Test func manualConnectionsAndClocks() throws {
        let session = AVCaptureSession()
        let input = try AVCaptureDeviceInput(device: VirtualDevices.microphone)
        let output = AVCaptureAudioDataOutput()
        session.addInputWithNoConnections(input)
        session.addOutputWithNoConnections(output)
        #expect(session.connections.isEmpty)
        let port = try #require(input.ports.first)
        #expect(port.mediaType == .audio)
        let connection = AVCaptureConnection(inputPorts: [port], output: output)
        #expect(session.canAddConnection(connection))
        session.addConnection(connection)
        #expect(connection.isActive)
        #expect(!session.canAddConnection(AVCaptureConnection(inputPorts: [port], output: output)))
        let clock = try #require(port.clock)
        let now = CMClockGetTime(clock)
        let converted = CMSyncConvertTime(now, from: clock, to: try #require(session.synchronizationClock))
        #expect(converted == now)
        session.removeConnection(connection)
        #expect(!connection.isActive)
    }

    @Test func audioLevelsMatchTheMicrophoneSignal() throws {
        let output = AVCaptureAudioDataOutput()
        let session = try makeSession(devices: [VirtualDevices.microphone], outputs: [output])
        let connection = try #require(output.connection(with: .audio))
        #expect(connection.audioChannels.count == 1)
        let readings = Mutex<[(average: Float, peak: Float)]>([])
        let start = CMClockGetTime(CMClock.hostTimeClock).seconds
        let delegate = RecordingDelegate { sample, connection in
            let time = sample.presentationTimeStamp.seconds
            let fraction = time - time.rounded(.down)
            // Away from the beeps (at whole seconds, 50 ms long) and after a full second of audio.
            guard time > start + 1.2, (0.3...0.9).contains(fraction), let channel = connection.audioChannels.first else { return }
            readings.withLock { $0.append((channel.averagePowerLevel, channel.peakHoldLevel)) }
        }
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "audio"))
        session.startRunning()
        let deadline = Date().addingTimeInterval(6)
        while readings.withLock({ $0.count }) < 10 && Date() < deadline { _ = delegate.wait(for: delegate.received.count + 1, timeout: 1) }
        session.stopRunning()
        let values = readings.withLock { $0 }
        #expect(values.count >= 10)
        // The tone: a sine at −30 dBFS peak has an RMS of −30 − 3.01 dBFS; the beep's peak is −6 dBFS.
        for value in values {
            #expect(abs(value.average - (-33.0103)) < 0.5, "average \(value.average)")
            #expect(abs(value.peak - (-6)) < 0.5, "peak \(value.peak)")
        }
        // Periods arrive contiguous.
        let periods = delegate.received
        for (earlier, later) in zip(periods, periods.dropFirst()) {
            #expect(later.time == earlier.time + CMTime(value: Int64(earlier.sampleCount), timescale: 48000))
        }
    }

    @Test func audioSettingsConvertRateAndFormat() throws {
        let output = AVCaptureAudioDataOutput()
        output.audioSettings = [
            AVFormatIDKey: kAudioFormatLinearPCM, AVSampleRateKey: 44100, AVNumberOfChannelsKey: 2,
            AVLinearPCMBitDepthKey: 16, AVLinearPCMIsFloatKey: false,
        ]
        let session = try makeSession(devices: [VirtualDevices.microphone], outputs: [output])
        let formats = Mutex<[AudioStreamBasicDescription]>([])
        let delegate = RecordingDelegate { sample, _ in
            if let layout = sample.formatDescription?.audioStreamBasicDescription { formats.withLock { $0.append(layout) } }
        }
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "audio-convert"))
        session.startRunning()
        #expect(delegate.wait(for: 20))
        session.stopRunning()
        let layouts = formats.withLock { $0 }
        #expect(layouts.allSatisfy { $0.mSampleRate == 44100 && $0.mChannelsPerFrame == 2 && $0.mBitsPerChannel == 16 })
        let periods = delegate.received
        for (earlier, later) in zip(periods, periods.dropFirst()) {
            let expected = earlier.time + CMTime(value: Int64(earlier.sampleCount), timescale: 44100)
            #expect(abs((later.time - expected).seconds) < 1.0 / 44100, "\(later.time.seconds) vs \(expected.seconds)")
        }
    }

    @Test func previewLayerConnectsAndConverts() throws {
        let session = try makeSession(preset: .hd1920x1080, devices: [VirtualDevices.front], outputs: [])
        let layer = AVCaptureVideoPreviewLayer(session: session)
        let connection = try #require(layer.connection)
        #expect(connection.videoPreviewLayer === layer)
        #expect(connection.isVideoMirrored, "a front camera's preview is mirrored")
        layer.frame = CGRect(x: 0, y: 0, width: 1080, height: 1920)
        layer.videoGravity = .resizeAspectFill
        connection.videoOrientation = .portrait
        connection.automaticallyAdjustsVideoMirroring = false
        connection.isVideoMirrored = false
        // Portrait: the layer's top-left shows the sensor's bottom-left corner (0, 1).
        let corner = layer.captureDevicePointConverted(fromLayerPoint: .zero)
        #expect(abs(corner.x) < 1e-9 && abs(corner.y - 1) < 1e-9)
        let back = layer.layerPointConverted(fromCaptureDevicePoint: CGPoint(x: 0.25, y: 0.75))
        let again = layer.captureDevicePointOfInterest(for: back)
        #expect(abs(again.x - 0.25) < 1e-9 && abs(again.y - 0.75) < 1e-9)
        session.sessionPreset = .high
    }
}
