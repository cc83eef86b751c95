import Foundation
import MediaCodecs

/// Encodes a session's pictures and sound once, continuously, for the outputs that keep or send encoded media
/// rather than write one file (the pre-event output's ring; its files take the packets as they are).
///
/// The video encoder is a ``SharedVideoEncoder`` (H.264, made for the first picture), which movie file outputs may
/// share; the audio encoder is made for the first sound buffer (AAC at its rate and channel count).
///
/// Threading: thread-bound to its owner's serial queue (the encoders are).
final class LiveMediaEncoder {
    struct Settings: Sendable {
        var videoBitRate: Int?
        var audioBitRate: Int?
        /// Frames from one key frame to the next; nil: one second's worth.
        var keyFrameInterval: Int?
    }

    let settings: Settings
    /// The video half, which other outputs may share (see ``SharedVideoEncoder``).
    let sharedVideo: SharedVideoEncoder
    private(set) var audio: AudioEncoder?
    /// Sound in a rate AAC does not take is resampled to 48 kHz first.
    private var resampler: AudioConverter?
    private let owner: ObjectIdentifier

    /// `owner` is the output holding it: the packets of the pictures it offers come back to it, not to a handler.
    /// The video half is `sharedVideo` when given (made with its own settings), else a new one with `settings`.
    init(settings: Settings, owner: ObjectIdentifier, sharedVideo: SharedVideoEncoder? = nil) {
        self.settings = settings
        self.owner = owner
        self.sharedVideo =
            sharedVideo
            ?? SharedVideoEncoder { .init(bitRate: settings.videoBitRate, keyFrameInterval: settings.keyFrameInterval) }
    }

    var video: VideoEncoder? { sharedVideo.video }

    /// Encodes one picture; returns the packets the encoder gave for it (one, with x264's zero latency), or none
    /// when another output sharing the encoder offered this picture first (they came through its handler).
    func encode(picture buffer: CMSampleBuffer) throws(MediaCodecsError) -> [EncodedPacket] {
        try sharedVideo.encode(picture: buffer, by: owner)
    }

    /// Encodes one buffer of PCM; returns the packets the encoder gave (AAC gives one per 1,024 samples, late by
    /// its delay).
    func encode(sound buffer: CMSampleBuffer) throws(MediaCodecsError) -> [EncodedPacket] {
        guard let description = buffer.formatDescription?.audioStreamBasicDescription else { return [] }
        var buffers = [buffer]
        let rate = Int(description.mSampleRate.rounded())
        let takesRate = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000].contains(
            rate)
        if !takesRate {
            if resampler == nil {
                let target = AudioConverter.Format(
                    sampleRate: 48000, channelCount: Int(description.mChannelsPerFrame), sample: .float32)
                resampler = try AudioConverter(from: description, to: target.audioStreamBasicDescription)
            }
            buffers = []
            try resampler?.convert(buffer) { buffers.append($0) }
        }
        var packets: [EncodedPacket] = []
        for piece in buffers {
            if audio == nil, let format = piece.formatDescription?.audioStreamBasicDescription {
                var configuration = AudioEncoder.Configuration(
                    codec: .aac, sampleRate: Int(format.mSampleRate.rounded()),
                    channelCount: Int(format.mChannelsPerFrame))
                if let bitRate = settings.audioBitRate { configuration.bitRate = bitRate }
                audio = try AudioEncoder(configuration)
            }
            guard let audio else { continue }
            try audio.send(piece)
            while case .packet(let packet) = try audio.receivePacket() { packets.append(packet) }
        }
        return packets
    }
}
