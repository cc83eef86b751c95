import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import TestSupport
import Testing

/// Calls that break a rule Apple states without raising: Apple tolerates them, so we do, and say so once
/// (`ToleratedMisuse`). Each goes through the public API on the virtual devices and checks the result does what
/// Apple's does. Serialized: the virtual devices are shared.
@Suite(.serialized) struct ToleratedMisuseTests {
    /// QRCodeReader.swift's order: a commit with no begin before anything is added, another after, then start.
    @Test func anUnmatchedCommitStillRunsAndReadsACode() throws {
        let camera = VirtualDevices.back
        let controller = try #require(camera.virtualCamera)
        defer { controller.restoreDefaults() }
        controller.showCode("committed without beginning", type: .qr, in: CGRect(x: 0.55, y: 0.3, width: 0.3, height: 0.4))
        let session = AVCaptureSession()
        session.commitConfiguration()
        session.sessionPreset = .vga640x480
        session.addInput(try AVCaptureDeviceInput(device: camera))
        let metadata = AVCaptureMetadataOutput()
        let frames = AVCaptureVideoDataOutput()
        session.addOutput(metadata)
        session.addOutput(frames)
        metadata.metadataObjectTypes = [.qr]
        let recorder = MetadataRecorder()
        metadata.setMetadataObjectsDelegate(recorder, queue: DispatchQueue(label: "codes"))
        let delegate = RecordingDelegate()
        frames.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "frames"))
        session.commitConfiguration()
        session.startRunning()
        defer { session.stopRunning() }
        #expect(session.isRunning)
        #expect(delegate.wait(for: 10), "frames arrive after an unmatched commit")
        #expect(delegate.received.allSatisfy { $0.width == 640 && $0.height == 480 })
        #expect(recorder.waitForCode()?.text == "committed without beginning")
        #expect(ToleratedMisuse.reportedKinds.contains("AVCaptureSession.commitConfiguration"))
    }

    /// A commit with no begin on a running session changes nothing that was applied: frames go on at the new size.
    @Test func anUnmatchedCommitOnARunningSessionAppliesThePreset() throws {
        let output = AVCaptureVideoDataOutput()
        let session = try makeSession(devices: [VirtualDevices.front], outputs: [output])
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "frames"))
        session.startRunning()
        defer {
            session.stopRunning()
            session.sessionPreset = .high
        }
        #expect(delegate.wait(for: 3))
        session.sessionPreset = .qvga320x240
        session.commitConfiguration()
        let before = delegate.received.count
        #expect(delegate.wait(for: before + 10))
        let last = delegate.received.last
        #expect(last?.width == 320 && last?.height == 240)
    }

    @Test func aPreferredCameraThatIsAMicrophoneIsIgnored() throws {
        let camera = VirtualDevices.front
        AVCaptureDevice.userPreferredCamera = camera
        AVCaptureDevice.userPreferredCamera = VirtualDevices.microphone
        #expect(AVCaptureDevice.userPreferredCamera === camera)
        AVCaptureDevice.userPreferredCamera = nil
        #expect(AVCaptureDevice.userPreferredCamera === camera, "AVCaptureDevice.h: setting nil has no effect")
        #expect(ToleratedMisuse.reportedKinds.contains("AVCaptureDevice.userPreferredCamera"))
    }

    @Test func anUnsupportedColorSpaceLeavesSRGB() throws {
        let camera = VirtualDevices.back
        try camera.lockForConfiguration()
        camera.activeColorSpace = .P3_D65
        camera.unlockForConfiguration()
        #expect(camera.activeColorSpace == .sRGB)
        #expect(ToleratedMisuse.reportedKinds.contains("AVCaptureDevice.activeColorSpace"))
    }

    /// AVCaptureDevice.h: only the rate's magnitude counts, and a rate of 0 is `cancelVideoZoomRamp`.
    @Test func aNegativeZoomRateRampsAndZeroCancels() throws {
        let camera = VirtualDevices.back
        let output = AVCaptureVideoDataOutput()
        let session = try makeSession(devices: [camera], outputs: [output])
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "frames"))
        session.startRunning()
        try camera.lockForConfiguration()
        defer {
            camera.videoZoomFactor = 1
            camera.unlockForConfiguration()
            session.stopRunning()
        }
        camera.ramp(toVideoZoomFactor: 2, withRate: -8)
        #expect(camera.isRampingVideoZoom)
        #expect(waitUntil(timeout: 10) { !camera.isRampingVideoZoom && camera.videoZoomFactor == 2 })
        camera.ramp(toVideoZoomFactor: 1, withRate: 0.01)
        #expect(camera.isRampingVideoZoom)
        camera.ramp(toVideoZoomFactor: 1, withRate: 0)
        #expect(waitUntil(timeout: 10) { !camera.isRampingVideoZoom })
        #expect(camera.videoZoomFactor > 1.5, "the ramp stopped where it was: \(camera.videoZoomFactor)")
    }

    @Test func aRectOfInterestReachingOutsideIsCut() throws {
        let output = AVCaptureMetadataOutput()
        output.rectOfInterest = CGRect(x: 0.5, y: -0.25, width: 1, height: 0.75)
        #expect(output.rectOfInterest == CGRect(x: 0.5, y: 0, width: 0.5, height: 0.5))
        output.rectOfInterest = CGRect(x: 2, y: 2, width: 1, height: 1)
        #expect(output.rectOfInterest == CGRect(x: 0, y: 0, width: 1, height: 1))
        output.setMetadataObjectsDelegate(nil, queue: DispatchQueue(label: "unused"))
        #expect(output.metadataObjectsCallbackQueue == nil)
        #expect(ToleratedMisuse.reportedKinds.contains("AVCaptureMetadataOutput.rectOfInterest"))
    }

    /// audioSettings the converter cannot make are brought to the nearest it can: 6 channels give 2.
    @Test func audioSettingsOutOfRangeDeliverTheNearestFormat() throws {
        let output = AVCaptureAudioDataOutput()
        output.audioSettings = [
            AVFormatIDKey: kAudioFormatLinearPCM, AVNumberOfChannelsKey: 6, AVSampleRateKey: 1_000_000,
            AVLinearPCMBitDepthKey: 24, AVLinearPCMIsFloatKey: false,
        ]
        let session = try makeSession(devices: [VirtualDevices.microphone], outputs: [output])
        let delegate = AudioFormatRecorder()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "audio"))
        session.startRunning()
        defer { session.stopRunning() }
        let format = try #require(delegate.firstFormat(timeout: 10))
        #expect(format.mChannelsPerFrame == 2 && format.mSampleRate == 192_000 && format.mBitsPerChannel == 16)
        #expect(ToleratedMisuse.reportedKinds.contains("AVCaptureAudioDataOutput.audioSettings"))
    }

    @Test func thePreEventOutputNeitherPausesNorTakesANegativePreRoll() {
        let output = AVCapturePreEventFileOutput()
        output.preRollDuration = CMTime(value: -3, timescale: 1)
        #expect(output.preRollDuration == .zero)
        output.pauseRecording()
        output.resumeRecording()
        #expect(!output.isRecordingPaused)
        let depth = AVCaptureDepthDataOutput()
        depth.setDelegate(nil, callbackQueue: DispatchQueue(label: "unused"))
        #expect(depth.delegateCallbackQueue == nil)
        #expect(ToleratedMisuse.reportedKinds.contains("AVCapturePreEventFileOutput.pauseRecording"))
    }

    /// The trap Apple documents next to the tolerated commit: starting inside an open configuration.
    @Test func startingInsideAnOpenConfigurationTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let session = AVCaptureSession()
            session.beginConfiguration()
            session.startRunning()
        }.map { result in
            #expect(String(decoding: result.standardErrorContent, as: UTF8.self).contains("NSGenericException"))
        }
    }

    /// The rule is the caller's own: a configuration another thread has open does not make this thread's start and
    /// stop a misuse (APIStressTests drives the session from eight threads at once).
    @Test func anotherThreadsOpenConfigurationDoesNotTrap() throws {
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [])
        let opened = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            session.beginConfiguration()
            opened.signal()
            release.wait()
            session.commitConfiguration()
            finished.signal()
        }
        opened.wait()
        session.startRunning()
        #expect(session.isRunning)
        session.stopRunning()
        release.signal()
        finished.wait()
        #expect(!session.isRunning)
    }

    @Test func aWriterWithoutInputsFailsToStart() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("no-inputs-\(UUID().uuidString).mov")
        let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
        writer.movieFragmentInterval = CMTime(value: -1, timescale: 1)
        #expect(!writer.movieFragmentInterval.isValid)
        #expect(!writer.startWriting())
        #expect(writer.status == .failed)
        #expect((writer.error as? AVError)?.code == .operationNotAllowed)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }
}

/// Records the stream description of the first audio buffer delivered.
private final class AudioFormatRecorder: NSObject, AVCaptureAudioDataOutputSampleBufferDelegate, @unchecked Sendable {
    private let first = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var format: AudioStreamBasicDescription?

    func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        guard let description = sampleBuffer.formatDescription?.audioStreamBasicDescription else { return }
        lock.lock()
        let isFirst = format == nil
        if isFirst { format = description }
        lock.unlock()
        if isFirst { first.signal() }
    }

    func firstFormat(timeout: TimeInterval) -> AudioStreamBasicDescription? {
        guard first.wait(timeout: .now() + timeout) == .success else { return nil }
        lock.lock()
        defer { lock.unlock() }
        return format
    }
}
