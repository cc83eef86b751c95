import OpenCoreVideo

/// Brings pictures to the pixel format and size a ``VideoEncoder`` was made for: a picture that matches goes as it
/// is, any other through a ``PixelBufferConverter``, made for the first such picture and remade when the pictures'
/// format or Y'CbCr matrix changes. Encoders are made for their first picture, and later ones may differ: a pixel
/// buffer adaptor takes every format, as Apple's does; a session switches between a decoder's lent planar pictures
/// and NV12 copies as outputs come and go; a device's format may change.
///
/// Threading: thread-bound, used with its encoder.
package struct EncoderPictureConverter {
    private var converter: PixelBufferConverter?

    package init() {}

    /// `pixelBuffer` as an encoder of `configuration` takes it.
    package mutating func picture(
        _ pixelBuffer: CVPixelBuffer, for configuration: VideoEncoder.Configuration
    )
        throws(MediaCodecsError) -> CVPixelBuffer
    {
        let source = PixelBufferConverter.Format(of: pixelBuffer)
        let target = PixelBufferConverter.Format(
            pixelFormatType: configuration.pixelFormat, width: configuration.width, height: configuration.height)
        if source == target { return pixelBuffer }
        let matrix = Self.matrix(of: pixelBuffer, for: configuration)
        if converter?.source != source || converter?.matrix != matrix {
            // The encoder holds a few pictures (x264's lookahead is off, but frame threads keep theirs): no limit.
            converter = try PixelBufferConverter(from: source, to: target, matrix: matrix)
        }
        return try converter!.convert(pixelBuffer)
    }

    /// The matrix `pixelBuffer` is converted with: a Y'CbCr picture's own; RGB is turned into numbers with the
    /// matrix the stream is tagged with.
    package static func matrix(
        of pixelBuffer: CVPixelBuffer, for configuration: VideoEncoder.Configuration
    )
        -> YCbCrMatrix
    {
        YCbCrMatrix(attachedTo: pixelBuffer) ?? configuration.streamMatrix
    }
}
