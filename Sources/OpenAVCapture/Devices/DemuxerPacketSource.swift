import CaptureDrivers
import Foundation
import MediaCodecs
import Synchronization

/// A movie file's tracks and packets for a movie-file device, read with MediaCodecs' `Demuxer` (libavformat): the
/// implementation of CaptureDrivers' `MoviePacketSource` seam, so the driver plays files without importing
/// MediaCodecs.
///
/// Tracks: the first video and the first audio stream that can be played. Video: H.264 (`'avc1'`, its `avcC` or
/// Annex B parameter sets under the sample description atoms), HEVC (`'hvc1'`), MJPEG (`'jpeg'`), MPEG-4 part 2,
/// ProRes, VP8/VP9, AV1, and raw planar 4:2:0 (y4m) as `'y420'`/`'f420'` frames. Audio: AAC (`'aac '`, the
/// AudioSpecificConfig as magic cookie), ALAC, MP3, Opus, FLAC, and little-endian linear PCM (wav) as it is.
///
/// Threading: thread-bound, as the demuxer it holds.
package final class DemuxerPacketSource: MoviePacketSource {
    package let tracks: [MovieTrack]
    package let duration: CMTime
    private let demuxer: Demuxer

    /// Opens `url`. Throws the demuxer's error for a file libavformat cannot read.
    package init(url: URL) throws {
        demuxer = try Demuxer(path: url.path)
        duration = demuxer.duration
        var tracks: [MovieTrack] = []
        if let video = demuxer.streams.lazy.compactMap(Self.videoTrack).first { tracks.append(video) }
        if let audio = demuxer.streams.lazy.compactMap(Self.audioTrack).first { tracks.append(audio) }
        self.tracks = tracks
    }

    /// The opener movie-file devices are made with.
    package static let opener: MoviePacketSourceOpener = { url in try DemuxerPacketSource(url: url) }

    package func nextPacket() throws -> MoviePacket? {
        while true {
            switch try demuxer.readPacket() {
            case .endOfStream:
                return nil
            case .packet(let packet, let stream):
                guard tracks.contains(where: { $0.index == stream }) else { continue }
                return MoviePacket(
                    track: stream, data: packet.data, presentationTime: packet.presentationTime,
                    decodeTime: packet.decodeTime, duration: packet.duration)
            }
        }
    }

    private static let videoCodecTypes: [String: String] = [
        "h264": "avc1", "hevc": "hvc1", "mjpeg": "jpeg", "mpeg4": "mp4v", "prores": "apcn", "vp8": "vp08",
        "vp9": "vp09", "av1": "av01",
    ]

    private static func videoTrack(_ stream: Demuxer.Stream) -> MovieTrack? {
        guard stream.mediaType == .video, stream.width > 0, stream.height > 0 else { return nil }
        let frameDuration =
            stream.frameRate > 0 ? CMTime(seconds: 1 / stream.frameRate, preferredTimescale: 90_000) : CMTime.invalid
        if stream.codecName == "rawvideo" {
            let pixelFormat: OSType
            switch stream.pixelFormatName {
            case "yuv420p": pixelFormat = kCVPixelFormatType_420YpCbCr8Planar
            case "yuvj420p": pixelFormat = kCVPixelFormatType_420YpCbCr8PlanarFullRange
            default: return nil
            }
            guard
                let description = try? CMFormatDescription(
                    videoCodecType: .init(rawValue: pixelFormat), width: stream.width, height: stream.height)
            else { return nil }
            return MovieTrack(
                index: stream.index, media: .video, formatDescription: description, rawPixelFormat: pixelFormat,
                frameDuration: frameDuration, duration: stream.duration)
        }
        guard let code = videoCodecTypes[stream.codecName] else { return nil }
        var extensions: [String: Any] = [:]
        if !stream.extradata.isEmpty {
            let atom = stream.codecName == "hevc" ? "hvcC" : stream.codecName == "h264" ? "avcC" : "glbl"
            extensions[kCMFormatDescriptionExtension_SampleDescriptionExtensionAtoms] = [atom: stream.extradata]
        }
        guard
            let description = try? CMFormatDescription(
                videoCodecType: .init(rawValue: fourCharCode(code)), width: stream.width, height: stream.height,
                extensions: extensions)
        else { return nil }
        return MovieTrack(
            index: stream.index, media: .video, formatDescription: description, frameDuration: frameDuration,
            duration: stream.duration)
    }

    private static let audioFormatIDs: [String: String] = [
        "aac": "aac ", "alac": "alac", "mp3": ".mp3", "opus": "opus", "flac": "flac",
    ]

    private static func audioTrack(_ stream: Demuxer.Stream) -> MovieTrack? {
        guard stream.mediaType == .audio, stream.sampleRate > 0, stream.channelCount > 0 else { return nil }
        let rate = Float64(stream.sampleRate)
        let channels = UInt32(stream.channelCount)
        let asbd: AudioStreamBasicDescription
        var extensions: [String: Any] = [:]
        switch stream.codecName {
        case "pcm_s16le": asbd = .linearPCM(sampleRate: rate, channels: channels, bitsPerChannel: 16, isFloat: false)
        case "pcm_s32le": asbd = .linearPCM(sampleRate: rate, channels: channels, bitsPerChannel: 32, isFloat: false)
        case "pcm_f32le": asbd = .linearPCM(sampleRate: rate, channels: channels, bitsPerChannel: 32, isFloat: true)
        default:
            guard let code = audioFormatIDs[stream.codecName] else { return nil }
            asbd = AudioStreamBasicDescription(
                mSampleRate: rate, mFormatID: fourCharCode(code), mFormatFlags: 0, mBytesPerPacket: 0,
                mFramesPerPacket: stream.codecName == "aac" ? 1024 : 0, mBytesPerFrame: 0, mChannelsPerFrame: channels,
                mBitsPerChannel: 0, mReserved: 0)
            if !stream.extradata.isEmpty { extensions[kCMFormatDescriptionExtension_OpenAVMagicCookie] = stream.extradata }
        }
        guard let description = try? CMFormatDescription(audioStreamBasicDescription: asbd, extensions: extensions)
        else { return nil }
        return MovieTrack(
            index: stream.index, media: .audio, formatDescription: description, frameDuration: .invalid,
            duration: stream.duration)
    }

    private static func fourCharCode(_ text: String) -> FourCharCode {
        text.utf8.reduce(0) { $0 << 8 | FourCharCode($1) }
    }
}

/// The movie-file devices made from `file:` unique IDs, kept so the same ID gives the same device object.
///
/// Threading: thread safe (a mutex).
enum MovieFileDevices {
    private static let opened = Mutex<[String: any CaptureBackend]>([:])

    /// The backend for a `file:PATH` (camera) or `file:PATH#audio` (microphone) unique ID, opened at first use
    /// (real time, no loop); nil when the file cannot be read or has no such track.
    static func backend(forUniqueID uniqueID: String) -> (any CaptureBackend)? {
        guard uniqueID.hasPrefix("file:") else { return nil }
        if let known = opened.withLock({ $0[uniqueID] }) { return known }
        var path = String(uniqueID.dropFirst("file:".count))
        let wantsAudio = path.hasSuffix("#audio")
        if wantsAudio { path.removeLast("#audio".count) }
        guard
            let devices = try? MovieFileDevice.devices(
                url: URL(fileURLWithPath: path), loops: false, pacing: .realTime, opener: DemuxerPacketSource.opener)
        else { return nil }
        return opened.withLock { table in
            if let camera = devices.camera { table[camera.identity.uniqueID] = table[camera.identity.uniqueID] ?? camera }
            if let microphone = devices.microphone {
                table[microphone.identity.uniqueID] = table[microphone.identity.uniqueID] ?? microphone
            }
            return table[uniqueID]
        }
    }
}
