import Foundation
import MediaCodecs
import Synchronization

/// Turns an H.264 encoder's packets into the compressed sample buffers a movie file takes as they are, as Apple's
/// compressed frames look: AVCC (every NAL unit after its 4-byte length), an `'avc1'` description whose `avcC` holds
/// the encoder's parameter sets, and `kCMSampleAttachmentKey_NotSync` on every frame that is not a key frame.
///
/// libx264 gives its parameter sets out of band (`extradata`, with `AV_CODEC_FLAG_GLOBAL_HEADER`) and its packets in
/// Annex B; both are rewritten once here.
///
/// Threading: thread safe (the description is made once, under a mutex).
final class EncodedVideoSamples: Sendable {
    private let description = Mutex<CMFormatDescription?>(nil)

    /// `packet` of `encoder`'s stream as a sample buffer, or nil when the encoder gave no parameter sets.
    func sample(_ packet: EncodedPacket, of encoder: VideoEncoder) -> CMSampleBuffer? {
        guard let format = formatDescription(of: encoder) else { return nil }
        let block = packet.data.withUnsafeBytes { annexB in
            let avcc = CMBlockBuffer(length: H264Bitstream.avccLength(ofAnnexB: annexB))
            _ = avcc.withUnsafeMutableBytes { H264Bitstream.writeAVCC(fromAnnexB: annexB, into: $0) }
            return avcc
        }
        let timing = CMSampleTimingInfo(
            duration: packet.duration, presentationTimeStamp: packet.presentationTime,
            decodeTimeStamp: packet.decodeTime)
        guard
            let sample = try? CMSampleBuffer(
                dataBuffer: block, formatDescription: format, numSamples: 1, sampleTimings: [timing],
                sampleSizes: [block.dataLength])
        else { return nil }
        CompressedFrameSync.mark(sample, isKeyFrame: packet.isKeyFrame)
        return sample
    }

    private func formatDescription(of encoder: VideoEncoder) -> CMFormatDescription? {
        description.withLock { cached in
            if let cached { return cached }
            let configuration = encoder.configuration
            let made = encoder.extradata.withUnsafeBytes { extradata -> CMFormatDescription? in
                let (sps, pps) = H264Bitstream.parameterSets(annexB: extradata)
                guard !sps.isEmpty, !pps.isEmpty else { return nil }
                return H264Bitstream.formatDescription(
                    sps: sps, pps: pps, width: configuration.width, height: configuration.height)
            }
            cached = made
            return made
        }
    }
}
