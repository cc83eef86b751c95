/// A borrowed 8-bit luma plane: `height` rows of `width` bytes, `stride` bytes apart.
///
/// Works on any plane: the Y plane of our NV12 frames, or frames decoded by `ffmpeg -pix_fmt gray` (full range)
/// or `-pix_fmt nv12` (video range). It does not own the bytes: use it only while they live (inside the
/// `withUnsafeBufferPointer` that made it). Not `Sendable`: it holds a pointer.
package struct VirtualLumaPlane {
    /// The bytes, at least `stride · (height − 1) + width` of them.
    package let pixels: UnsafeBufferPointer<UInt8>
    /// The width in pixels.
    package let width: Int
    /// The height in pixels.
    package let height: Int
    /// The distance between rows, in bytes.
    package let stride: Int

    /// A plane over `pixels`; traps when the buffer is too small for the size and stride.
    package init(pixels: UnsafeBufferPointer<UInt8>, width: Int, height: Int, stride: Int) {
        precondition(
            width > 0 && height > 0 && stride >= width, "a luma plane needs a positive size and stride ≥ width")
        precondition(pixels.count >= stride * (height - 1) + width, "the luma buffer is smaller than its plane")
        self.pixels = pixels
        self.width = width
        self.height = height
        self.stride = stride
    }

    /// The level of the pixel at column `x`, row `y`.
    @inlinable
    package subscript(x: Int, y: Int) -> UInt8 {
        pixels[y * stride + x]
    }

    /// Calls `body` with a plane over `bytes`, tightly packed unless `stride` is given.
    package static func with<Result>(
        _ bytes: [UInt8],
        width: Int,
        height: Int,
        stride: Int? = nil,
        _ body: (VirtualLumaPlane) throws -> Result
    ) rethrows -> Result {
        try bytes.withUnsafeBufferPointer { buffer in
            try body(VirtualLumaPlane(pixels: buffer, width: width, height: height, stride: stride ?? width))
        }
    }
}

/// Which levels a luma plane uses.
///
/// Value type; safe from any thread.
package enum VirtualLumaRange: Sendable, Hashable {
    /// Video range, black 16 and white 235: our frames, and frames decoded to NV12 or YUV 4:2:0.
    case video
    /// Full range, black 0 and white 255: what `ffmpeg -pix_fmt gray` makes of a video-range movie.
    case full
}
