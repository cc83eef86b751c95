// Passthrough export of a scaled edit's sound: the one track that is re-encoded, stretched, while video is copied.

import Foundation
import MediaCodecs
import OpenCoreMedia

/// Sound in a scaled edit cannot be retimed without decoding (a packet of AAC is 1024 samples of its own time), so a
/// passthrough export decodes it, stretches it with the export's ``AVAudioTimePitchAlgorithm`` (the composition's
/// decoded reading: `atempo` keeps the pitch, `varispeed` moves it) and encodes it again as AAC at the source's
/// rate and channel count; video and unscaled sound tracks are still copied packet for packet.
///
/// Gives the encoder's packets as sample buffers (data, times, duration; no format description) for the export's
/// lane, which writes them as they are.
///
/// Threading: thread-bound (the export's thread), as the producer and the encoder it holds.
final class EncodedAudioProducer: SampleProducer {
    private let source: any SampleProducer
    let encoder: AudioEncoder
    private var sourceEnded = false
    private var ready: [EncodedPacket] = []

    /// Whether `track` needs it: a composition's sound track with a scaled segment.
    static func isNeeded(for track: AVAssetTrack) -> Bool {
        guard track.mediaType == .audio, let composed = track as? AVCompositionTrack else { return false }
        return composed.segments.contains(where: \.isScaled)
    }

    /// The encoder and decoded reading for `track` within `range`, stretched by `pitch`.
    init(
        track: AVAssetTrack, stream: Demuxer.Stream, range: CMTimeRange, pitch: AVAudioTimePitchAlgorithm
    )
        throws(AVError)
    {
        let rate = stream.sampleRate > 0 ? stream.sampleRate : 48_000
        let channels = min(max(stream.channelCount, 1), 2)
        do {
            var configuration = AudioEncoder.Configuration(codec: .aac, sampleRate: rate, channelCount: channels)
            configuration.bitRate = 64_000 * channels
            encoder = try AudioEncoder(configuration)
        } catch {
            throw AVError(.encoderNotFound, "the slowed sound cannot be encoded as AAC: \(error.message)")
        }
        source = try track.makeSampleProducer(
            timeRange: range,
            decoding: .audio(
                .linearPCM(sampleRate: Float64(rate), channels: UInt32(channels), bitsPerChannel: 32, isFloat: true)),
            pitch: pitch)
    }

    func next() throws(AVError) -> CMSampleBuffer? {
        do {
            while ready.isEmpty {
                switch try encoder.receivePacket() {
                case .packet(let packet):
                    ready.append(packet)
                case .endOfStream:
                    return nil
                case .needsInput:
                    if sourceEnded { return nil }
                    if let buffer = try source.next() {
                        try encoder.send(buffer)
                    } else {
                        sourceEnded = true
                        try encoder.finish()
                    }
                }
            }
        } catch let error as AVError {
            throw error
        } catch let error as MediaCodecsError {
            throw AVError(.exportFailed, "encoding the slowed sound failed: \(error.message)")
        } catch {
            throw AVError(.unknown, "encoding the slowed sound failed: \(error)")
        }
        let packet = ready.removeFirst()
        do {
            return try CMSampleBuffer(
                dataBuffer: packet.data, formatDescription: nil, numSamples: 1,
                sampleTimings: [
                    CMSampleTimingInfo(
                        duration: packet.duration, presentationTimeStamp: packet.presentationTime,
                        decodeTimeStamp: packet.decodeTime)
                ], sampleSizes: [packet.data.dataLength])
        } catch {
            throw AVError(.unknown, "wrapping an encoded packet failed: \(error)")
        }
    }
}
