import Foundation
import OpenCoreMedia
import Testing

/// `CMSampleBufferCopySampleBufferForRange`: PCM frames and compressed packets cut out of a buffer, their bytes,
/// timing and attachments checked against the source buffer sample by sample, and Apple's error codes.
@Suite struct CMSampleBufferRangeTests {
    /// `frames` frames of 48 kHz stereo Int16 whose bytes count up (byte `i` is `i % 251`), from `start`.
    private func pcm(frames: Int, startingAt start: CMTime) throws -> CMSampleBuffer {
        let format = try CMFormatDescription(
            audioStreamBasicDescription: .linearPCM(sampleRate: 48000, channels: 2, bitsPerChannel: 16, isFloat: false))
        let data = CMBlockBuffer(copying: (0..<(frames * 4)).map { UInt8($0 % 251) })
        let timing = CMSampleTimingInfo(
            duration: CMTime(value: 1, timescale: 48000), presentationTimeStamp: start, decodeTimeStamp: .invalid)
        return try CMSampleBuffer(
            dataBuffer: data, formatDescription: format, numSamples: frames, sampleTimings: [timing], sampleSizes: [4])
    }

    /// Three packets of 10, 20 and 30 bytes with a timing entry each (B-frame order: decode times differ).
    private func packets() throws -> CMSampleBuffer {
        let format = CMFormatDescription(mediaType: .video, mediaSubType: .h264)
        let data = CMBlockBuffer(copying: (0..<60).map { UInt8($0) })
        let timings = (0..<3).map { index in
            CMSampleTimingInfo(
                duration: CMTime(value: 1, timescale: 30), presentationTimeStamp: CMTime(value: [0, 2, 1][index], timescale: 30),
                decodeTimeStamp: CMTime(value: Int64(index) - 1, timescale: 30))
        }
        return try CMSampleBuffer(
            dataBuffer: data, formatDescription: format, numSamples: 3, sampleTimings: timings, sampleSizes: [10, 20, 30])
    }

    private func bytes(_ buffer: CMSampleBuffer) -> [UInt8] {
        buffer.dataBuffer.map { Array($0.dataBytes()) } ?? []
    }

    @Test func pcmFramesKeepTheirBytesAndTheirTime() throws {
        let start = CMTime(value: 1_234_567_891, timescale: 1_000_000_000)
        let source = try pcm(frames: 480, startingAt: start)
        var out: CMSampleBuffer?
        let status = CMSampleBufferCopySampleBufferForRange(
            allocator: kCFAllocatorDefault, sampleBuffer: source, sampleRange: CFRangeMake(100, 300),
            sampleBufferOut: &out)
        #expect(status == noErr)
        let cut = try #require(out)
        #expect(cut.numSamples == 300)
        #expect(cut.formatDescription == source.formatDescription)
        #expect(bytes(cut) == Array(bytes(source)[400..<1600]))
        #expect(cut.presentationTimeStamp == (try source.sampleTimingInfo(at: 100)).presentationTimeStamp)
        #expect(cut.presentationTimeStamp == start + CMTime(value: 100, timescale: 48000))
        #expect(cut.duration == CMTime(value: 300, timescale: 48000))
        #expect(try cut.sampleTimingInfo(at: 299) == source.sampleTimingInfo(at: 399))
    }

    @Test func theCutSharesTheBytesAndOutlivesItsSource() throws {
        var source: CMSampleBuffer? = try pcm(frames: 480, startingAt: .zero)
        let expected = Array(bytes(try #require(source))[4..<8])
        let cut = try #require(source).copy(samplesIn: 1..<2)
        let sourceStart = try #require(source?.dataBuffer).withUnsafeBytes { $0.baseAddress! }
        #expect(cut.dataBuffer!.withUnsafeBytes { $0.baseAddress! } == sourceStart + 4, "shared, not copied")
        source = nil
        #expect(bytes(cut) == expected)
    }

    @Test func packetsKeepTheirOwnSizesAndTimingEntries() throws {
        let source = try packets()
        let cut = try source.copy(samplesIn: 1..<3)
        #expect(cut.numSamples == 2)
        #expect(try cut.sampleSizes() == [20, 30])
        #expect(bytes(cut) == Array(10..<60).map { UInt8($0) })
        #expect(try cut.sampleTimingInfos() == Array(source.sampleTimingInfos()[1...]))
        #expect(cut.decodeTimeStamp == CMTime(value: 0, timescale: 30))
    }

    @Test func propagatingAttachmentsComeAlong() throws {
        let source = try pcm(frames: 10, startingAt: .zero)
        CMSetAttachment(source, key: "propagates", value: "yes", attachmentMode: kCMAttachmentMode_ShouldPropagate)
        CMSetAttachment(source, key: "stays", value: 1, attachmentMode: kCMAttachmentMode_ShouldNotPropagate)
        let cut = try source.copy(samplesIn: 2..<5)
        #expect(CMGetAttachment(cut, key: "propagates", attachmentModeOut: nil) as? String == "yes")
        #expect(CMGetAttachment(cut, key: "stays", attachmentModeOut: nil) == nil)
    }

    @Test func rangesOutsideTheBufferAreApplesIndexError() throws {
        let source = try pcm(frames: 10, startingAt: .zero)
        for range in [CFRangeMake(0, 0), CFRangeMake(-1, 2), CFRangeMake(5, 6), CFRangeMake(10, 1), CFRangeMake(1, -1)] {
            var out: CMSampleBuffer? = source
            let status = CMSampleBufferCopySampleBufferForRange(
                allocator: nil, sampleBuffer: source, sampleRange: range, sampleBufferOut: &out)
            #expect(status == kCMSampleBufferError_SampleIndexOutOfRange, "\(range)")
            #expect(out == nil)
        }
        #expect(try source.copy(samplesIn: 0..<10).numSamples == 10, "the whole buffer is a range too")
    }

    @Test func whatHasNoBytesPerSampleCannotBeSubdivided() throws {
        let format = CMFormatDescription(mediaType: .audio, mediaSubType: .linearPCM)
        let unsized = try CMSampleBuffer(
            dataBuffer: CMBlockBuffer(length: 40), formatDescription: format, numSamples: 10, sampleTimings: [],
            sampleSizes: [])
        let oversized = try CMSampleBuffer(
            dataBuffer: CMBlockBuffer(length: 40), formatDescription: format, numSamples: 10, sampleTimings: [],
            sampleSizes: [8])
        for buffer in [unsized, oversized] {
            var out: CMSampleBuffer?
            let status = CMSampleBufferCopySampleBufferForRange(
                allocator: nil, sampleBuffer: buffer, sampleRange: CFRangeMake(6, 4), sampleBufferOut: &out)
            #expect(status == kCMSampleBufferError_CannotSubdivide)
        }
    }
}
