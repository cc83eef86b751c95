// VideoPacketEncoder: what a writer needs of a video encoder, so it can hold libavcodec's or a device's.

import OpenCoreMedia
import OpenCoreVideo

/// A video encoder as a writer drives it: pictures in, packets out in decode order, and the out-of-band parameter
/// sets the muxer writes as `avcC`/`hvcC` before the first packet. ``VideoEncoder`` (libavcodec) is one; a V4L2
/// memory-to-memory device behind OpenAVCapture's `V4L2VideoEncoder` is the other.
///
/// Threading: conformers are thread-bound (one thread at a time, as the writer's serial queue uses them).
package protocol VideoPacketEncoder: AnyObject {
    /// What the encoder was made for; its ``VideoEncoder/Configuration/pixelFormat`` is what ``send`` takes.
    var configuration: VideoEncoder.Configuration { get }
    /// H.264/HEVC parameter sets in Annex B form, known before the first packet; empty for JPEG and ProRes.
    var extradata: [UInt8] { get }
    /// Sends one picture (see ``VideoEncoder/send(_:presentationTime:forcingKeyFrame:)``).
    func send(_ pixelBuffer: CVPixelBuffer, presentationTime: CMTime, forcingKeyFrame: Bool) throws(MediaCodecsError)
    /// No more pictures: ``receivePacket()`` gives what is left, then `.endOfStream`.
    func finish() throws(MediaCodecsError)
    /// The next packet in decode order, with times in 1/``VideoEncoder/Configuration/timescale`` s.
    func receivePacket() throws(MediaCodecsError) -> EncoderOutput
}

extension VideoEncoder: VideoPacketEncoder {}
