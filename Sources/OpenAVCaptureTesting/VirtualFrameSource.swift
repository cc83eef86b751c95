import CaptureDrivers
import Foundation

/// The virtual camera's picture on demand: frame `n` of a stream at a constant frame rate that started at 0,
/// exactly as the camera renders it with its default controls (1/60 s, ISO 100, no zoom, lens on the target,
/// neutral white balance) looking at the default scene — for benchmarks, and for tests that need frames without
/// a device.
///
/// Frame `n` is stamped `n / frameRate` seconds, carries `n` as its frame-index code, and is the flash frame when
/// its interval holds a whole second (frame 0, then every `frameRate`-th at whole frame rates). Renders into NV12
/// (levels are video range, whichever range the buffer is tagged with) or YUYV pixel buffers of the
/// source's size. After the first frame (which builds the row templates), rendering allocates nothing.
///
/// Threading: not thread safe; use one source from one thread at a time (it holds scratch memory). Two sources of
/// one size render identical bytes.
public final class VirtualFrameSource {
    /// The frame width in pixels.
    public let width: Int
    /// The frame height in pixels.
    public let height: Int
    /// Frames per second: frame `n` is stamped `n / frameRate` s.
    public let frameRate: Int32
    /// The back camera (as drawn) or the front camera (mirrored).
    public let isMirrored: Bool
    private let renderer: VirtualFrameRenderer
    private var scene: VirtualScene
    private let optics: VirtualOptics

    /// A source of `width` by `height` frames (both even, at least 112 by 48) at `frameRate` frames per second,
    /// as the back camera (or, `isMirrored`, the front camera) sees the default scene.
    public init(width: Int, height: Int, frameRate: Int32 = 30, isMirrored: Bool = false) {
        precondition(frameRate > 0, "a frame rate is positive, not \(frameRate)")
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.isMirrored = isMirrored
        renderer = VirtualFrameRenderer(width: width, height: height)
        var scene = VirtualScene()
        scene.camera = isMirrored ? .front : .back
        self.scene = scene
        optics = VirtualAutoControls.optics(for: VirtualCameraControls.initialState(scene: scene))
    }

    /// Shows `text` as a `type` code over `rect` of the frame in the frames rendered from now on, as
    /// `VirtualCameraController.showCode(_:type:in:)` does on a live camera.
    public func showCode(_ text: String, type: AVMetadataObject.ObjectType, in rect: CGRect) {
        scene.card = VirtualCard(showing: text, as: type, in: rect)
    }

    /// The presentation time of frame `frameIndex`.
    public func presentationTime(ofFrame frameIndex: UInt32) -> CMTime {
        CMTime(value: Int64(frameIndex), timescale: frameRate)
    }

    /// Whether frame `frameIndex` is a flash frame.
    public func isFlashFrame(_ frameIndex: UInt32) -> Bool {
        parameters(frameIndex).isFlashFrame
    }

    /// Renders frame `frameIndex` into `pixelBuffer`, which must be `width` by `height`, NV12 (`'420v'` or
    /// `'420f'`) or YUYV (`'yuvs'`). Allocates nothing after the first call.
    public func render(frameIndex: UInt32, into pixelBuffer: CVPixelBuffer) {
        precondition(
            CVPixelBufferGetWidth(pixelBuffer) == width && CVPixelBufferGetHeight(pixelBuffer) == height,
            "VirtualFrameSource: the pixel buffer is not \(width)x\(height)")
        let parameters = parameters(frameIndex)
        let format = CVPixelBufferGetPixelFormatType(pixelBuffer)
        pixelBuffer.withLockedPlanes { planes in
            switch format {
            case kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8BiPlanarFullRange:
                let luma = planes[0]
                let chroma = planes[1]
                renderer.renderNV12(
                    parameters,
                    luma: luma.baseAddress.assumingMemoryBound(to: UInt8.self), lumaStride: luma.bytesPerRow,
                    chroma: chroma.baseAddress.assumingMemoryBound(to: UInt8.self), chromaStride: chroma.bytesPerRow)
            case kCVPixelFormatType_422YpCbCr8_yuvs:
                let plane = planes[0]
                renderer.renderYUYV(
                    parameters, pixels: plane.baseAddress.assumingMemoryBound(to: UInt8.self),
                    stride: plane.bytesPerRow)
            default:
                preconditionFailure("VirtualFrameSource: renders NV12 or YUYV, not pixel format \(format)")
            }
        }
    }

    private func parameters(_ frameIndex: UInt32) -> VirtualFrameParameters {
        VirtualFrameParameters(
            index: frameIndex, frameDuration: 1, timescale: frameRate, scene: scene, optics: optics)
    }
}

/// The virtual microphone's sound on demand: sample `n` of its stream, as the microphone produces it (a 440 Hz
/// tone at −30 dBFS peak, a 50 ms 1 kHz beep at −6 dBFS peak starting at every whole second, i.e. every
/// `sampleRate`-th sample), on every channel — for benchmarks, and for tests that need sound without a device.
///
/// Threading: a value holding immutable tables; safe to use from any thread. Rendering allocates nothing.
public struct VirtualSoundSource: Sendable {
    private let synth: VirtualMicrophoneSynth

    /// A source at `sampleRate` hertz (48 kHz, as the microphone, by default; at least 4 kHz) with `channelCount`
    /// interleaved channels. Builds one-second tables (6 bytes per sample of the rate).
    public init(sampleRate: Int = 48_000, channelCount: Int = 1) {
        synth = VirtualMicrophoneSynth(sampleRate: sampleRate, channelCount: channelCount)
    }

    /// Samples per second per channel.
    public var sampleRate: Int { synth.sampleRate }
    /// Interleaved channels per frame.
    public var channelCount: Int { synth.channelCount }

    /// Writes frames `startingAt ..< startingAt + frameCount` into `buffer` as interleaved floats in −1 ... 1:
    /// `buffer` holds at least `frameCount · channelCount` samples.
    public func render(startingAt sampleIndex: Int64, frameCount: Int, into buffer: UnsafeMutableBufferPointer<Float>) {
        precondition(buffer.count >= frameCount * channelCount, "the buffer is too small for \(frameCount) frames")
        guard let base = buffer.baseAddress else { return }
        synth.render(startingAt: sampleIndex, frameCount: frameCount, into: base)
    }

    /// Writes frames as interleaved signed 16-bit samples (`round(s · 32767)`).
    public func render(startingAt sampleIndex: Int64, frameCount: Int, into buffer: UnsafeMutableBufferPointer<Int16>) {
        precondition(buffer.count >= frameCount * channelCount, "the buffer is too small for \(frameCount) frames")
        guard let base = buffer.baseAddress else { return }
        synth.render(startingAt: sampleIndex, frameCount: frameCount, into: base)
    }
}
