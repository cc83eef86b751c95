// AudioClockFollower: sound from a device whose sample clock drifts, resampled to follow the session's clock.

import CFFmpeg
import Foundation
import OpenCoreMedia

/// Resamples a microphone's sound so that it stays where its timestamps say, however far the device's sample
/// clock is off (a real card's crystal is tens to hundreds of ppm off; the virtual microphone's is set by
/// `clockErrorPPM`).
///
/// A recording writes sound contiguously at the nominal rate: a card running 200 ppm fast delivers 48 009.6 frames
/// per second of the session's clock, and after an hour its sound is 0.72 s late against the pictures. The
/// buffers' presentation times are on the session's clock, so each one says where its first frame belongs. Before
/// each buffer, the follower compares that time with where its output has got to (the frames it has produced and
/// holds, at the nominal rate) and asks libswresample to absorb the difference over the next second
/// (`swr_set_compensation`, the soft compensation of FFmpeg's `aresample=async`): frames are stretched or squeezed
/// by at most ``maximumCorrection`` (1 %), with no click and no pitch change anyone can hear at 200 ppm. A jump of
/// more than ``largestCorrectedGap`` (a stalled device, a stream restarted), or the place of a buffer that never came
/// (an output that was behind dropped it, and said so with ``bufferWasLost()``), is not stretched: the output moves
/// to the new time, as the encoder then sees a gap or a jump it handles itself (it fills a gap with silence). Until
/// the difference first reaches ``engagingDifference`` (2 ms) the sound passes through untouched, so a source whose
/// clock agrees with its timestamps is written sample for sample; ``flush()`` gives what the resampler holds at the
/// end.
///
/// ``measuredDriftPPM`` is the device's measured clock error: frames received against the time they covered, over
/// the run since the last jump or lost buffer (at least 2 s).
///
/// Wraps `swr_alloc_set_opts2`, `swr_init`, `swr_set_compensation`, `swr_get_delay`, `swr_get_out_samples`,
/// `swr_convert` and `swr_free`; the follower is the `SwrContext`'s one owner.
///
/// Threading: thread-bound; use it from one thread at a time (a recording's queue). Not `Sendable`.
package final class AudioClockFollower {
    /// The most the output is stretched or squeezed: 1 % (10 000 ppm), far beyond any crystal.
    package static let maximumCorrection = 0.01
    /// A difference beyond this is a jump, not drift: 200 ms.
    package static let largestCorrectedGap = CMTime(value: 1, timescale: 5)
    /// The difference at which resampling begins: 2 ms. Until then the sound passes through untouched, so a
    /// source whose clock agrees with its timestamps (a file, a virtual microphone without clock error) is written
    /// sample for sample; at 200 ppm resampling begins after 10 s.
    package static let engagingDifference = CMTime(value: 1, timescale: 500)

    /// The interleaved PCM format in and out.
    package let format: AudioConverter.Format
    private let resampler: OpaquePointer
    private let formatDescription: CMFormatDescription
    /// Where the output's frame 0 belongs on the session clock (moved at a jump).
    private var anchor: CMTime = .invalid
    /// Frames emitted since the anchor.
    private var emitted: Int64 = 0
    /// The measurement run since the last jump: its first buffer's time, the last buffer's time and frame count,
    /// and the frames received from the first buffer up to the last (excluded), which cover that span.
    private var runStart: CMTime = .invalid
    private var runFrames: Int64 = 0
    private var lastTime: CMTime = .invalid
    private var lastFrames: Int64 = 0
    /// Whether the resampler is in the path (see ``engagingDifference``); it stays there once it is.
    private var isEngaged = false
    /// Whether buffers were lost before the next one (see ``bufferWasLost()``).
    private var lossPending = false

    /// A follower for sound in `description` (interleaved linear PCM).
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/unsupportedConversion`` for another format.
    package init(_ description: AudioStreamBasicDescription) throws(MediaCodecsError) {
        let operation = "creating an audio clock follower"
        guard let format = AudioConverter.Format(description) else {
            throw MediaCodecsError(
                .unsupportedConversion, while: operation, message: "the sound is not interleaved linear PCM")
        }
        self.format = format
        var layout = AVChannelLayout()
        var outputLayout = AVChannelLayout()
        av_channel_layout_default(&layout, Int32(format.channelCount))
        av_channel_layout_default(&outputLayout, Int32(format.channelCount))
        defer {
            av_channel_layout_uninit(&layout)
            av_channel_layout_uninit(&outputLayout)
        }
        var created: OpaquePointer?
        let rate = Int32(format.sampleRate)
        let status = swr_alloc_set_opts2(
            &created, &outputLayout, format.ffmpegSampleFormat, rate, &layout, format.ffmpegSampleFormat, rate, 0, nil)
        guard status >= 0, let context = created else {
            swr_free(&created)
            throw .ffmpeg(status < 0 ? status : CFFmpeg_AVERROR(ENOMEM), while: operation)
        }
        // The same rate in and out: without the flag libswresample copies and cannot compensate.
        av_opt_set_int(UnsafeMutableRawPointer(context), "flags", Int64(SWR_FLAG_RESAMPLE), 0)
        let initialised = swr_init(context)
        let description = try? CMFormatDescription(audioStreamBasicDescription: format.audioStreamBasicDescription)
        guard initialised >= 0, let description else {
            swr_free(&created)
            throw initialised < 0
                ? .ffmpeg(initialised, while: "\(operation) (swr_init)")
                : MediaCodecsError(.allocationFailed, while: operation, message: "no format description")
        }
        resampler = context
        formatDescription = description
    }

    deinit {
        var owned: OpaquePointer? = resampler
        swr_free(&owned)
    }

    /// The device's clock error measured so far, in ppm (positive: it delivers more frames than the time they
    /// stand for); nil before 2 s of sound without a jump.
    package var measuredDriftPPM: Double? {
        guard runStart.isNumeric, lastTime.isNumeric else { return nil }
        let span = (lastTime - runStart).seconds
        guard span >= 2 else { return nil }
        return (Double(runFrames) / (span * Double(format.sampleRate)) - 1) * 1e6
    }

    /// Resamples `buffer` (at the follower's format) toward its presentation time; returns the output, stamped
    /// where it belongs, or nil while libswresample holds everything.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/formatMismatch`` for a buffer in another
    ///   format or without a numeric time, ``MediaCodecsError/Kind/ffmpeg`` when libswresample fails.
    package func follow(_ buffer: CMSampleBuffer) throws(MediaCodecsError) -> CMSampleBuffer? {
        let operation = "following the session clock with audio at \(buffer.presentationTimeStamp.seconds) s"
        let time = buffer.presentationTimeStamp
        guard let description = buffer.formatDescription?.audioStreamBasicDescription,
            AudioConverter.Format(description) == format, let data = buffer.dataBuffer, time.isNumeric
        else {
            throw MediaCodecsError(.formatMismatch, while: operation, message: "not the follower's format")
        }
        let frames = data.dataLength / format.bytesPerFrame
        let rate = Int64(format.sampleRate)
        // Where the output has got to: emitted frames plus those libswresample holds, at the nominal rate.
        let held = isEngaged ? swr_get_delay(resampler, rate) : 0
        if anchor.isNumeric {
            let reached = anchor + CMTime(value: emitted + held, timescale: CMTimeScale(rate))
            let difference = time - reached
            // A lost buffer is not drift: stretching the sound around it would leave the file short by it until
            // the 1 % correction caught up. The output moves to the buffer's time, and the encoder fills the
            // buffer's place with silence, as it does for a longer jump. Only a loss the caller saw counts: a
            // buffer stamped late by a device's jitter looks the same, and jumping to it would put the sound late
            // by the jitter until the correction brought it back.
            let followsLoss = lossPending
            lossPending = false
            if difference > Self.largestCorrectedGap || difference < .zero - Self.largestCorrectedGap
                || (followsLoss && difference > Self.engagingDifference)
            {
                anchor = time - CMTime(value: emitted + held, timescale: CMTimeScale(rate))
                runStart = time
                runFrames = 0
            } else if !isEngaged, abs(difference.seconds) < Self.engagingDifference.seconds {
                countInRun(time)
            } else {
                isEngaged = true
                // Spread the difference over the next second, within the largest correction.
                let distance = Int32(rate)
                let most = Double(distance) * Self.maximumCorrection
                let delta = Int32(max(-most, min(most, (difference.seconds * Double(rate)).rounded())))
                let status = swr_set_compensation(resampler, delta, distance)
                guard status >= 0 else { throw .ffmpeg(status, while: "\(operation) (swr_set_compensation)") }
                countInRun(time)
            }
        } else {
            anchor = time
            runStart = time
        }
        lastTime = time
        lastFrames = Int64(frames)
        guard isEngaged else {
            emitted += Int64(frames)
            return buffer
        }
        return try convert(data, frames: frames, operation: operation)
    }

    /// Adds the previous buffer's frames to the measurement run, or, when a buffer between it and the one at `time`
    /// never came (an output that was behind dropped it), starts the run again at `time`: the frames counted would
    /// no longer cover the span, and the measured drift would take the loss for a slow clock. Lost buffers leave a
    /// gap of a whole buffer; a clock that is off moves a buffer by at most ``maximumCorrection`` of its length.
    private func countInRun(_ time: CMTime) {
        if buffersWereLost(before: time) {
            runStart = time
            runFrames = 0
        } else {
            runFrames += lastFrames
        }
    }

    /// Whether a buffer between the last one and the one at `time` never came: the gap is half a buffer longer
    /// than the last buffer lasted.
    private func buffersWereLost(before time: CMTime) -> Bool {
        guard lastTime.isNumeric else { return false }
        let expectedSeconds = Double(lastFrames) / Double(format.sampleRate)
        return (time - lastTime).seconds > 1.5 * expectedSeconds
    }

    /// Says that one or more buffers never reached the follower (an output that was behind dropped them): the next
    /// buffer's place, if it is later than the output has got to, is a gap for silence rather than drift.
    package func bufferWasLost() { lossPending = true }

    /// The frames libswresample still holds, as a last buffer (nil when it holds none, or never resampled).
    package func flush() throws(MediaCodecsError) -> CMSampleBuffer? {
        guard isEngaged else { return nil }
        return try convert(nil, frames: 0, operation: "flushing the audio clock follower")
    }

    /// Resamples `frames` of `data`, or drains what libswresample holds when `data` is nil.
    private func convert(
        _ data: CMBlockBuffer?, frames: Int, operation: String
    ) throws(MediaCodecsError)
        -> CMSampleBuffer?
    {
        let capacity = swr_get_out_samples(resampler, Int32(frames)) + Int32(frames / 50 + 16)
        let byteCount = Int(capacity) * format.bytesPerFrame
        guard let memory = malloc(byteCount) else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "\(byteCount) bytes")
        }
        var outputPlane: UnsafeMutablePointer<UInt8>? = memory.assumingMemoryBound(to: UInt8.self)
        let produced: Int32
        if let data {
            produced = data.withUnsafeBytes { bytes in
                var inputPlane: UnsafePointer<UInt8>? = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
                return withUnsafeMutablePointer(to: &outputPlane) { outputPlanes in
                    withUnsafeMutablePointer(to: &inputPlane) { inputPlanes in
                        swr_convert(resampler, outputPlanes, capacity, inputPlanes, Int32(frames))
                    }
                }
            }
        } else {
            produced = withUnsafeMutablePointer(to: &outputPlane) { outputPlanes in
                swr_convert(resampler, outputPlanes, capacity, nil, 0)
            }
        }
        guard produced > 0 else {
            free(memory)
            if produced < 0 { throw .ffmpeg(produced, while: "\(operation) (swr_convert)") }
            return nil
        }
        let timescale = CMTimeScale(format.sampleRate)
        let presentationTime = anchor + CMTime(value: emitted, timescale: timescale)
        emitted += Int64(produced)
        let block = CMBlockBuffer(
            wrapping: memory, length: Int(produced) * format.bytesPerFrame, release: { free($0) })
        do {
            return try CMSampleBuffer(
                dataBuffer: block, formatDescription: formatDescription, numSamples: Int(produced),
                sampleTimings: [
                    CMSampleTimingInfo(
                        duration: CMTime(value: 1, timescale: timescale), presentationTimeStamp: presentationTime,
                        decodeTimeStamp: .invalid)
                ], sampleSizes: [format.bytesPerFrame])
        } catch {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "the sample buffer failed: \(error)")
        }
    }
}
