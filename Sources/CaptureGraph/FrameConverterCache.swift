import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo

/// The pixel format converters a video output has made, one per source → destination format, kept while the
/// formats stay the same (a session rarely changes them). Identity conversions return the source untouched.
///
/// Threading: used on one queue at a time (the output's delegate queue).
package struct FrameConverterCache {
    package init() {}
    /// A converted format: pixel format and size.
    package struct Target: Hashable, Sendable {
        package var pixelFormat: OSType
        package var width: Int
        package var height: Int

        package init(pixelFormat: OSType, width: Int, height: Int) {
            self.pixelFormat = pixelFormat
            self.width = width
            self.height = height
        }
    }

    private var converters: [PixelBufferConverter.Format: [PixelBufferConverter.Format: PixelBufferConverter]] = [:]
    /// The Y'CbCr matrix of the current source; a change retires the converters.
    private var matrix = YCbCrMatrix.itu709

    /// `source` in `target`'s pixel format and size, or nil when the output's buffers are all held or the
    /// conversion is impossible (the caller reports a drop).
    package mutating func convert(_ source: CVPixelBuffer, to target: Target) -> CVPixelBuffer? {
        let from = PixelBufferConverter.Format(of: source)
        let to = PixelBufferConverter.Format(pixelFormatType: target.pixelFormat, width: target.width, height: target.height)
        if PixelBufferConverter.isIdentity(from: from, to: to) { return source }
        let sourceMatrix = YCbCrMatrix.of(source)
        if sourceMatrix != matrix {
            matrix = sourceMatrix
            converters = [:]
        }
        if converters[from]?[to] == nil {
            // Keep only the converters of the current source format: a format change retires the old ones.
            converters = converters.filter { $0.key == from }
            // The source's own matrix (its attachment; BT.709, the virtual cameras' and HD cameras', by default).
            guard let made = try? PixelBufferConverter(from: from, to: to, matrix: matrix, minimumBufferCount: 2, bufferLimit: 6)
            else { return nil }
            converters[from, default: [:]][to] = made
        }
        return try? converters[from]![to]!.convert(source)
    }
}
