import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// One compressed format of the virtual USB webcam: what a compressor is made for.
///
/// Value type; safe to use from any thread.
package struct VirtualCompressedFormat: Sendable, Hashable {
    /// The codec: `'jpeg'` (MJPEG, baseline JFIF 4:2:2 frames) or `'avc1'` (H.264 in Annex B, parameter sets before
    /// every key frame, as UVC H.264 cameras send).
    package var codec: FourCharCode
    package var width: Int
    package var height: Int
    /// The stream's frame rate (frames per second, rounded): rate control and key frame spacing use it.
    package var frameRate: Int

    package init(codec: FourCharCode, width: Int, height: Int, frameRate: Int) {
        self.codec = codec
        self.width = width
        self.height = height
        self.frameRate = frameRate
    }

    /// The pixel format the camera renders frames in for this codec: YUYV (`'yuvs'`, true 4:2:2 chroma) for MJPEG,
    /// so the 4:2:2 JPEG keeps every chroma row the renderer drew; NV12 (`'420v'`) for H.264, which libx264 takes
    /// as it is.
    package var renderedPixelFormat: OSType {
        codec == VirtualCompressedFormat.mjpeg
            ? kCVPixelFormatType_422YpCbCr8_yuvs : kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
    }

    /// `'jpeg'`.
    package static let mjpeg: FourCharCode = 0x6A70_6567
    /// `'avc1'`.
    package static let h264: FourCharCode = 0x6176_6331
}

/// Compresses the virtual webcam's rendered frames into the bitstream its compressed formats deliver.
///
/// Why a seam: drivers never import MediaCodecs (DESIGN), yet a webcam that sends MJPEG or H.264 needs an encoder.
/// CaptureDrivers defines this protocol and plays whatever implements it; OpenAVCapture implements it on
/// MediaCodecs (TurboJPEG for MJPEG, libx264 for H.264) and installs the factory on the shared driver's webcam
/// (`VirtualCamera.installFrameCompressors(_:)`), as it passes `MoviePacketSourceOpener` to movie-file devices.
/// Driver tests can install a compressor of their own.
///
/// Threading: thread-bound; the camera makes one per stream and uses it only on that stream's capture thread.
package protocol VirtualFrameCompressor: AnyObject {
    /// Compresses `frame` (the format's `renderedPixelFormat`, its size) shown at `presentationTime` and calls
    /// `body` with the whole access unit (a JPEG image; an H.264 access unit with start codes). The bytes are valid
    /// only during the call. Throws when the encoder fails.
    func compress(
        _ frame: CVPixelBuffer, presentationTime: CMTime, _ body: (UnsafeRawBufferPointer) -> Void
    ) throws
}

/// Makes a compressor for one stream of a compressed format; throws when the codec cannot be set up.
package typealias VirtualFrameCompressorFactory =
    @Sendable (VirtualCompressedFormat) throws -> any VirtualFrameCompressor

/// The memory the webcam's compressed frames are delivered in: a few growable byte slots, each lent out as one
/// frame's `CMBlockBuffer` and taken back when the last holder lets go, so streaming reuses its memory as a
/// camera's mmap buffers are reused (only the small block and sample buffer objects are made per frame).
///
/// Threading: thread safe. `reserve`, `fill` and `cancel` are for the capture thread; slots come back on whichever
/// thread releases the block buffer (a mutex guards which are out).
final class VirtualBitstreamSlots: Sendable {
    /// One slot's memory. `@unchecked Sendable`: the bytes are written only by the capture thread while the slot is
    /// not lent, and read by consumers only while it is.
    private final class Slot: @unchecked Sendable {
        var memory: UnsafeMutableRawPointer?
        var capacity = 0

        deinit { memory?.deallocate() }
    }

    private let slots: [Slot]
    private let isLent: Mutex<[Bool]>

    /// `count` slots, each growing to the largest frame it has held.
    init(count: Int) {
        slots = (0..<count).map { _ in Slot() }
        isLent = Mutex([Bool](repeating: false, count: count))
    }

    /// Takes a free slot for the next frame; nil when every slot is held downstream. Reserving before compressing
    /// spares the encoder a frame that could not be delivered.
    func reserve() -> Int? {
        isLent.withLock { lent in
            guard let index = lent.firstIndex(of: false) else { return nil }
            lent[index] = true
            return index
        }
    }

    /// Gives back a reserved slot that was not filled.
    func cancel(_ index: Int) {
        isLent.withLock { $0[index] = false }
    }

    /// `bytes` copied into the reserved slot `index`, as a block buffer that frees the slot when released.
    func fill(_ index: Int, with bytes: UnsafeRawBufferPointer) -> CMBlockBuffer {
        let slot = slots[index]
        if slot.capacity < bytes.count {
            slot.memory?.deallocate()
            // A quarter more than asked, so a frame slightly larger than the last does not reallocate.
            let capacity = bytes.count + bytes.count / 4
            slot.memory = .allocate(byteCount: capacity, alignment: 64)
            slot.capacity = capacity
        }
        guard let memory = slot.memory else { preconditionFailure("a slot with capacity has memory") }
        if let source = bytes.baseAddress { memory.copyMemory(from: source, byteCount: bytes.count) }
        // The block buffer holds `self`, so the slots outlive every frame lent from them.
        return CMBlockBuffer(wrapping: memory, length: bytes.count) { [self] _ in cancel(index) }
    }
}
