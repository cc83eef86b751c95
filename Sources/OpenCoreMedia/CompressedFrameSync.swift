/// Marks the frames of an inter-frame codec that are not key frames, as Apple's compressed sample buffers are marked
/// (`kCMSampleAttachmentKey_NotSync`): a recording that writes a camera's H.264 as it comes must start at a key frame,
/// and a decoder that missed frames must wait for one.
///
/// Stateless; safe from any thread.
package enum CompressedFrameSync {
    /// Marks `sample` not-sync unless it is a key frame: `isKeyFrame` when the source knows (a demuxer's packet flag,
    /// V4L2's `KEYFRAME`/`PFRAME` buffer flags), else read from the bitstream (an H.264 IDR slice). Only H.264 in
    /// Annex B is read; other codecs are left as they are (every JPEG stands alone).
    package static func mark(_ sample: CMSampleBuffer, isKeyFrame: Bool? = nil) {
        guard let format = sample.formatDescription, format.mediaType == .video else { return }
        let isKey: Bool
        if let isKeyFrame {
            isKey = isKeyFrame
        } else if format.mediaSubType == .h264, !H264Bitstream.isAVCC(format), let data = sample.dataBuffer {
            isKey = data.withUnsafeBytes { H264Bitstream.containsIDR(annexB: $0) }
        } else {
            return
        }
        if !isKey {
            // Propagated, so a retimed copy (a recording's written time) is still known not to be a key frame.
            CMSetAttachment(
                sample, key: kCMSampleAttachmentKey_NotSync, value: true as CFTypeRef,
                attachmentMode: kCMAttachmentMode_ShouldPropagate)
        }
    }

    /// Whether `sample` is a key frame: it is not marked not-sync.
    package static func isKeyFrame(_ sample: CMSampleBuffer) -> Bool {
        CMGetAttachment(sample, key: kCMSampleAttachmentKey_NotSync, attachmentModeOut: nil) == nil
    }
}
