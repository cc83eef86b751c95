import OpenCoreVideo

/// Copies of a V4L2 camera's raw frames, handed out instead of the camera's own memory when consumers hold so many
/// of its few mapped buffers that the kernel would be left with fewer than ``kernelReserve`` to fill.
///
/// A camera lends 4 buffers; the outputs downstream queue more than that on purpose (a movie file output lets 8
/// frames wait for its encoder, a data output up to 4 for its delegate), so a burst of encoder work, or several
/// cameras sharing the CPU, would leave the kernel with no buffer: the camera would lose frames (`OutOfBuffers`)
/// for every output at once, also the ones that kept up. With a copy taken in time, the kernel keeps filling
/// buffers, and a slow output loses only its own frames, counted where it refuses them. The copy is one pass over
/// the frame's bytes on the capture thread, taken only under that pressure; in the steady state frames still wrap
/// the kernel's memory.
///
/// Copies come from a pool of the frame's format and size, at most ``copyLimit`` held at once: beyond that the
/// consumers hold everything there is, and the camera lends its own buffers to the last (then starves, and the lost
/// frames are `OutOfBuffers`, as before). Copies idle for a second are freed at the next copy (the pool's aging);
/// the pool goes with the stream.
///
/// Threading: thread-bound to the capture thread of the stream that owns it.
package final class V4L2SpareFrames {
    /// The buffers the kernel keeps queued at least before frames are copied: one to fill now and one for the next
    /// frame, should the capture thread be late to dequeue the first.
    package static let kernelReserve = 2
    /// The copies consumers may hold at once: what a movie file output and a data output on one camera hold together
    /// when both are behind (see `FrameConversionStage.downstreamBufferLimit`, the same budget for converted frames).
    package static let copyLimit = 12

    private let pool: CVPixelBufferPool

    /// Spares for frames like `image`; nil when no pool can be made for its format (the stream then lends its own
    /// buffers only).
    init?(like image: CVPixelBuffer) {
        guard
            let pool = try? CVPixelBufferPool(
                width: CVPixelBufferGetWidth(image), height: CVPixelBufferGetHeight(image),
                pixelFormatType: CVPixelBufferGetPixelFormatType(image))
        else { return nil }
        self.pool = pool
    }

    /// A copy of `image` with its attachments, or nil when ``copyLimit`` copies are held.
    func copy(_ image: CVPixelBuffer) -> CVPixelBuffer? {
        guard case .success(let copy) = pool.pixelBuffer(allocationThreshold: Self.copyLimit) else { return nil }
        let copied: Bool = image.withLockedPlanes(.readOnly) { source in
            copy.withLockedPlanes([]) { destination in
                guard source.count == destination.count else { return false }
                for (from, to) in zip(source, destination) {
                    let rowBytes = min(from.bytesPerRow, to.bytesPerRow)
                    for row in 0..<min(from.height, to.height) {
                        (to.baseAddress + row * to.bytesPerRow).copyMemory(
                            from: from.baseAddress + row * from.bytesPerRow, byteCount: rowBytes)
                    }
                }
                return true
            }
        }
        guard copied else { return nil }
        CVBufferPropagateAttachments(image, copy)
        return copy
    }
}
