// AudioClockFollower's drift measurement: a microphone whose clock is off by a known amount, with buffers lost on the
// way (an output that was behind), measured from the buffers' times alone.

import Foundation
import MediaCodecs
import OpenCoreMedia
import Testing

@Suite struct AudioClockFollowerTests {
    private static let format = AudioConverter.Format(sampleRate: 48_000, channelCount: 2, sample: .int16)
    private static let framesPerBuffer = 1024

    /// Buffer `index` of a microphone whose sample clock runs `ppm` fast: its first frame is frame
    /// `index · framesPerBuffer` of the device, which the session clock hears at that many frames of 1 / (48 000 ·
    /// (1 + ppm · 10⁻⁶)) s after the start.
    private static func buffer(_ index: Int, ppm: Double) throws -> CMSampleBuffer {
        let description = try CMFormatDescription(audioStreamBasicDescription: format.audioStreamBasicDescription)
        let seconds = Double(index * framesPerBuffer) / (Double(format.sampleRate) * (1 + ppm * 1e-6))
        let time = CMTime(value: 1_000_000_000_000 + Int64((seconds * 1e9).rounded()), timescale: 1_000_000_000)
        let data = CMBlockBuffer(length: framesPerBuffer * format.bytesPerFrame)
        return try CMSampleBuffer(
            dataBuffer: data, formatDescription: description, numSamples: framesPerBuffer,
            sampleTimings: [CMSampleTimingInfo(duration: CMTime(value: 1, timescale: 48_000), presentationTimeStamp: time,
                decodeTimeStamp: .invalid)],
            sampleSizes: [format.bytesPerFrame])
    }

    @Test("The drift is measured from the buffers' times, and a lost buffer does not count as a slow clock",
        arguments: [(200.0, [Int]()), (200.0, [300, 450]), (-200.0, [500])])
    func driftSurvivesLostBuffers(ppm: Double, lost: [Int]) throws {
        let follower = try AudioClockFollower(Self.format.audioStreamBasicDescription)
        // 700 buffers: 14.9 s of sound, long enough that the follower engages (2 ms off after 10 s at 200 ppm).
        for index in 0..<700 where !lost.contains(index) {
            _ = try follower.follow(Self.buffer(index, ppm: ppm))
        }
        let measured = try #require(follower.measuredDriftPPM, "no drift measured")
        #expect(abs(measured - ppm) < 1, "measured \(measured) ppm of \(ppm), buffers \(lost) lost")
    }
}
