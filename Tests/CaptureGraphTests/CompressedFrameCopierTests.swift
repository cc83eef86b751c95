// What a file output keeps of a compressed frame: a copy of a camera's loaned buffer, the frame itself when its
// memory is its own, and a camera's Annex B H.264 always rewritten as AVCC.

import CaptureGraph
import Foundation
import MediaCodecs
import OpenCoreMedia
import Testing

@Suite("CompressedFrameCopier")
struct CompressedFrameCopierTests {
    /// A JPEG frame over `data`, marked not a sync frame (an attachment the copy must keep).
    private func jpegFrame(_ data: CMBlockBuffer) throws -> CMSampleBuffer {
        let format = try CMFormatDescription(videoCodecType: .jpeg, width: 64, height: 48)
        let timing = CMSampleTimingInfo(
            duration: CMTime(value: 1, timescale: 30), presentationTimeStamp: CMTime(value: 7, timescale: 30),
            decodeTimeStamp: .invalid)
        let sample = try CMSampleBuffer(
            dataBuffer: data, formatDescription: format, numSamples: 1, sampleTimings: [timing],
            sampleSizes: [data.dataLength])
        CompressedFrameSync.mark(sample, isKeyFrame: false)
        return sample
    }

    @Test("A loaned frame is copied (bytes, time, attachments); a frame in its own memory is kept as it is")
    func loansAreCopiedOwnMemoryIsKept() throws {
        let bytes = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let memory = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 16)
        bytes.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        let returned = ManagedCounter()
        let copier = CompressedFrameCopier()
        var kept: CMSampleBuffer?
        do {
            let loaned = try jpegFrame(
                CMBlockBuffer(wrapping: memory, length: bytes.count) { memory in
                    memory.deallocate()
                    returned.increment()
                })
            kept = copier.copy(loaned)
            #expect(kept !== loaned)
        }
        let keptData = try #require(kept?.dataBuffer)
        #expect(!keptData.isOnLoan && keptData.withUnsafeBytes { Array($0) } == bytes)
        #expect(kept?.presentationTimeStamp == CMTime(value: 7, timescale: 30))
        #expect(kept.map { CompressedFrameSync.isKeyFrame($0) } == false)
        // The loan went back when the camera's frame was dropped, while the copy is still held.
        #expect(returned.value == 1)

        let own = try jpegFrame(CMBlockBuffer(copying: bytes))
        #expect(copier.copy(own) === own)
    }

    @Test("A camera's Annex B H.264 in its own memory still becomes AVCC with an avcC description")
    func annexBIsRewrittenEvenWhenOwned() throws {
        let frames = try compressedVideo(.h264, frames: 2)
        let first = try #require(frames.first)
        #expect(first.dataBuffer?.isOnLoan == false)
        let kept = CompressedFrameCopier().copy(first)
        #expect(kept !== first)
        #expect(kept.formatDescription.map(H264Bitstream.isAVCC) == true)
    }
}

/// A count a release closure bumps.
private final class ManagedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
}
