import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo

// The graph's pictures for the renderers (OpenAVCaptureUI's window, OpenAVCaptureWeb's MJPEG stream): they take
// frames from a `PreviewFeed` and turn them into what they show through these, so neither reaches past the graph
// into the codecs.

/// A preview frame converted to BGRA and scaled to the size it is shown at (libswscale, one SIMD pass, bilinear).
/// The converter is kept while the frames' format and the shown size stay the same.
///
/// Threading: thread-bound, as its converter is; the renderer's thread only. Not `Sendable`.
package struct PreviewPictureScaler {
    private var converter: PixelBufferConverter?

    package init() {}

    /// `image` as `width` x `height` 32BGRA, or nil when it cannot be (a pixel format libswscale does not take, a
    /// size of zero, the converter's two buffers both still held).
    package mutating func bgra(_ image: CVPixelBuffer, width: Int, height: Int) -> CVPixelBuffer? {
        guard width > 0, height > 0 else { return nil }
        let source = PixelBufferConverter.Format(of: image)
        let destination = PixelBufferConverter.Format(pixelFormatType: kCVPixelFormatType_32BGRA, width: width, height: height)
        if converter?.source != source || converter?.destination != destination {
            // Bilinear even when shrinking a lot: a window is resized by dragging, and area averaging's setup for
            // every intermediate size buys nothing a viewer sees.
            converter = try? PixelBufferConverter(
                from: source, to: destination,
                matrix: YCbCrMatrix(attachedTo: image), scalingFilter: .bilinear, minimumBufferCount: 1, bufferLimit: 2)
        }
        return try? converter?.convert(image)
    }

    /// Lets go of the converter and its buffers.
    package mutating func reset() { converter = nil }
}

/// Preview frames as JPEG, straight from their I420 planes (TurboJPEG, no colour conversion): the browser preview's
/// MJPEG parts.
///
/// Threading: thread-bound; one frame at a time (the feed's queue). Not `Sendable`.
package final class PreviewJPEGEncoder {
    private let encoder: I420JPEGEncoder

    /// An encoder at `quality` (1–100), or nil when TurboJPEG cannot start.
    package init?(quality: Int32 = 80) {
        guard let encoder = I420JPEGEncoder(quality: quality) else { return nil }
        self.encoder = encoder
    }

    /// The pixel format the encoder takes: ask the feed for it.
    package static let pixelFormat = kCVPixelFormatType_420YpCbCr8Planar

    /// The JPEG of an I420 frame, or nil for another format or when TurboJPEG fails.
    package func encode(_ image: CVPixelBuffer) -> [UInt8]? { encoder.encode(image) }
}
