import Foundation
import MediaCodecs

/// Encodes a session's pictures and sound once, continuously, for the outputs that keep or send encoded media
/// rather than write one file (the pre-event output's ring; its files take the packets as they are).
///
/// The video encoder is made for the first picture (its size and pixel format, the frame rate its duration says;
/// later pictures in another format or size are converted to those, see ``EncoderPictureConverter``):
/// H.264 with the defaults of ``VideoEncoder`` (a key frame every second) unless the settings say otherwise; the
/// audio encoder for the first sound buffer (AAC at its rate and channel count).
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
    private(set) var video: VideoEncoder?
    private(set) var audio: AudioEncoder?
    private var pictures = EncoderPictureConverter()
    /// Sound in a rate AAC does not take is resampled to 48 kHz first.
    private var resampler: AudioConverter?

    init(settings: Settings) { self.settings = settings }

    /// Encodes one picture; returns the packets the encoder gave for it (one, with x264's zero latency).
    func encode(picture buffer: CMSampleBuffer) throws(MediaCodecsError) -> [EncodedPacket] {
        guard let image = buffer.imageBuffer, buffer.presentationTimeStamp.isNumeric else { return [] }
        if video == nil {
            let duration = buffer.duration
            let rate = duration.isNumeric && duration > .zero ? max(1, Int((1 / duration.seconds).rounded())) : 30
            var configuration = VideoEncoder.Configuration(
                codec: .h264, width: CVPixelBufferGetWidth(image) & ~1, height: CVPixelBufferGetHeight(image) & ~1,
                frameRate: rate, pixelFormat: CVPixelBufferGetPixelFormatType(image))
            if let bitRate = settings.videoBitRate { configuration.averageBitRate = bitRate }
            if let interval = settings.keyFrameInterval { configuration.maxKeyFrameInterval = max(1, interval) }
            video = try VideoEncoder(configuration)
        }
        guard let video else { return [] }
        try video.send(
            try pictures.picture(image, for: video.configuration), presentationTime: buffer.presentationTimeStamp)
        var packets: [EncodedPacket] = []
        while case .packet(let packet) = try video.receivePacket() { packets.append(packet) }
        return packets
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
