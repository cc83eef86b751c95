import Foundation
import OpenAVCapture
import Synchronization
import TestSupport
import Testing

/// AVFAudio's session, formats and PCM buffers, the camera features no camera here has (video HDR, Center Stage,
/// the portrait effect) and the rest of the pixel format constants, through the public API on the virtual devices.
@Suite(.serialized) struct AppleAdditionsTests {
    @Test func theAudioSessionKeepsItsSettingsAndReportsTheMicrophone() async throws {
        let session = AVAudioSession.sharedInstance()
        try session.setCategory(.playAndRecord, mode: .videoRecording, options: [.defaultToSpeaker, .allowBluetooth])
        try session.setPreferredSampleRate(44_100)
        try session.setActive(true)
        #expect(session.category == .playAndRecord && session.mode == .videoRecording)
        #expect(session.categoryOptions == [.defaultToSpeaker, .allowBluetooth])
        #expect(session.preferredSampleRate == 44_100 && session.isActive)
        let microphone = VirtualDevices.microphone
        let rate = try #require(microphone.activeFormat.formatDescription.audioStreamBasicDescription?.mSampleRate)
        #expect(session.sampleRate == rate, "the microphone's rate, not the preference")
        #expect(session.isInputAvailable && session.recordPermission == .granted)
        let granted = await withCheckedContinuation { continuation in
            session.requestRecordPermission { continuation.resume(returning: $0) }
        }
        #expect(granted)
        try session.setActive(false, options: .notifyOthersOnDeactivation)
        #expect(!session.isActive)
    }

    /// Capture's 16-bit samples copied into an `AVAudioPCMBuffer` of the format the sample buffer describes.
    @Test func aCapturedAudioBufferFitsAPCMBufferOfItsFormat() throws {
        let output = AVCaptureAudioDataOutput()
        output.audioSettings = [
            AVFormatIDKey: kAudioFormatLinearPCM, AVLinearPCMBitDepthKey: 16, AVLinearPCMIsFloatKey: false,
        ]
        let session = try makeSession(devices: [VirtualDevices.microphone], outputs: [output])
        let delegate = RecordingDelegate(inspect: { sample, _ in Self.firstSample.withLock { $0 = $0 ?? SampleBox(sample) } })
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "audio"))
        session.startRunning()
        defer { session.stopRunning() }
        #expect(delegate.wait(for: 1))
        let sample = try #require(Self.firstSample.withLock { $0 }).sample
        let description = try #require(sample.formatDescription)
        let format = try #require(AVAudioFormat(cmAudioFormatDescription: description))
        #expect(format.commonFormat == .pcmFormatInt16 && format.isInterleaved)
        #expect(format.streamDescription.pointee.mBitsPerChannel == 16)
        #expect(format.settings[AVLinearPCMBitDepthKey] as? Int == 16)
        let frames = AVAudioFrameCount(sample.numSamples)
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: frames))
        buffer.frameLength = frames
        #expect(buffer.floatChannelData == nil && buffer.stride == Int(format.channelCount))
        let samples = try #require(buffer.int16ChannelData)
        let byteCount = Int(frames) * Int(format.channelCount) * 2
        let block = try #require(sample.dataBuffer)
        #expect(CMBlockBufferCopyDataBytes(block, atOffset: 0, dataLength: byteCount, destination: samples[0]) == noErr)
        var expected = [Int16](repeating: 0, count: byteCount / 2)
        expected.withUnsafeMutableBytes { _ = CMBlockBufferCopyDataBytes(block, atOffset: 0, dataLength: byteCount, destination: $0.baseAddress!) }
        #expect(Array(UnsafeBufferPointer(start: samples[0], count: expected.count)) == expected)
        buffer.frameLength = frames + 1
        #expect(buffer.frameLength == frames, "a length beyond the capacity is the capacity")

        let standard = try #require(AVAudioFormat(standardFormatWithSampleRate: 48_000, channels: 2))
        #expect(standard.isStandard && !standard.isInterleaved && standard.commonFormat == .pcmFormatFloat32)
        let floats = try #require(AVAudioPCMBuffer(pcmFormat: standard, frameCapacity: 256))
        let channels = try #require(floats.floatChannelData)
        #expect(channels[1] - channels[0] >= 256 && floats.stride == 1)
        #expect(AVAudioFormat(standardFormatWithSampleRate: 0, channels: 2) == nil)
    }

    @Test func videoHDRCenterStageAndPortraitAreOff() throws {
        let camera = VirtualDevices.back
        #expect(!camera.activeFormat.isVideoHDRSupported && !camera.activeFormat.isCenterStageSupported)
        #expect(camera.automaticallyAdjustsVideoHDREnabled && !camera.isVideoHDREnabled)
        try camera.lockForConfiguration()
        camera.automaticallyAdjustsVideoHDREnabled = false
        camera.isVideoHDREnabled = false
        #expect(!camera.automaticallyAdjustsVideoHDREnabled && !camera.isVideoHDREnabled)
        camera.automaticallyAdjustsVideoHDREnabled = true
        camera.unlockForConfiguration()
        AVCaptureDevice.centerStageControlMode = .cooperative
        AVCaptureDevice.isCenterStageEnabled = true
        #expect(AVCaptureDevice.isCenterStageEnabled && !camera.isCenterStageActive, "enabled, never active here")
        AVCaptureDevice.isCenterStageEnabled = false
        AVCaptureDevice.centerStageControlMode = .user
        #expect(!camera.isPortraitEffectActive && !AVCaptureDevice.isPortraitEffectEnabled)
    }

    @Test func turningOnHDRWithoutAnHDRFormatTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let camera = AVCaptureDevice.default(for: .video)!
            try? camera.lockForConfiguration()
            camera.automaticallyAdjustsVideoHDREnabled = false
            camera.isVideoHDREnabled = true
        }.map { result in
            #expect(String(decoding: result.standardErrorContent, as: UTF8.self).contains("NSGenericException"))
        }
    }

    @Test func theRestOfThePixelFormatsHaveApplesCodesAndAreRefusedHonestly() {
        func code(_ value: OSType) -> String {
            String(decoding: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }, as: UTF8.self)
        }
        #expect(code(kCVPixelFormatType_422YpCbCr10) == "v210" && code(kCVPixelFormatType_64RGBAHalf) == "RGhA")
        #expect(code(kCVPixelFormatType_422YpCbCr8BiPlanarVideoRange) == "422v")
        #expect(kCVPixelFormatType_8IndexedGray_WhiteIsZero == 0x28)
        var buffer: CVPixelBuffer?
        #expect(CVPixelBufferCreate(nil, 64, 48, kCVPixelFormatType_422YpCbCr10, nil, &buffer) == kCVReturnInvalidPixelFormat)
        #expect(buffer == nil)
    }

    private struct SampleBox: @unchecked Sendable {
        let sample: CMSampleBuffer
        init(_ sample: CMSampleBuffer) { self.sample = sample }
    }

    private static let firstSample = Mutex<SampleBox?>(nil)
}
