import CaptureGraph
import OpenAVCapture

/// The session's decode stage on its own: turns compressed sample buffers (a camera's MJPEG or H.264, a movie
/// file's packets) into the NV12 frames a session's outputs would get, for benchmarks and tests of that cost.
///
/// Threading: not thread safe; use it from one thread at a time.
public final class CompressedFrameDecoder {
    /// Which decoder takes MJPEG.
    public enum MJPEGDecoder: Sendable {
        /// TurboJPEG, as sessions decode MJPEG.
        case turboJPEG
        /// FFmpeg's `mjpeg` decoder, for comparison.
        case ffmpeg
    }

    private let stage: SampleDecodeStage

    public init(mjpeg: MJPEGDecoder = .turboJPEG) {
        stage = SampleDecodeStage(mjpeg: mjpeg == .turboJPEG ? .turboJPEG : .ffmpeg)
    }

    /// The frames `sample` decodes to: itself when it is not compressed, none while a decoder fills its delay or
    /// when the frame was lost (damaged, or every decoded buffer held).
    public func decode(_ sample: CMSampleBuffer) -> [CMSampleBuffer] {
        switch stage.process(sample) {
        case .passThrough: [sample]
        case .decoded(let frames): frames
        case .dropped: []
        }
    }

    /// `image` compressed as a camera's MJPEG frame (4:2:0, quality 0.75), stamped `time`.
    public static func mjpegSample(of image: CVPixelBuffer, at time: CMTime) throws -> CMSampleBuffer {
        try SampleDecodeStage.jpegSample(of: image, at: time)
    }
}
