import Foundation

/// Where a recording's samples fall in its file: the time arithmetic of one recording, with no I/O and no queue.
///
/// A sample at source time `t` (the device's timestamp) is written at `t − offset`, where `offset` is the paused
/// time so far. The timeline keeps the file's start, the ends of the video and sound written (its edges), and
/// turns each request or sample into a decision: what a resume moves the offset to, which frames of a sound
/// buffer go in and at what written time, whether a frame passes `maxRecordedDuration`, whether the sound is behind
/// the picture when the recording ends, and when the sound has caught up with it.
///
/// Value type; not shared. The recording engine keeps one per recording on its work queue.
struct RecordingTimeline: Equatable {
    /// The file's time 0 on the source clock; invalid until the first sample.
    private(set) var start: CMTime = .invalid
    /// Paused time so far: written time = source time − offset.
    private(set) var offset: CMTime = .zero
    /// The end of the last video frame written, in written time.
    private(set) var videoEdge: CMTime = .invalid
    /// The end of the last sound written, in written time.
    private(set) var audioEdge: CMTime = .invalid
    /// After a resume: sound before this written time is already in the file (or would overlap it), so the first
    /// buffer is trimmed to start exactly there; invalid once sound flows again.
    private(set) var resumedAudioFrom: CMTime = .invalid
    /// While draining: the written time the sound must reach before the file is finished.
    private(set) var drainUntil: CMTime = .invalid

    /// How far a sound buffer may begin before the sound already written (a millisecond: device timestamps are
    /// host-clock nanoseconds, and periods jitter by a few samples) before it is left out as an overlap.
    static let overlapTolerance = CMTime(value: 1, timescale: 1000)

    /// How far past `maxRecordedDuration` a frame may end and still be written (a millisecond, for the same
    /// nanosecond rounding).
    static let durationTolerance = CMTime(value: 1, timescale: 1000)

    /// Written time for a sample at source time `time`.
    func written(_ time: CMTime) -> CMTime { time - offset }

    /// The file starts with a sample at source time `time`.
    mutating func begin(at time: CMTime) {
        start = time
    }

    /// What the file holds: from the start to the video edge (the sound edge for sound alone), cut at `stoppedAt`
    /// (written time) when a size limit stopped the writer there.
    func recordedDuration(hasVideo: Bool, stoppedAt: CMTime?) -> CMTime {
        var edge = hasVideo ? videoEdge : audioEdge
        if let stoppedAt, stoppedAt.isNumeric, edge.isNumeric, stoppedAt < edge { edge = stoppedAt }
        return edge.isNumeric && start.isNumeric ? max(edge - start, .zero) : .zero
    }

    /// How long the recording has run at written time `time`: the length a segment cut there has.
    func elapsed(at time: CMTime) -> CMTime { written(time) - start }

    // MARK: Pause and resume

    /// The first video frame after a resume, at source time `time`: it continues the picture at its edge, and the
    /// sound after it starts no earlier than anything written before the pause.
    mutating func resume(atVideo time: CMTime) {
        offset = time - videoEdge
        resumedAudioFrom = max(videoEdge, audioEdge)
    }

    /// The first sound after a resume of a recording of sound alone, at source time `time`: it continues the sound
    /// at its edge.
    mutating func resume(atAudio time: CMTime) {
        offset = time - audioEdge
    }

    // MARK: Samples written

    /// A video frame was written at `written`, lasting `duration`.
    mutating func wroteVideo(at written: CMTime, duration: CMTime) {
        videoEdge = written + duration
    }

    /// Sound was written at `written`, lasting `duration`.
    mutating func wroteAudio(at written: CMTime, duration: CMTime) {
        audioEdge = written + duration
    }

    /// Whether a frame at written time `time` lasting `duration` passes `limit` (`maxRecordedDuration`; invalid
    /// for none).
    func passes(_ limit: CMTime, frameAt time: CMTime, duration: CMTime) -> Bool {
        limit.isNumeric && time + duration - start > limit + Self.durationTolerance
    }

    // MARK: Sound

    /// The sound buffer `buffer` as it goes in after a resume: without the frames before the sound already
    /// written, nil when nothing of it is left (the trimming then goes on with the next buffer). The first buffer
    /// that reaches past the edge ends the trimming: whatever becomes of it, the next goes in as it comes.
    mutating func trimmedAfterResume(_ buffer: CMSampleBuffer) -> CMSampleBuffer? {
        guard resumedAudioFrom.isNumeric else { return buffer }
        let skipped = resumedAudioFrom - written(buffer.presentationTimeStamp)
        guard skipped > .zero else {
            resumedAudioFrom = .invalid
            return buffer
        }
        guard let tail = PCMSlicing.frames(after: skipped, of: buffer) else { return nil }
        resumedAudioFrom = .invalid
        return tail
    }

    /// Where sound buffer `buffer` goes: the part of it from the file's start on (a buffer that straddles the start
    /// of a file switched to is cut there, to the sample) and its written time; nil when it is left out, being
    /// before the start or overlapping sound already written.
    func placement(of buffer: CMSampleBuffer) -> (buffer: CMSampleBuffer, at: CMTime)? {
        guard start.isNumeric else { return nil }
        var buffer = buffer
        var at = written(buffer.presentationTimeStamp)
        if at < start {
            guard let tail = PCMSlicing.frames(after: start - at, of: buffer) else { return nil }
            buffer = tail
            // Its first frame is the start's, to the sample: device times are host-clock nanoseconds, so the tail's
            // time may fall a nanosecond before the start (or the buffer began within half a sample of it).
            at = max(start, written(buffer.presentationTimeStamp))
        }
        guard at >= start else { return nil }
        if audioEdge.isNumeric, at < audioEdge - Self.overlapTolerance { return nil }
        return (buffer, at)
    }

    // MARK: The end

    /// Whether the sound is behind the picture at written time `edge` when a recording of both ends: it has not
    /// reached it yet, so the file waits for it (a drain).
    func isSoundBehind(_ edge: CMTime) -> Bool {
        edge.isNumeric && !(audioEdge.isNumeric && Self.sound(endingAt: audioEdge, reaches: edge))
    }

    /// Whether sound ending at written time `end` has reached `edge`: within ``overlapTolerance`` of it counts, since
    /// the picture's edge is host-clock nanoseconds plus a frame duration, whose sum can round a nanosecond past
    /// where sound of the same length ends.
    private static func sound(endingAt end: CMTime, reaches edge: CMTime) -> Bool {
        !(end + overlapTolerance < edge)
    }

    /// The recording ends at written time `edge` and waits for its sound to get there.
    mutating func drain(until edge: CMTime) {
        drainUntil = edge
    }

    /// Whether the drain is over once a sound buffer at source time `time` lasting `duration` has been taken: the
    /// sound reached the edge.
    func drainIsComplete(afterSoundAt time: CMTime, duration: CMTime) -> Bool {
        Self.sound(endingAt: written(time) + duration, reaches: drainUntil)
    }

    /// Whether the picture, at source time `time`, has run `backstop` past the drain's edge while the sound did not
    /// get there: the sound is not coming (the microphone stalled or went away), and the drain ends without it.
    func drainOutwaited(videoAt time: CMTime, backstop: CMTime) -> Bool {
        drainUntil.isNumeric && written(time) >= drainUntil + backstop
    }
}
