import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing

/// Zero shutter lag and responsive capture on a camera whose clock the test moves: which frame a photo is, by its
/// timestamp and by the frame-index code drawn into its pixels, compared with the frames a video data output saw.
@Suite(.serialized) struct ZeroShutterLagTests {
    /// NV12 photo settings: the pixels, so the frame-index code can be read back.
    static func pixelSettings() -> AVCapturePhotoSettings {
        AVCapturePhotoSettings(format: [
            kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
        ])
    }

    /// The frame index drawn into a photo's pixels.
    static func frameIndex(of photo: AVCapturePhoto?) -> UInt32? {
        photo?.pixelBuffer.flatMap(VirtualFrameReader.readFrameIndex(from:))
    }

    /// Expects `photo` to be `frame`: the same time, and the same pixels' code. The first frame of every second is
    /// the virtual camera's flash frame, which carries no code: there both read nil and the time decides.
    static func expect(
        _ photo: AVCapturePhoto?, is frame: SeenFrame?, _ errors: [any Error],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(photo != nil && frame != nil, "no photo or no frame: \(errors)", sourceLocation: sourceLocation)
        guard let photo, let frame else { return }
        #expect(photo.timestamp == frame.time, sourceLocation: sourceLocation)
        #expect(frameIndex(of: photo) == frame.index, sourceLocation: sourceLocation)
    }

    /// A session with a photo output and a video data output that notes every frame; the camera on `clock`.
    final class Rig {
        let photos = AVCapturePhotoOutput()
        let frames = AVCaptureVideoDataOutput()
        let session: AVCaptureSession
        let clock: VirtualDeviceClock
        private let seen = FrameLog()
        private let delegate: RecordingDelegate
        static let frameTime = CMTime(value: 1, timescale: 30)

        init(clock: VirtualDeviceClock) throws {
            self.clock = clock
            let seen = self.seen
            delegate = RecordingDelegate { sample, _ in
                let index = sample.imageBuffer.flatMap(VirtualFrameReader.readFrameIndex(from:))
                seen.frames.withLock { $0.append(SeenFrame(time: sample.presentationTimeStamp, index: index)) }
            }
            frames.alwaysDiscardsLateVideoFrames = false
            frames.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "zsl-frames"))
            session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [photos, frames])
        }

        /// Moves the clock on `count` frames, each handled by the data output before the next.
        func advance(frames count: Int64) -> Bool {
            clock.advance(by: CMTimeMultiply(Self.frameTime, multiplier: Int32(count)), step: Self.frameTime, settling: [frames])
        }

        /// The newest frame the data output saw.
        var newest: SeenFrame? { seen.frames.withLock { $0.last } }
    }

    @Test("Supported and on by default in a session with a camera; off and unsupported outside one")
    func defaults() throws {
        let loose = AVCapturePhotoOutput()
        #expect(!loose.isZeroShutterLagSupported && !loose.isZeroShutterLagEnabled)
        #expect(!loose.isResponsiveCaptureSupported && !loose.isFastCapturePrioritizationSupported)
        let output = AVCapturePhotoOutput()
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [output])
        defer { withExtendedLifetime(session) {} }
        #expect(output.isZeroShutterLagSupported && output.isZeroShutterLagEnabled)
        #expect(output.isResponsiveCaptureSupported && !output.isResponsiveCaptureEnabled)
        #expect(!output.isFastCapturePrioritizationSupported)
        output.isResponsiveCaptureEnabled = true
        #expect(output.isFastCapturePrioritizationSupported && !output.isFastCapturePrioritizationEnabled)
        output.isFastCapturePrioritizationEnabled = true
        #expect(output.isFastCapturePrioritizationEnabled)
        output.isZeroShutterLagEnabled = false
        #expect(!output.isResponsiveCaptureSupported && !output.isResponsiveCaptureEnabled)
        #expect(!output.isFastCapturePrioritizationEnabled)
    }

    @Test("With zero shutter lag the photo is the frame current at capturePhoto; without, the next one")
    func photoIsTheCurrentFrame() throws {
        try withManualClock([VirtualDevices.back]) { clock in
            let rig = try Rig(clock: clock)
            rig.session.startRunning()
            defer { rig.session.stopRunning() }
            #expect(rig.advance(frames: 10))
            let current = try #require(rig.newest)
            // The clock stands still: only a frame already delivered can make this photo.
            let (quick, recorder) = takePhoto(rig.photos, Self.pixelSettings())
            Self.expect(quick, is: current, recorder.errors)

            rig.photos.isZeroShutterLagEnabled = false
            let late = PhotoRecorder()
            rig.photos.capturePhoto(with: Self.pixelSettings(), delegate: late)
            #expect(rig.advance(frames: 1))
            #expect(late.waitForFinish())
            let next = try #require(rig.newest)
            #expect(next.time == current.time + Rig.frameTime)
            Self.expect(late.photos.first, is: next, late.errors)
        }
    }

    @Test(
        "A capture during another's processing: responsive takes its frame at once, otherwise after the first ends",
        arguments: [true, false])
    func responsiveCapture(responsive: Bool) throws {
        try withManualClock([VirtualDevices.back]) { clock in
            let rig = try Rig(clock: clock)
            rig.photos.isResponsiveCaptureEnabled = responsive
            rig.session.startRunning()
            defer { rig.session.stopRunning() }
            #expect(rig.advance(frames: 10))
            // The first photo's delegate holds the output's queue in didCapturePhoto: its processing cannot end.
            let holding = HoldingPhotoDelegate()
            rig.photos.capturePhoto(with: Self.pixelSettings(), delegate: holding)
            #expect(rig.advance(frames: 3))
            let pressed = try #require(rig.newest)
            let second = PhotoRecorder()
            rig.photos.capturePhoto(with: Self.pixelSettings(), delegate: second)
            #expect(rig.advance(frames: 2))
            let released = try #require(rig.newest)
            holding.release()
            #expect(second.waitForFinish())
            Self.expect(second.photos.first, is: responsive ? pressed : released, second.errors)
            #expect(holding.waitForFinish())
        }
    }

    @Test("Enabling zero shutter lag on an output outside a session traps, naming the rule")
    func enablingUnsupportedTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            AVCapturePhotoOutput().isZeroShutterLagEnabled = true
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("isZeroShutterLagSupported"), "\(message)")
    }
}

/// A frame a data output saw: its time and the index code in its pixels (nil on a flash frame).
struct SeenFrame: Sendable {
    let time: CMTime
    let index: UInt32?
}

/// The frames a data output saw, shared with its delegate.
final class FrameLog: Sendable {
    let frames = Mutex<[SeenFrame]>([])
}

/// A photo delegate that holds the output's queue in `didCapturePhoto` until released.
final class HoldingPhotoDelegate: NSObject, AVCapturePhotoCaptureDelegate, @unchecked Sendable {
    private let gate = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    func release() { gate.signal() }
    func waitForFinish() -> Bool { finished.wait(timeout: .now() + 20) == .success }

    func photoOutput(_ output: AVCapturePhotoOutput, didCapturePhotoFor resolvedSettings: AVCaptureResolvedPhotoSettings) {
        _ = gate.wait(timeout: .now() + 20)
    }

    func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishCaptureFor resolvedSettings: AVCaptureResolvedPhotoSettings,
        error: (any Error)?
    ) {
        finished.signal()
    }
}
