// CompositionTrackProducer: a composition track's samples, read from its segments' sources and retimed.

import Foundation
import MediaCodecs
import OpenCoreMedia

/// Gives a composition track's samples within a range of the composition's time, in order.
///
/// Video, and any track read as stored (passthrough): consecutive segments that show one source track's
/// contiguous ranges (what `scaleTimeRange` leaves when it cuts a recording into slow and normal parts) are read
/// with one `TrackSampleReader`, so no frame is read twice; each sample is retimed through the mapping of the
/// segment whose source range holds it: presentation and decode times mapped, the duration scaled. Slowed 8×, a
/// 240 fps recording's frames come 1/30 s apart. Passthrough packets before the first segment's start (the key frame lead-in a decoder needs) map to times before it; a later run that does not begin on a key frame is refused (its lead-in would overlap the run before), while sound's lead-in packets are dropped. Passthrough sound in a scaled segment cannot be
/// stretched without decoding: it is left out (a gap in the track); read it decoded instead (a passthrough export
/// re-encodes such a track, see `EncodedAudioProducer`).
///
/// Decoded sound: each segment is read on its own, trimmed to the sample; a scaled one goes through an
/// ``AudioTimeStretcher`` (pitch kept for `.spectral`, `.timeDomain` and `.lowQualityZeroLatency`, moved for
/// `.varispeed`), and every segment's output is cut or padded to its exact length in samples, so later segments
/// land where the composition says. Empty segments give silence. Timestamps count samples from each segment's
/// start.
///
/// Threading: thread-bound, as the readers it holds.
final class CompositionTrackProducer: SampleProducer {
    /// Segments read together: one source track, contiguous source ranges.
    private struct Run {
        var track: AVAssetTrack
        var mappings: [CMTimeMapping]
        var sourceRange: CMTimeRange {
            CMTimeRange(start: mappings[0].source.start, end: mappings[mappings.count - 1].source.end)
        }
    }

    private let mediaType: AVMediaType
    private let decoding: TrackSampleReader.Decoding
    private let pitch: AVAudioTimePitchAlgorithm
    private var pending: [AVCompositionTrackSegment]
    private var runs: [Run] = []
    private var current: (run: Run, reader: any SampleProducer)?
    /// Runs whose samples were given (passthrough: a later run's lead-in would overlap them).
    private var startedRuns = 0
    private var enteredCurrentRun = false
    private var audio: AudioSegmentReader?

    init(
        segments: [AVCompositionTrackSegment], mediaType: AVMediaType, timeRange: CMTimeRange,
        decoding: TrackSampleReader.Decoding, pitch: AVAudioTimePitchAlgorithm
    ) throws(AVError) {
        self.mediaType = mediaType
        self.decoding = decoding
        self.pitch = pitch
        let end = timeRange.duration.isNumeric ? timeRange.end : CMTime.positiveInfinity
        let start = timeRange.start.isNumeric ? timeRange.start : .zero
        // Cut the segments to the range asked.
        pending = segments.compactMap { segment in
            let target = segment.timeMapping.target
            let clipped = CMTimeRange(start: max(target.start, start), end: min(target.end, end))
            guard clipped.duration > .zero else { return nil }
            return clipped == target ? segment : segment.retargeted(clipped)
        }
        if case .audio = decoding {
            return
        }
        for segment in pending {
            guard let track = segment.sourceTrack else { continue }
            if var last = runs.last, last.track === track,
                last.mappings[last.mappings.count - 1].source.end == segment.timeMapping.source.start
            {
                last.mappings.append(segment.timeMapping)
                runs[runs.count - 1] = last
            } else {
                runs.append(Run(track: track, mappings: [segment.timeMapping]))
            }
        }
    }

    func next() throws(AVError) -> CMSampleBuffer? {
        if case .audio(let format) = decoding { return try nextAudio(format) }
        while true {
            if current == nil {
                guard !runs.isEmpty else { return nil }
                let run = runs.removeFirst()
                if enteredCurrentRun { startedRuns += 1 }
                enteredCurrentRun = false
                current = (
                    run, try run.track.makeSampleProducer(timeRange: run.sourceRange, decoding: decoding, pitch: pitch)
                )
            }
            guard let (run, reader) = current else { return nil }
            guard let sample = try reader.next() else {
                current = nil
                continue
            }
            if case .passthrough = decoding, sample.presentationTimeStamp < run.sourceRange.start {
                // A lead-in packet (the key frame before the run's start, which the reader seeks to). Before the
                // first run it plays before time 0; later it would overlap the previous run's packets.
                guard startedRuns > 0 else {
                    if let retimed = try retime(sample, through: run.mappings) { return retimed }
                    continue
                }
                // Sound packets stand alone: drop the lead-in. A picture after it needs it: refuse, saying why.
                guard mediaType == .video else { continue }
                throw AVError(
                    .operationNotSupportedForAsset,
                    "the edit from \(run.sourceRange.start.seconds) s of the source does not begin on a key frame; "
                        + "passthrough copies frames as they are and cannot cut between key frames",
                    suggestion: "Export with an encoding preset such as AVAssetExportPresetHighestQuality.")
            }
            if sample.presentationTimeStamp >= run.sourceRange.start, !enteredCurrentRun {
                enteredCurrentRun = true
            }
            if let retimed = try retime(sample, through: run.mappings) { return retimed }
        }
    }

    /// `sample` with its times mapped through the mapping whose source holds its presentation time (the first for
    /// times before the run, the last for times after); nil for passthrough sound in a scaled mapping.
    private func retime(_ sample: CMSampleBuffer, through mappings: [CMTimeMapping]) throws(AVError) -> CMSampleBuffer?
    {
        let time = sample.presentationTimeStamp
        let mapping =
            mappings.first { $0.source.containsTime(time) }
            ?? (time < mappings[0].source.start ? mappings[0] : mappings[mappings.count - 1])
        let scaled = mapping.source.duration != mapping.target.duration
        if scaled, mediaType == .audio { return nil }
        do {
            let timings = try sample.sampleTimingInfos().map { timing in
                CMSampleTimingInfo(
                    duration: timing.duration.isNumeric
                        ? CMTimeMapDurationFromRangeToRange(
                            timing.duration, fromRange: mapping.source, toRange: mapping.target)
                        : timing.duration,
                    presentationTimeStamp: CMTimeMapTimeFromRangeToRange(
                        timing.presentationTimeStamp, fromRange: mapping.source, toRange: mapping.target),
                    decodeTimeStamp: timing.decodeTimeStamp.isNumeric
                        ? CMTimeMapTimeFromRangeToRange(
                            timing.decodeTimeStamp, fromRange: mapping.source, toRange: mapping.target)
                        : .invalid)
            }
            let retimed = try sample.withNewTiming(timings)
            if let notSync = CMGetAttachment(sample, key: kCMSampleAttachmentKey_NotSync, attachmentModeOut: nil) {
                CMSetAttachment(
                    retimed, key: kCMSampleAttachmentKey_NotSync, value: notSync,
                    attachmentMode: kCMAttachmentMode_ShouldNotPropagate)
            }
            return retimed
        } catch {
            throw AVError(.unknown, "retiming a sample failed: \(error)")
        }
    }

    // MARK: Sound

    private func nextAudio(_ format: AudioStreamBasicDescription) throws(AVError) -> CMSampleBuffer? {
        while true {
            if audio == nil {
                guard !pending.isEmpty else { return nil }
                audio = try AudioSegmentReader(segment: pending.removeFirst(), format: format, pitch: pitch)
            }
            guard let reader = audio else { return nil }
            if let buffer = try reader.next() { return buffer }
            audio = nil
        }
    }
}

/// One audio segment of a composition, decoded, stretched when scaled, cut or padded to its exact length.
///
/// Threading: thread-bound.
private final class AudioSegmentReader {
    private let reader: (any SampleProducer)?
    private let stretcher: AudioTimeStretcher?
    private let format: AudioStreamBasicDescription
    private let description: CMFormatDescription
    private let channels: Int
    private let rate: Int32
    private let start: CMTime
    /// The segment's length in samples at the output rate, and how many were given.
    private let length: Int64
    private var given: Int64 = 0
    private var sourceEnded = false
    private var held: [Float] = []

    init(
        segment: AVCompositionTrackSegment, format: AudioStreamBasicDescription, pitch: AVAudioTimePitchAlgorithm
    )
        throws(AVError)
    {
        self.format = format
        channels = Int(format.mChannelsPerFrame)
        rate = Int32(format.mSampleRate)
        let target = segment.timeMapping.target
        start = target.start
        length = target.duration.convertScale(rate, method: .roundHalfAwayFromZero).value
        do {
            description = try CMFormatDescription(audioStreamBasicDescription: format)
        } catch {
            throw AVError(.unsupportedOutputSettings, "the audio format \(format) cannot be described: \(error)")
        }
        let floats = AudioStreamBasicDescription.linearPCM(
            sampleRate: format.mSampleRate, channels: format.mChannelsPerFrame, bitsPerChannel: 32, isFloat: true)
        if let track = segment.sourceTrack {
            reader = try track.makeSampleProducer(
                timeRange: segment.timeMapping.source, decoding: .audio(floats), pitch: pitch)
        } else {
            reader = nil
            sourceEnded = true
        }
        if segment.isScaled {
            let factor = segment.timeMapping.target.duration.seconds / segment.timeMapping.source.duration.seconds
            do {
                stretcher = try AudioTimeStretcher(
                    sampleRate: Int(rate), channelCount: channels, factor: factor,
                    pitch: pitch == .varispeed ? .varispeed : .kept)
            } catch {
                throw AVError(.unsupportedOutputSettings, "stretching sound ×\(factor) failed: \(error.message)")
            }
        } else {
            stretcher = nil
        }
    }

    func next() throws(AVError) -> CMSampleBuffer? {
        let chunk = 4096
        while held.count < chunk * channels, !sourceEnded {
            try pull()
        }
        let remaining = Int(length - given)
        guard remaining > 0 else { return nil }
        var frames = min(remaining, held.count / channels)
        if frames == 0 {
            // The source gave less than the segment's length: the rest is silence.
            frames = min(remaining, chunk)
            held += [Float](repeating: 0, count: frames * channels)
        }
        frames = min(frames, chunk)
        let samples = Array(held.prefix(frames * channels))
        held.removeFirst(frames * channels)
        let time = start + CMTime(value: given, timescale: rate)
        given += Int64(frames)
        return try makeLinearPCMBuffer(samples, frames: frames, format: format, description: description, at: time)
    }

    private func pull() throws(AVError) {
        guard let reader, let buffer = try reader.next() else {
            sourceEnded = true
            if let stretcher {
                do {
                    held += try stretcher.finish()
                } catch {
                    throw AVError(.decodeFailed, "stretching sound failed: \(error.message)")
                }
            }
            return
        }
        guard let data = buffer.dataBuffer else { return }
        let count = buffer.numSamples * channels
        var floats: [Float] = []
        data.withUnsafeBytes { bytes in floats = Array(bytes.bindMemory(to: Float.self).prefix(count)) }
        if let stretcher {
            do {
                held += try floats.withUnsafeBufferPointer { pointer throws(MediaCodecsError) in
                    try stretcher.process(pointer, frameCount: buffer.numSamples)
                }
            } catch {
                throw AVError(.decodeFailed, "stretching sound failed: \(error.message)")
            }
        } else {
            held += floats
        }
    }
}

/// Interleaved Float32 `samples` as a buffer of linear PCM `format` (Float32, or Int16/Int32 clipped at full
/// scale), stamped `time`.
func makeLinearPCMBuffer(
    _ samples: [Float], frames: Int, format: AudioStreamBasicDescription, description: CMFormatDescription,
    at time: CMTime
) throws(AVError) -> CMSampleBuffer {
    let bytesPerFrame = Int(format.mBytesPerFrame)
    let block = CMBlockBuffer(length: frames * bytesPerFrame)
    block.withUnsafeMutableBytes { bytes in
        if format.mFormatFlags & kAudioFormatFlagIsFloat != 0 {
            let out = bytes.bindMemory(to: Float.self)
            for index in samples.indices { out[index] = samples[index] }
        } else if format.mBitsPerChannel == 16 {
            let out = bytes.bindMemory(to: Int16.self)
            for index in samples.indices { out[index] = Int16((max(-1, min(1, samples[index])) * 32767).rounded()) }
        } else {
            let out = bytes.bindMemory(to: Int32.self)
            for index in samples.indices {
                out[index] = Int32((Double(max(-1, min(1, samples[index]))) * 2_147_483_647).rounded())
            }
        }
    }
    do {
        return try CMSampleBuffer(
            dataBuffer: block, formatDescription: description, numSamples: frames,
            sampleTimings: [
                CMSampleTimingInfo(
                    duration: CMTime(value: 1, timescale: Int32(format.mSampleRate)), presentationTimeStamp: time,
                    decodeTimeStamp: .invalid)
            ], sampleSizes: [bytesPerFrame])
    } catch {
        throw AVError(.unknown, "making an audio buffer failed: \(error)")
    }
}
