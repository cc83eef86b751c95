import MediaCodecs
import OpenCoreVideo

/// The pixel format converters a video output has made, one per source → destination format, kept while the
/// formats stay the same (a session rarely changes them). Identity conversions return the source untouched.
///
/// Threading: used on one queue at a time (the output's delegate queue).
struct FrameConverterCache {
    private var converters: [PixelBufferConverter.Format: [PixelBufferConverter.Format: PixelBufferConverter]] = [:]

    /// `source` in `target`'s pixel format and size, or nil when the output's buffers are all held or the
    /// conversion is impossible (the caller reports a drop).
    mutating func convert(_ source: CVPixelBuffer, to target: VideoOutputPipeline.Target) -> CVPixelBuffer? {
        let from = PixelBufferConverter.Format(of: source)
        let to = PixelBufferConverter.Format(pixelFormatType: target.pixelFormat, width: target.width, height: target.height)
        if PixelBufferConverter.isIdentity(from: from, to: to) { return source }
        if converters[from]?[to] == nil {
            // Keep only the converters of the current source format: a format change retires the old ones.
            converters = converters.filter { $0.key == from }
            // BT.709 whatever the size: the virtual cameras encode it, and so do HD cameras; V4L2 drivers that report
            // another colorspace will tag their buffers when the V4L2 driver lands.
            guard let made = try? PixelBufferConverter(from: from, to: to, matrix: .itu709, minimumBufferCount: 2, bufferLimit: 6)
            else { return nil }
            converters[from, default: [:]][to] = made
        }
        return try? converters[from]![to]!.convert(source)
    }
}
