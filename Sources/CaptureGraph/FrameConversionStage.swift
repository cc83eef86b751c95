import CaptureDrivers
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo

/// What an output takes from a video connection: the pixel formats it takes as they come and, optionally, one size.
///
/// Outputs state it through `AVCaptureOutput.videoDemand(for:)`; the session's ``FrameConversionStage`` reads it for
/// every frame. Value type; safe to use from any thread.
package struct VideoFormatDemand: Hashable, Sendable {
    /// The pixel formats taken without conversion, most preferred first; a frame in any other format is converted to
    /// the first. Never empty.
    package var pixelFormats: [OSType]
    /// The width and height frames must have, before the connection's rotation (nil: the device's).
    package var width: Int?
    package var height: Int?
    /// Whether an odd width or height of the device's is brought down to even (4:2:0 encoders take even sizes
    /// only: a 321x241 file source is recorded at 320x240).
    package var evenDimensions: Bool

    package init(pixelFormats: [OSType], width: Int? = nil, height: Int? = nil, evenDimensions: Bool = false) {
        precondition(!pixelFormats.isEmpty, "VideoFormatDemand needs at least one pixel format")
        self.pixelFormats = pixelFormats
        self.width = width
        self.height = height
        self.evenDimensions = evenDimensions
    }

    /// The format a frame of `source` is converted to: `source` itself when it is already taken.
    package func target(for source: PixelBufferConverter.Format) -> PixelBufferConverter.Format {
        func even(_ side: Int) -> Int { evenDimensions ? max(2, side & ~1) : side }
        return PixelBufferConverter.Format(
            pixelFormatType: pixelFormats.contains(source.pixelFormatType) ? source.pixelFormatType : pixelFormats[0],
            width: even(width ?? source.width), height: even(height ?? source.height))
    }
}

/// The graph's one place where frames change pixel format or size for an output: per device stream, after the
/// ``SampleDecodeStage`` and before the buffers fan out to connections.
///
/// For each frame, every route's output says what it takes (``VideoFormatDemand``); outputs that take the frame as
/// it is get it untouched (no copy), and each distinct other target is converted once (libswscale through
/// `PixelBufferConverter`) and shared by every output that asked for it: a movie file output and a data output that
/// both want `'420v'` from a YUYV camera cost one conversion. Y'CbCr range is kept or mapped by libswscale exactly;
/// conversions to and from RGB use the frame's Y'CbCr matrix (its `kCVImageBufferYCbCrMatrixKey`: BT.601 from JPEG,
/// BT.709 from the virtual cameras, which is also the default), and converted Y'CbCr frames carry it on.
///
/// What is left to outputs: rotation and mirroring (per connection, `PixelTransform` on the delegate's queue) and
/// stills (a still output converts only the one frame it takes, on its own queue).
///
/// Threading: thread-bound to the capture thread of the device whose sink owns it (`@unchecked Sendable` because the
/// sink closure that holds it is `Sendable`; only that thread calls it).
package final class FrameConversionStage: @unchecked Sendable {
    private struct ConverterKey: Hashable {
        var source: PixelBufferConverter.Format
        var target: PixelBufferConverter.Format
        var matrix: YCbCrMatrix
    }

    /// What the current frame became for each target asked so far (nil: the conversion failed). Cleared by
    /// ``endFrame()``.
    private var converted: [(target: PixelBufferConverter.Format, sample: CMSampleBuffer?)] = []
    private var converters: [ConverterKey: PixelBufferConverter] = [:]
    private var wrapper = ImageSampleWrapper()
    /// How many buffers of one decoded or converted stream may be held downstream at once: a movie file output lets
    /// 8 frames wait for its encoder, a data output 4 for its delegate, and each holds one more while it works. Pools
    /// grow to it only when consumers hold that many, and give idle buffers back after a second.
    package static let downstreamBufferLimit = 12

    private let bufferLimit: Int

    package init(bufferLimit: Int = FrameConversionStage.downstreamBufferLimit) {
        self.bufferLimit = bufferLimit
    }

    /// `sample` as `demand` asks, or nil when it could not be converted (every buffer of that target is held
    /// downstream, or libswscale refused): the caller reports an `OutOfBuffers` drop. A frame without an image, or
    /// already in a taken format and size, is returned as it is. Every call until ``endFrame()`` must be for the
    /// same frame (sample buffer objects are recycled, so the stage cannot tell frames apart by identity).
    package func sample(_ sample: CMSampleBuffer, for demand: VideoFormatDemand) -> CMSampleBuffer? {
        guard let image = sample.imageBuffer else { return sample }
        let source = PixelBufferConverter.Format(of: image)
        let target = demand.target(for: source)
        if target == source { return sample }
        if let done = converted.first(where: { $0.target == target }) { return done.sample }
        let result = convert(image, from: source, to: target).flatMap { wrapper.wrap($0, like: sample) }
        converted.append((target, result))
        return result
    }

    /// Ends the current frame: the stage lets go of it and of what it was converted to.
    package func endFrame() {
        if !converted.isEmpty { converted.removeAll(keepingCapacity: true) }
    }

    private func convert(
        _ image: CVPixelBuffer, from source: PixelBufferConverter.Format, to target: PixelBufferConverter.Format
    ) -> CVPixelBuffer? {
        // The frame's own matrix (BT.601 from JPEG, BT.709 from the virtual cameras), so RGB comes out right.
        let matrix = YCbCrMatrix.of(image)
        let key = ConverterKey(source: source, target: target, matrix: matrix)
        if converters[key] == nil {
            // A device changes format rarely: converters of an older source format retire with it.
            converters = converters.filter { $0.key.source == source }
            guard
                let made = try? PixelBufferConverter(
                    from: source, to: target, matrix: matrix, minimumBufferCount: 2, bufferLimit: bufferLimit)
            else { return nil }
            converters[key] = made
        }
        return try? converters[key]?.convert(image)
    }
}

/// Wraps pixel buffers made from a frame in new sample buffers with that frame's timing and attachments, keeping one
/// format description per pixel format and size.
///
/// Threading: not synchronized; each user keeps its own on one thread or queue.
package struct ImageSampleWrapper {
    package init() {}
    private struct Key: Hashable {
        var pixelFormat: OSType
        var width: Int
        var height: Int
        /// The Y'CbCr matrix attachment, which the description carries as an extension.
        var matrix: YCbCrMatrix?
        /// The primaries, transfer function and gamma attachments, which the description carries too.
        var colour: ColourAttachments
    }

    private var descriptions: [Key: CMFormatDescription] = [:]

    /// `image` in a sample buffer with `sample`'s timing (or the given one) and attachments; nil if one cannot be
    /// made.
    package mutating func wrap(
        _ image: CVPixelBuffer, like sample: CMSampleBuffer, time: CMTime? = nil, duration: CMTime? = nil
    ) -> CMSampleBuffer? {
        let key = Key(
            pixelFormat: CVPixelBufferGetPixelFormatType(image), width: CVPixelBufferGetWidth(image),
            height: CVPixelBufferGetHeight(image), matrix: YCbCrMatrix(attachedTo: image),
            colour: ColourAttachments(of: image))
        let description: CMFormatDescription
        if let cached = descriptions[key] {
            description = cached
        } else {
            guard let made = try? CMFormatDescription(imageBuffer: image) else { return nil }
            descriptions[key] = made
            description = made
        }
        let timing = CMSampleTimingInfo(
            duration: duration ?? sample.duration, presentationTimeStamp: time ?? sample.presentationTimeStamp,
            decodeTimeStamp: time == nil ? sample.decodeTimeStamp : .invalid)
        guard let wrapped = try? CMSampleBuffer(imageBuffer: image, formatDescription: description, sampleTiming: timing)
        else { return nil }
        CMPropagateAttachments(sample, destination: wrapped)
        return wrapped
    }
}
