import OpenAVCapture
import Synchronization
import Testing

/// Device configuration through Apple's API: the lock, formats and frame durations, control setters, KVO, and
/// the traps Apple documents as exceptions (checked in child processes with exit tests).
///
/// Serialized: the tests share the process's virtual devices.
@Suite(.serialized) struct AVCaptureDeviceConfigurationTests {
    private func frontCamera() throws -> AVCaptureDevice {
        try #require(AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .front))
    }

    @Test func activeFormatAndFrameDurationsChangeUnderTheLockAndAreObservable() throws {
        let camera = try frontCamera()
        let original = camera.activeFormat
        defer {
            try? camera.lockForConfiguration()
            camera.activeFormat = original
            camera.unlockForConfiguration()
        }
        let hfr = try #require(camera.formats.first { $0.videoSupportedFrameRateRanges.contains { $0.maxFrameRate == 120 } })
        let seen = Mutex<[String]>([])
        let formatToken = camera.observe(\.activeFormat, options: [.new]) { _, change in
            seen.withLock { $0.append("format \(change.newValue!.formatDescription.dimensions.width)") }
        }
        let durationToken = camera.observe(\.activeVideoMinFrameDuration, options: [.old, .new]) { _, change in
            seen.withLock { $0.append("min \(change.oldValue!.seconds) -> \(change.newValue!.seconds)") }
        }
        defer {
            formatToken.invalidate()
            durationToken.invalidate()
        }
        try camera.lockForConfiguration()
        camera.activeFormat = hfr
        camera.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 120)
        camera.activeVideoMaxFrameDuration = CMTime(value: 1, timescale: 60)
        camera.unlockForConfiguration()
        #expect(camera.activeFormat === hfr)
        #expect(camera.activeVideoMinFrameDuration == CMTime(value: 1, timescale: 120))
        #expect(camera.activeVideoMaxFrameDuration == CMTime(value: 1, timescale: 60))
        // Setting the format alone does not change the default 1/30 s duration; the explicit setter does.
        #expect(seen.withLock { $0 } == ["format 1280", "min \(1.0 / 30) -> \(1.0 / 120)"])

        try camera.lockForConfiguration()
        camera.activeVideoMinFrameDuration = .invalid  // back to the format's default
        camera.unlockForConfiguration()
        #expect(camera.activeVideoMinFrameDuration == CMTime(value: 1, timescale: 30))
    }

    @Test func controlSettersChangeStateAndNotifyOnlyRealChanges() throws {
        let camera = try frontCamera()
        let modes = Mutex<[AVCaptureDevice.FocusMode]>([])
        let token = camera.observe(\.focusMode, options: [.initial, .new]) { _, change in
            modes.withLock { $0.append(change.newValue!) }
        }
        defer { token.invalidate() }
        try camera.lockForConfiguration()
        defer { camera.unlockForConfiguration() }
        camera.focusMode = .locked
        camera.focusMode = .locked
        camera.focusMode = .continuousAutoFocus
        #expect(modes.withLock { $0 } == [.continuousAutoFocus, .locked, .continuousAutoFocus])
        #expect(camera.isFocusModeSupported(.autoFocus))
        #expect(!camera.hasFlash && !camera.hasTorch)
        #expect(!camera.isFlashModeSupported(.on) && camera.isFlashModeSupported(.off))

        camera.videoZoomFactor = 3
        #expect(camera.videoZoomFactor == 3)
        camera.videoZoomFactor = 1
        #expect(camera.maxAvailableVideoZoomFactor == 4)
    }

    @Test func lockNests() throws {
        let camera = try frontCamera()
        try camera.lockForConfiguration()
        try camera.lockForConfiguration()
        camera.unlockForConfiguration()
        camera.videoZoomFactor = 1  // still locked once
        camera.unlockForConfiguration()
        camera.unlockForConfiguration()  // unbalanced unlock: ignored, as Apple's
    }

    @Test func errorsAreAppleShaped() {
        let error = AVError(.fileAlreadyExists, userInfo: [AVErrorRecordingSuccessfullyFinishedKey: false])
        let bridged = error as NSError
        #expect(bridged.domain == AVFoundationErrorDomain)
        #expect(bridged.code == -11823)
        #expect(bridged.userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool == false)
        do {
            throw AVError(.diskFull)
        } catch AVError.diskFull {
            // matched by code, as on Apple's platforms
        } catch {
            Issue.record("AVError.diskFull did not match: \(error)")
        }
    }

    // MARK: Misuse traps (Apple raises exceptions); each runs in a child process.

    @Test func settingAControlWithoutTheLockTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let camera = AVCaptureDevice.default(for: .video)!
            camera.focusMode = .locked
        }.map { result in
            let message = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(message.contains("only between lockForConfiguration() and unlockForConfiguration()"))
        }
    }

    @Test func anUnsupportedModeTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let front = AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .front)!
            try? front.lockForConfiguration()
            front.flashMode = .on
        }.map { result in
            let message = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(message.contains("flashMode on is not supported"))
            #expect(message.contains("isFlashModeSupported"))
        }
    }

    @Test func aZoomFactorOutOfRangeTraps() async {
        await #expect(processExitsWith: .failure) {
            let camera = AVCaptureDevice.default(for: .video)!
            try? camera.lockForConfiguration()
            camera.videoZoomFactor = 17
        }
    }

    @Test func aFrameDurationOutsideTheFormatTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let camera = AVCaptureDevice.default(for: .video)!
            try? camera.lockForConfiguration()
            camera.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 240)  // 1080p tops out at 30 fps
        }.map { result in
            #expect(String(decoding: result.standardErrorContent, as: UTF8.self).contains("frame rate ranges"))
        }
    }

    @Test func aForeignFormatTraps() async {
        await #expect(processExitsWith: .failure) {
            let back = AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back)!
            let front = AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .front)!
            try? front.lockForConfiguration()
            front.activeFormat = back.formats.last!  // the back camera's photo format
        }
    }
}
