// The recording core's time arithmetic on its own: no device, no writer, no queue, no clock. Samples are made
// at chosen timestamps and the timeline's decisions checked exactly, to the sample.

import Foundation
import Testing

@testable import OpenAVCapture

/// `count` frames of 48 kHz mono Int16 PCM (frame k holds the value k) at source time `seconds`.
private func sound(at seconds: Double, frames count: Int) throws -> CMSampleBuffer {
    try sound(at: CMTime(seconds: seconds, preferredTimescale: 48_000), frames: count)
}

private func sound(at time: CMTime, frames count: Int) throws -> CMSampleBuffer {
    let block = CMBlockBuffer(length: count * 2)
    block.withUnsafeMutableBytes { bytes in
        let samples = bytes.bindMemory(to: Int16.self)
        for index in 0..<count { samples[index] = Int16(truncatingIfNeeded: index) }
    }
    let description = try CMFormatDescription(
        audioStreamBasicDescription: .linearPCM(sampleRate: 48_000, channels: 1, bitsPerChannel: 16, isFloat: false))
    return try CMSampleBuffer(
        dataBuffer: block, formatDescription: description, numSamples: count,
        sampleTimings: [
            CMSampleTimingInfo(
                duration: CMTime(value: 1, timescale: 48_000), presentationTimeStamp: time, decodeTimeStamp: .invalid)
        ], sampleSizes: [2])
}

/// The first sample value a buffer made by `sound` holds: which frame of the original it starts at.
private func firstFrame(_ buffer: CMSampleBuffer) -> Int16 {
    guard let block = buffer.dataBuffer else { return -1 }
    return block.withUnsafeBytes { $0.load(as: Int16.self) }
}

private func seconds(_ value: Double) -> CMTime { CMTime(seconds: value, preferredTimescale: 48_000) }
private let frame = CMTime(value: 1, timescale: 30)

/// A timeline started at 0 whose picture was written up to 1 s and sound up to `soundEnd`, paused, and resumed by a
/// video frame at source time `resumedAt`.
private func resumed(soundEnd: Double, at resumedAt: Double) -> RecordingTimeline {
    var timeline = RecordingTimeline()
    timeline.begin(at: seconds(0))
    timeline.wroteVideo(at: seconds(0.9), duration: seconds(0.1))
    timeline.wroteAudio(at: seconds(soundEnd - 0.1), duration: seconds(0.1))
    timeline.resume(atVideo: seconds(resumedAt))
    return timeline
}

@Suite("RecordingTimeline, the recording core's time arithmetic")
struct RecordingTimelineTests {
    @Test("a fresh timeline has recorded nothing and places no sound before it starts")
    func beforeTheStart() throws {
        let timeline = RecordingTimeline()
        #expect(timeline.recordedDuration(hasVideo: true, stoppedAt: nil) == .zero)
        #expect(timeline.placement(of: try sound(at: 1, frames: 480)) == nil)
        #expect(timeline.isSoundBehind(seconds(1)))
        #expect(!timeline.isSoundBehind(.invalid))
    }

    @Test("samples are written at their source time less the paused time; the recorded duration follows the edges")
    func writtenTimeAndDuration() throws {
        var timeline = RecordingTimeline()
        timeline.begin(at: seconds(10))
        for index in 0..<30 {
            let time = seconds(10) + frame * Int32(index)
            #expect(timeline.written(time) == time)
            timeline.wroteVideo(at: timeline.written(time), duration: frame)
        }
        #expect(timeline.recordedDuration(hasVideo: true, stoppedAt: nil) == CMTime(value: 1, timescale: 1))
        // A size limit that stopped the writer half way: the duration ends there.
        #expect(timeline.recordedDuration(hasVideo: true, stoppedAt: seconds(10.5)) == seconds(0.5))
        // Sound alone counts the sound's edge.
        #expect(timeline.recordedDuration(hasVideo: false, stoppedAt: nil) == .zero)
        timeline.wroteAudio(at: seconds(10), duration: seconds(0.25))
        #expect(timeline.recordedDuration(hasVideo: false, stoppedAt: nil) == seconds(0.25))
    }

    @Test("a resume on a video frame continues the picture at its edge; 2 s paused are left out of written time")
    func resumeOnVideo() throws {
        var timeline = resumed(soundEnd: 1.05, at: 3)
        #expect(timeline.offset == seconds(2))
        #expect(timeline.written(seconds(3)) == seconds(1))
        #expect(timeline.elapsed(at: seconds(3.5)) == seconds(1.5))
        // The sound after the resume starts where the sound already written ends (1.05 s), not at the picture's
        // edge: the 50 ms it had run ahead are not written twice. A buffer at 2.98 s source (0.98 s written) loses
        // its first 70 ms, 3,360 frames, to the sample.
        let trimmed = try #require(timeline.trimmedAfterResume(try sound(at: 2.98, frames: 4_800)))
        #expect(trimmed.numSamples == 4_800 - 3_360)
        #expect(firstFrame(trimmed) == 3_360)
        #expect(timeline.written(trimmed.presentationTimeStamp) == seconds(1.05))
        // Once a buffer reached past the edge, the next goes in as it comes.
        let next = try sound(at: 2.98, frames: 4_800)
        #expect(timeline.trimmedAfterResume(next) === next)
    }

    @Test("sound after a resume lying wholly before the edge is left out, and the trim goes on until sound reaches it")
    func resumeDropsWholeBuffer() throws {
        var timeline = resumed(soundEnd: 1, at: 2)
        #expect(timeline.resumedAudioFrom == seconds(1))
        #expect(timeline.trimmedAfterResume(try sound(at: 1.5, frames: 480)) == nil)
        #expect(timeline.resumedAudioFrom == seconds(1), "still trimming")
        // 1.995 s source is 0.995 s written (1 s was paused): its first 5 ms (240 frames) were heard before.
        let tail = try #require(timeline.trimmedAfterResume(try sound(at: 1.995, frames: 480)))
        #expect(tail.numSamples == 240 && firstFrame(tail) == 240)
        #expect(timeline.resumedAudioFrom == .invalid)
    }

    @Test("a resume of sound alone continues the sound at its edge")
    func resumeOnAudio() throws {
        var timeline = RecordingTimeline()
        timeline.begin(at: seconds(0))
        timeline.wroteAudio(at: seconds(0), duration: seconds(0.5))
        timeline.resume(atAudio: seconds(4))
        #expect(timeline.written(seconds(4)) == seconds(0.5))
        let buffer = try sound(at: 4, frames: 480)
        #expect(timeline.trimmedAfterResume(buffer) === buffer, "no picture edge to trim to")
        let placed = try #require(timeline.placement(of: buffer))
        #expect(placed.at == seconds(0.5) && placed.buffer === buffer)
    }

    @Test("sound straddling the file's start is cut at it to the sample; sound before it is left out")
    func soundAtTheStart() throws {
        var timeline = RecordingTimeline()
        timeline.begin(at: seconds(5))
        // 10 ms before the start: 480 frames of the 960 are before it.
        let placed = try #require(timeline.placement(of: try sound(at: 4.99, frames: 960)))
        #expect(placed.at == seconds(5))
        #expect(placed.buffer.numSamples == 480 && firstFrame(placed.buffer) == 480)
        #expect(timeline.placement(of: try sound(at: 4.98, frames: 960)) == nil, "ends exactly at the start")
        // A quarter of a sample before the start rounds to the start: the whole buffer goes in, at the start.
        let nearly = CMTime(value: 5 * 192_000 - 1, timescale: 192_000)
        let whole = try #require(timeline.placement(of: try sound(at: nearly, frames: 480)))
        #expect(whole.at == seconds(5) && whole.buffer.numSamples == 480)
    }

    @Test("sound overlapping what was written by more than a millisecond is left out; within it, it goes in")
    func overlap() throws {
        var timeline = RecordingTimeline()
        timeline.begin(at: seconds(0))
        timeline.wroteAudio(at: seconds(0), duration: seconds(1))
        #expect(timeline.placement(of: try sound(at: 0.998, frames: 480)) == nil)
        let jitter = try #require(timeline.placement(of: try sound(at: 0.9995, frames: 480)))
        #expect(jitter.at == seconds(0.9995))
        #expect(timeline.placement(of: try sound(at: 1, frames: 480))?.at == seconds(1))
    }

    @Test("maxRecordedDuration: a frame ending at the limit (or within a millisecond past it) is in, one later is not")
    func durationLimit() {
        var timeline = RecordingTimeline()
        timeline.begin(at: seconds(2))
        let limit = CMTime(value: 1, timescale: 1)
        #expect(!timeline.passes(limit, frameAt: seconds(2) + frame * Int32(29), duration: frame))
        #expect(!timeline.passes(limit, frameAt: seconds(2.0005) + frame * Int32(29), duration: frame))
        #expect(timeline.passes(limit, frameAt: seconds(2) + frame * Int32(30), duration: frame))
        #expect(!timeline.passes(.invalid, frameAt: seconds(1000), duration: frame), "no limit")
    }

    @Test("at the end the sound is behind until it reaches the picture's edge, and the drain ends when it does")
    func drain() {
        var timeline = RecordingTimeline()
        timeline.begin(at: seconds(0))
        timeline.wroteVideo(at: seconds(0.9), duration: frame)
        timeline.wroteAudio(at: seconds(0.9), duration: seconds(0.02))
        let edge = timeline.videoEdge
        #expect(timeline.isSoundBehind(edge))
        timeline.drain(until: edge)
        #expect(timeline.drainUntil == edge)
        // A 10 ms period from 0.92 s still ends before 0.9333 s; the next one reaches it.
        #expect(!timeline.drainIsComplete(afterSoundAt: seconds(0.92), duration: seconds(0.01)))
        #expect(timeline.drainIsComplete(afterSoundAt: seconds(0.93), duration: seconds(0.01)))
        timeline.wroteAudio(at: seconds(0.93), duration: seconds(0.01))
        #expect(!timeline.isSoundBehind(edge))
    }

    @Test("sound a nanosecond short of the picture's edge has reached it: no drain waits for that nanosecond")
    func soundAtTheEdgeWithinRounding() {
        var timeline = RecordingTimeline()
        timeline.begin(at: .zero)
        // The picture's times are host nanoseconds: its last frame ends a nanosecond past the sound's 10 s.
        let lastFrame = CMTime(value: 9_966_666_667, timescale: 1_000_000_000)
        timeline.wroteVideo(at: lastFrame, duration: CMTime(value: 33_333_334, timescale: 1_000_000_000))
        timeline.wroteAudio(at: seconds(9.99), duration: seconds(0.01))
        #expect(timeline.videoEdge > seconds(10), "the edge is past the sound's end")
        #expect(!timeline.isSoundBehind(timeline.videoEdge))
        // Sound written only up to 9.99 s is behind, and its last 10 ms, again a nanosecond short, end the drain.
        timeline.wroteAudio(at: seconds(9.98), duration: seconds(0.01))
        #expect(timeline.isSoundBehind(timeline.videoEdge))
        timeline.drain(until: timeline.videoEdge)
        #expect(timeline.drainIsComplete(afterSoundAt: seconds(9.99), duration: seconds(0.01)))
        #expect(!timeline.drainIsComplete(afterSoundAt: seconds(9.98), duration: seconds(0.01)))
    }

    @Test("a drain whose sound does not come ends when the picture has run the backstop past its edge")
    func drainBackstop() {
        var timeline = RecordingTimeline()
        timeline.begin(at: seconds(0))
        timeline.wroteVideo(at: seconds(0.9), duration: frame)
        #expect(!timeline.drainOutwaited(videoAt: seconds(100), backstop: seconds(0.5)), "no drain yet")
        timeline.drain(until: timeline.videoEdge)
        // The edge is at 0.9333 s: the backstop falls at 1.4333 s.
        #expect(!timeline.drainOutwaited(videoAt: seconds(1.4), backstop: seconds(0.5)))
        #expect(timeline.drainOutwaited(videoAt: timeline.videoEdge + seconds(0.5), backstop: seconds(0.5)))
    }
}
