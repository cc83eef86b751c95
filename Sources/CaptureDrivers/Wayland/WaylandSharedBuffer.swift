import CWayland
import OpenCoreMedia

/// A wl_shm buffer the compositor copies frames into: a memfd mapping that outlives its stream, so a frame lent
/// downstream stays readable after the stream ended (the wl_buffer itself goes with the stream's connection).
///
/// Threading: thread-bound to the capture thread, except that the pixel buffers wrapping it keep it alive from any
/// thread.
final class WaylandSharedBuffer: @unchecked Sendable {
    let pointer: OpaquePointer
    let width: Int
    let height: Int
    let bytesPerRow: Int

    init?(connection: WaylandConnection, info: CWayland_BufferInfo) {
        guard let pointer = CWayland_bufferCreate(connection.pointer, info) else { return nil }
        self.pointer = pointer
        width = Int(info.width)
        height = Int(info.height)
        bytesPerRow = Int(info.stride)
    }

    deinit { CWayland_bufferDestroy(pointer) }

    var baseAddress: UnsafeMutableRawPointer { CWayland_bufferData(pointer) }

    /// Drops the compositor's side; the mapping stays until the last frame over it goes.
    func detach() { CWayland_bufferDetach(pointer) }

    /// A BGRA pixel buffer over the mapping that keeps this buffer alive while it lives.
    func wrapPixelBuffer() throws(CVPixelBufferCreationError) -> CVPixelBuffer {
        try CVPixelBuffer(
            width: width, height: height, pixelFormatType: kCVPixelFormatType_32BGRA,
            planes: [WrappedPlane(baseAddress: baseAddress, bytesPerRow: bytesPerRow)], release: { [self] in _ = self })
    }
}
