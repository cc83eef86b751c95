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

    @Test("A lost buffer leaves its place in the output's times, for silence, instead of being stretched away",
        arguments: [0.0, 200.0])
    func lostBufferLeavesAGap(ppm: Double) throws {
        let follower = try AudioClockFollower(Self.format.audioStreamBasicDescription)
        let lost = Set([620, 640, 641, 660])
        var outputs: [CMSampleBuffer] = []
        // 700 buffers: at 200 ppm the follower is resampling (engaged after 10 s) when the buffers are lost.
        for index in 0..<700 where !lost.contains(index) {
            // What the recording does when its output dropped sound on the way.
            if lost.contains(index - 1) { follower.bufferWasLost() }
            if let output = try follower.follow(Self.buffer(index, ppm: ppm)) { outputs.append(output) }
        }
        if let tail = try follower.flush() { outputs.append(tail) }
        let last = try #require(outputs.last)
        let end = last.presentationTimeStamp + CMTime(value: Int64(last.numSamples), timescale: 48_000)
        // The output's last frame ends where the input's did, though four buffers' frames never came: their
        // places are gaps between output buffers (which the encoder fills with silence).
        let inputEnd = try Self.buffer(700, ppm: ppm).presentationTimeStamp
        #expect(abs((end - inputEnd).seconds) < 0.003, "ends \((end - inputEnd).seconds) s from the input")
        var gaps = 0.0
        for (previous, next) in zip(outputs, outputs.dropFirst()) {
            let previousEnd = previous.presentationTimeStamp
                + CMTime(value: Int64(previous.numSamples), timescale: 48_000)
            let gap = (next.presentationTimeStamp - previousEnd).seconds
            if gap > 0.002 { gaps += gap }
        }
        let lostSeconds = Double(lost.count * Self.framesPerBuffer) / 48_000
        #expect(abs(gaps - lostSeconds) < 0.003, "gaps of \(gaps) s for \(lostSeconds) s lost")
    }

    @Test("A buffer stamped late by the device's jitter is not taken for a loss: the output stays contiguous")
    func jitterIsNoLoss() throws {
        let follower = try AudioClockFollower(Self.format.audioStreamBasicDescription)
        var outputs: [CMSampleBuffer] = []
        for index in 0..<400 {
            var buffer = try Self.buffer(index, ppm: 0)
            // Buffer 300 comes 15 ms late by its stamp (more than half a buffer), the next on time again.
            if index == 300 {
                let late = buffer.presentationTimeStamp + CMTime(value: 15, timescale: 1000)
                buffer = try buffer.withNewTiming([
                    CMSampleTimingInfo(
                        duration: CMTime(value: 1, timescale: 48_000), presentationTimeStamp: late,
                        decodeTimeStamp: .invalid)
                ])
            }
            if let output = try follower.follow(buffer) { outputs.append(output) }
        }
        // Without a loss the sound is not moved: no gap opens for silence (the resampler may absorb a little).
        for (previous, next) in zip(outputs, outputs.dropFirst()) {
            let previousEnd = previous.presentationTimeStamp
                + CMTime(value: Int64(previous.numSamples), timescale: 48_000)
            let gap = (next.presentationTimeStamp - previousEnd).seconds
            #expect(abs(gap) < 0.001, "a gap of \(gap) s at \(next.presentationTimeStamp.seconds) s")
        }
    }
}
