import CLinuxMedia
import OpenCoreMedia
import Testing

@testable import CaptureDrivers

/// H.264 frames that are no key frames are marked `NotSync` at the source: from V4L2's buffer flags when the driver
/// sets them, else from the bitstream's NAL unit types.
@Suite struct CompressedFrameSyncTests {
    func sample(_ bytes: [UInt8]) throws -> CMSampleBuffer {
        let format = try CMFormatDescription(videoCodecType: .h264, width: 64, height: 48)
        let block = bytes.withUnsafeBytes { CMBlockBuffer(copying: $0) }
        return try CMSampleBuffer(
            dataBuffer: block, formatDescription: format, numSamples: 1,
            sampleTimings: [CMSampleTimingInfo(duration: .invalid, presentationTimeStamp: .zero, decodeTimeStamp: .invalid)],
            sampleSizes: [bytes.count])
    }

    @Test func v4l2FlagsSayWhenTheyCan() {
        #expect(V4L2CaptureStream.keyFrameFlag(UInt32(V4L2_BUF_FLAG_KEYFRAME)) == true)
        #expect(V4L2CaptureStream.keyFrameFlag(UInt32(V4L2_BUF_FLAG_PFRAME)) == false)
        #expect(V4L2CaptureStream.keyFrameFlag(UInt32(V4L2_BUF_FLAG_BFRAME)) == false)
        #expect(V4L2CaptureStream.keyFrameFlag(UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)) == nil)
    }

    @Test func theBitstreamSaysOtherwise() throws {
        let idr = try sample([0, 0, 0, 1, 0x67, 66, 0, 30, 0, 0, 0, 1, 0x68, 0xCE, 0, 0, 1, 0x65, 0x88, 0x84])
        let delta = try sample([0, 0, 0, 1, 0x41, 0x9A, 0x02])
        CompressedFrameSync.mark(idr)
        CompressedFrameSync.mark(delta)
        #expect(CompressedFrameSync.isKeyFrame(idr))
        #expect(!CompressedFrameSync.isKeyFrame(delta))
        // What the source says wins over the bitstream.
        let flagged = try sample([0, 0, 0, 1, 0x65, 0x88])
        CompressedFrameSync.mark(flagged, isKeyFrame: false)
        #expect(!CompressedFrameSync.isKeyFrame(flagged))
        // The mark survives a retimed copy, as a recording's written time makes one.
        let copy = try delta.withNewTiming([
            CMSampleTimingInfo(duration: .invalid, presentationTimeStamp: CMTime(value: 1, timescale: 30), decodeTimeStamp: .invalid)
        ])
        #expect(!CompressedFrameSync.isKeyFrame(copy))
    }
}
