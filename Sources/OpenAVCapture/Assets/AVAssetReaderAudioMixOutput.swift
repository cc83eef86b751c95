// AVAssetReaderAudioMixOutput: one or more audio tracks decoded and mixed into one stream of linear PCM.

import Foundation
import MediaCodecs
import OpenCoreMedia

/// Reads several audio tracks as one: each is decoded and converted to the output's rate and channel count, and
/// the tracks are summed sample by sample on the asset's timeline (a track that starts later, or ends earlier, adds
/// silence there). Sums are not limited before a Float32 output; integer outputs clip at full scale.
///
/// Settings: as ``AVAssetReaderTrackOutput``'s audio settings; nil gives interleaved Float32 at the first track's
/// rate and channel count (Apple's mix output always decodes).
///
/// Threading: thread safe, as ``AVAssetReaderOutput``.
open class AVAssetReaderAudioMixOutput: AVAssetReaderOutput, @unchecked Sendable {
    /// The tracks mixed.
    public let audioTracks: [AVAssetTrack]
    /// The format of the samples given.
    public let audioSettings: [String: Any]?
    /// How audio is stretched when a composition scales its time.
    public var audioTimePitchAlgorithm: AVAudioTimePitchAlgorithm = .spectral
    let format: AudioStreamBasicDescription

    /// An output mixing `audioTracks`; traps when one is not audio, when there are none, or for settings Apple
    /// refuses.
    public init(audioTracks: [AVAssetTrack], audioSettings: [String: Any]?) {
        precondition(
            !audioTracks.isEmpty && audioTracks.allSatisfy { $0.mediaType == .audio },
            "*** -[AVAssetReaderAudioMixOutput initWithAudioTracks:audioSettings:] needs one or more audio tracks")
        self.audioTracks = audioTracks
        self.audioSettings = audioSettings
        let first = (audioTracks[0].formatDescriptions.first as? CMFormatDescription)?.audioStreamBasicDescription
        format =
            audioSettings.map {
                ReaderOutputSettings.audio($0, track: audioTracks[0], owner: "AVAssetReaderAudioMixOutput")
            }
            ?? .linearPCM(
                sampleRate: first?.mSampleRate ?? 48_000, channels: first?.mChannelsPerFrame ?? 2, bitsPerChannel: 32,
                isFloat: true)
        super.init(mediaType: .audio)
    }

    override var tracks: [AVAssetTrack] { audioTracks }

    override func makeProducer(timeRange: CMTimeRange) throws(AVError) -> any SampleProducer {
        let mixFormat = AudioStreamBasicDescription.linearPCM(
            sampleRate: format.mSampleRate, channels: format.mChannelsPerFrame, bitsPerChannel: 32, isFloat: true)
        var inputs: [any SampleProducer] = []
        for track in audioTracks {
            inputs.append(
                try track.makeSampleProducer(
                    timeRange: timeRange, decoding: .audio(mixFormat), pitch: audioTimePitchAlgorithm))
        }
        return try AudioMixProducer(inputs: inputs, format: format)
    }
}

/// Sums Float32 streams of one rate and channel count into buffers of `format`, 1024 frames at a time.
///
/// Threading: thread-bound, as the producers it reads.
final class AudioMixProducer: SampleProducer {
    private final class Input {
        let producer: any SampleProducer
        /// Samples not yet mixed, interleaved, starting at frame ``first`` of the timeline.
        var samples: [Float] = []
        var first: Int64 = 0
        var ended = false
        var started = false
        init(_ producer: any SampleProducer) { self.producer = producer }
    }

    private let inputs: [Input]
    private let format: AudioStreamBasicDescription
    private let channels: Int
    private let rate: Int32
    private let description: CMFormatDescription
    /// The next frame to emit, on the timeline at `rate`; nil before the first sample is known.
    private var position: Int64?
    private static let chunk = 1024

    init(inputs: [any SampleProducer], format: AudioStreamBasicDescription) throws(AVError) {
        self.inputs = inputs.map(Input.init)
        self.format = format
        channels = Int(format.mChannelsPerFrame)
        rate = Int32(format.mSampleRate)
        do {
            description = try CMFormatDescription(audioStreamBasicDescription: format)
        } catch {
            throw AVError(.unsupportedOutputSettings, "the mix format \(format) cannot be described: \(error)")
        }
    }

    func next() throws(AVError) -> CMSampleBuffer? {
        // Fill every input that has not ended until it covers the next chunk.
        for input in inputs { try fill(input) }
        if position == nil {
            position = inputs.filter(\.started).map(\.first).min()
        }
        guard let start = position else { return nil }
        let available = inputs.filter { !$0.ended || !$0.samples.isEmpty }
        guard !available.isEmpty else { return nil }
        // The chunk ends where the shortest input that has not ended stops, or after `chunk` frames.
        var end = start + Int64(Self.chunk)
        for input in inputs where !input.ended {
            end = min(end, input.first + Int64(input.samples.count / channels))
        }
        if inputs.allSatisfy(\.ended) {
            end = min(end, inputs.map { $0.first + Int64($0.samples.count / channels) }.max() ?? start)
        }
        guard end > start else { return nil }
        let frames = Int(end - start)
        var mix = [Float](repeating: 0, count: frames * channels)
        for input in inputs {
            let offset = Int(max(0, input.first - start))
            let skip = Int(max(0, start - input.first))
            let count = min(frames - offset, input.samples.count / channels - skip)
            guard count > 0 else { continue }
            for index in 0..<(count * channels) {
                mix[offset * channels + index] += input.samples[skip * channels + index]
            }
            let consumed = skip + count
            input.samples.removeFirst(consumed * channels)
            input.first += Int64(consumed)
        }
        position = end
        return try makeLinearPCMBuffer(
            mix, frames: frames, format: format, description: description, at: CMTime(value: start, timescale: rate))
    }

    private func fill(_ input: Input) throws(AVError) {
        let wanted = (position ?? 0) + Int64(Self.chunk)
        while !input.ended, !input.started || input.first + Int64(input.samples.count / channels) < wanted {
            guard let buffer = try input.producer.next() else {
                input.ended = true
                return
            }
            guard let data = buffer.dataBuffer else { continue }
            let count = buffer.numSamples * channels
            let time = buffer.presentationTimeStamp.convertScale(rate, method: .roundHalfAwayFromZero).value
            if !input.started {
                input.started = true
                input.first = time
            } else {
                // A gap in the input is silence; an overlap (resampler rounding) is dropped.
                let expected = input.first + Int64(input.samples.count / channels)
                if time > expected { input.samples += [Float](repeating: 0, count: Int(time - expected) * channels) }
            }
            data.withUnsafeBytes { bytes in
                input.samples += bytes.bindMemory(to: Float.self).prefix(count)
            }
            if position == nil { return }
        }
    }
}
