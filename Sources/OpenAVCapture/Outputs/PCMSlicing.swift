import Foundation

/// The frames of an interleaved PCM buffer before or after an instant, cut to the sample with one rounding (the
/// nearest sample, halves away from zero, as the asset reader cuts) by `CMSampleBufferCopySampleBufferForRange`:
/// what the recording engine and its timeline cut sound with at a start, a pause, a limit or a segment's edge.
///
/// Stateless; safe from any thread.
enum PCMSlicing {
    /// The first frames of an interleaved PCM buffer that fit in `room`, when the buffer lasts longer than `room`
    /// and at least one frame fits; nil otherwise (it fits whole, or nothing of it does).
    static func frames(before room: CMTime, of buffer: CMSampleBuffer) -> CMSampleBuffer? {
        guard buffer.formatDescription?.audioStreamBasicDescription != nil else { return nil }
        let frames = frameCount(in: room, of: buffer)
        guard frames > 0, frames < buffer.numSamples else { return nil }
        return pcmFrames(0..<frames, of: buffer)
    }

    /// How many frames of `buffer` fit in `room`, to the nearest frame (0 when it is not positive): device times
    /// are host-clock nanoseconds, so the room is a sample count give or take a nanosecond.
    static func frameCount(in room: CMTime, of buffer: CMSampleBuffer) -> Int {
        guard room.isNumeric, room > .zero else { return 0 }
        return sampleIndex(at: room, of: buffer)
    }

    /// The index of the sample `offset` after a PCM buffer's start, to the nearest sample, halves away from zero
    /// (exact rational arithmetic, as the asset reader cuts): the one rounding every cut of the recording uses.
    private static func sampleIndex(at offset: CMTime, of buffer: CMSampleBuffer) -> Int {
        let rate = buffer.formatDescription?.audioStreamBasicDescription?.mSampleRate ?? 48_000
        return Int(offset.convertScale(Int32(rate.rounded()), method: .roundHalfAwayFromZero).value)
    }

    /// The frames of an interleaved PCM buffer after its first `skipped`, timed from there; nil when nothing of
    /// it is left (or it is not PCM, whose frames cannot be split).
    static func frames(after skipped: CMTime, of buffer: CMSampleBuffer) -> CMSampleBuffer? {
        guard buffer.formatDescription?.audioStreamBasicDescription != nil else { return nil }
        guard skipped.isNumeric else { return buffer }
        let first = sampleIndex(at: skipped, of: buffer)
        guard first < buffer.numSamples else { return nil }
        guard first > 0 else { return buffer }
        return pcmFrames(first..<buffer.numSamples, of: buffer)
    }

    /// Frames `range` of an interleaved PCM buffer as a buffer of their own, timed from the first; nil when the
    /// buffer is not linear PCM (compressed packets cannot be cut) or the range is not inside it.
    private static func pcmFrames(_ range: Range<Int>, of buffer: CMSampleBuffer) -> CMSampleBuffer? {
        guard buffer.formatDescription?.audioStreamBasicDescription?.mFormatID == kAudioFormatLinearPCM else {
            return nil
        }
        return try? buffer.copy(samplesIn: range)
    }
}
