import CaptureGraph
import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo
import Testing

/// The graph's decode stage on buffers as drivers deliver them: compressed, no image buffer, a codec format
/// description.
@Suite("Sample decode stage")
struct SampleDecodeStageTests {
    private func meanLuma(_ buffer: CMSampleBuffer) throws -> Double {
        let image = try #require(buffer.imageBuffer)
        return image.withLockedPlanes(.readOnly) { planes in
            let row = planes[0].row(60).prefix(160)
            return Double(row.reduce(0) { $0 + Int($1) }) / 160
        }
    }

    @Test("MJPEG and H.264 buffers come out as NV12 frames with their times; raw frames pass through")
    func video() throws {
        for codec in [VideoEncoder.Codec.jpeg, .h264] {
            let stage = SampleDecodeStage()
            // What each frame showed, read at once so the pool's buffers go back (as a consumer's would).
            var decoded: [(time: CMTime, format: OSType, luma: Double)] = []
            for sample in try compressedVideo(codec, frames: 8) {
                #expect(SampleDecodeStage.needsDecoding(sample))
                guard case .decoded(let buffers) = stage.process(sample) else {
                    Issue.record("\(codec): not decoded")
                    continue
                }
                for buffer in buffers {
                    decoded.append(
                        (
                            buffer.presentationTimeStamp, try #require(buffer.imageBuffer).pixelFormatType,
                            try meanLuma(buffer)
                        ))
                }
            }
            try #require(decoded.count == 8, "\(codec): \(decoded.count) frames")
            for (index, frame) in decoded.enumerated() {
                #expect(frame.time == CMTime(value: Int64(index), timescale: 30))
                #expect(
                    frame.format
                        == (codec == .jpeg
                            ? kCVPixelFormatType_420YpCbCr8BiPlanarFullRange
                            : kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange))
                // Video range grey 40 + 20·index, as full range for JPEG.
                let expected = Double(40 + index * 20)
                let videoRange = codec == .jpeg ? frame.luma * 219 / 255 + 16 : frame.luma
                #expect(abs(videoRange - expected) < 3, "\(codec) frame \(index): \(videoRange)")
            }
        }
        let raw = try nv12Picture(width: 16, height: 16)
        let sample = try CMSampleBuffer(
            imageBuffer: raw, formatDescription: try CMFormatDescription(imageBuffer: raw),
            sampleTiming: CMSampleTimingInfo(
                duration: .invalid, presentationTimeStamp: .zero, decodeTimeStamp: .invalid))
        #expect(!SampleDecodeStage.needsDecoding(sample))
        guard case .passThrough = SampleDecodeStage().process(sample) else {
            Issue.record("a raw frame was not passed through")
            return
        }
    }

    @Test("for readers only, H.264 comes out as the decoder's own 4:2:0 planar pictures, else NV12, switched per frame")
    func readersOnly() throws {
        let stage = SampleDecodeStage()
        var decoded: [(format: OSType, luma: Double, readersOnly: Bool)] = []
        for (index, sample) in try compressedVideo(.h264, frames: 8).enumerated() {
            let readersOnly = index < 3 || index >= 6
            guard case .decoded(let buffers) = stage.process(sample, forReadersOnly: readersOnly) else {
                Issue.record("frame \(index) not decoded")
                continue
            }
            for buffer in buffers {
                decoded.append((try #require(buffer.imageBuffer).pixelFormatType, try meanLuma(buffer), readersOnly))
            }
        }
        try #require(decoded.count == 8)
        for (index, frame) in decoded.enumerated() {
            let expected =
                frame.readersOnly
                ? kCVPixelFormatType_420YpCbCr8Planar : kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            #expect(frame.format == expected, "frame \(index)")
            #expect(abs(frame.luma - Double(40 + index * 20)) < 3, "frame \(index): \(frame.luma)")
        }
        // MJPEG is TurboJPEG's NV12 either way: nothing of the decoder's is lent.
        let jpeg = SampleDecodeStage()
        for sample in try compressedVideo(.jpeg, frames: 2) {
            guard case .decoded(let buffers) = jpeg.process(sample, forReadersOnly: true) else {
                Issue.record("JPEG not decoded")
                continue
            }
            #expect(buffers.map { $0.imageBuffer?.pixelFormatType } == [kCVPixelFormatType_420YpCbCr8BiPlanarFullRange])
        }
    }

    @Test("a damaged frame is a Discontinuity drop, and the stream goes on")
    func damaged() throws {
        let stage = SampleDecodeStage()
        let samples = try compressedVideo(.jpeg, frames: 2)
        let description = try #require(samples[0].formatDescription)
        let garbage = try CMSampleBuffer(
            dataBuffer: CMBlockBuffer(copying: Data([0xFF, 0xD8, 1, 2, 3])), formatDescription: description,
            numSamples: 1,
            sampleTimings: [
                CMSampleTimingInfo(duration: .invalid, presentationTimeStamp: .zero, decodeTimeStamp: .invalid)
            ],
            sampleSizes: [5])
        guard case .dropped(.discontinuity) = stage.process(garbage) else {
            Issue.record("a damaged JPEG was not a discontinuity")
            return
        }
        guard case .decoded(let frames) = stage.process(samples[1]) else {
            Issue.record("the next frame did not decode")
            return
        }
        #expect(frames.count == 1)
    }
}
