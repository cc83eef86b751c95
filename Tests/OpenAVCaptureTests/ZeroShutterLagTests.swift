import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing

/// Zero shutter lag and responsive capture on a camera whose clock the test moves: which frame a photo is, read
/// from the frame-index code drawn into its pixels and compared with the frames a video data output saw.
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

    /// A session with a photo output and a video data output that notes every frame's index; the camera on `clock`.
    final class Rig {
        let photos = AVCapturePhotoOutput()
        let frames = AVCaptureVideoDataOutput()
        let session: AVCaptureSession
        let clock: VirtualDeviceClock
        private let seen = IndexLog()
        private let delegate: RecordingDelegate
        static let frameTime = CMTime(value: 1, timescale: 30)

        init(clock: VirtualDeviceClock) throws {
            self.clock = clock
            let seen = self.seen
            delegate = RecordingDelegate { sample, _ in
                guard let image = sample.imageBuffer, let index = VirtualFrameReader.readFrameIndex(from: image)
                else { return }
                seen.indices.withLock { $0.append(index) }
            }
            frames.alwaysDiscardsLateVideoFrames = false
            frames.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "zsl-frames"))
            session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [photos, frames])
        }

        /// Moves the clock on `count` frames, each handled by the data output before the next.
        func advance(frames count: Int64) -> Bool {
            clock.advance(by: CMTimeMultiply(Self.frameTime, multiplier: Int32(count)), step: Self.frameTime, settling: [frames])
        }

        /// The index of the newest frame the data output saw.
        var newestIndex: UInt32? { seen.indices.withLock { $0.last } }
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
            let current = try #require(rig.newestIndex)
            // The clock stands still: only a frame already delivered can make this photo.
            let (quick, recorder) = takePhoto(rig.photos, Self.pixelSettings())
            #expect(Self.frameIndex(of: quick) == current, "\(recorder.errors)")

            rig.photos.isZeroShutterLagEnabled = false
            let late = PhotoRecorder()
            rig.photos.capturePhoto(with: Self.pixelSettings(), delegate: late)
            #expect(rig.advance(frames: 1))
            #expect(late.waitForFinish())
            let next = try #require(rig.newestIndex)
            #expect(next == current + 1)
            #expect(Self.frameIndex(of: late.photos.first) == next)
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
            let pressed = try #require(rig.newestIndex)
            let second = PhotoRecorder()
            rig.photos.capturePhoto(with: Self.pixelSettings(), delegate: second)
            #expect(rig.advance(frames: 2))
            let released = try #require(rig.newestIndex)
            holding.release()
            #expect(second.waitForFinish())
            #expect(Self.frameIndex(of: second.photos.first) == (responsive ? pressed : released))
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

/// The frame indices a data output saw, shared with its delegate.
final class IndexLog: Sendable {
    let indices = Mutex<[UInt32]>([])
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
