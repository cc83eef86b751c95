import CaptureDrivers
import Foundation
import MediaCodecs
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A movie file's tracks and packets for a movie-file device, read with MediaCodecs' `Demuxer` (libavformat): the
/// implementation of CaptureDrivers' `MoviePacketSource` seam, so the driver plays files without importing
/// MediaCodecs.
///
/// Tracks: the first video and the first audio stream that can be played. Video: H.264 (`'avc1'`, its `avcC` or
/// Annex B parameter sets under the sample description atoms), HEVC (`'hvc1'`), MJPEG (`'jpeg'`), MPEG-4 part 2,
/// ProRes, VP8/VP9, AV1, MPEG-1 and MPEG-2 (`'mp1v'`, `'mp2v'`: DVB transport streams, program streams), H.263,
/// DV, Theora, VC-1/WMV3, FLV, MS-MPEG-4 v3 and Cinepak (each when this FFmpeg has its decoder), any other codec this
/// FFmpeg decodes (FFV1, HuffYUV, …: `VideoDecoder.ffmpegCodecType(forCodecNamed:)`), and raw video in
/// any container (y4m, NUT, Matroska, AVI) in the pixel formats OpenCoreVideo has (`'y420'`, `'f420'`, `'420v'`,
/// `'yuvs'`, `'2vuy'`, `'L008'`, `'24RGB'`, `'24BG'`, the 32-bit RGB orders). Audio: AAC (`'aac '`, the
/// AudioSpecificConfig as magic cookie), ALAC, MP3, MP2, MP1, AC-3, E-AC-3, Opus, FLAC, and little-endian linear
/// PCM (wav) as it is, with 1 to 8 channels at 1 Hz to 768 kHz. `unplayable` names the streams left out and why.
///
/// Threading: thread-bound, as the demuxer it holds.
package final class DemuxerPacketSource: MoviePacketSource {
    package let tracks: [MovieTrack]
    package let duration: CMTime
    /// The video and audio streams that cannot be played, each with why ("video codec theora", "raw video in
    /// yuv444p"), for the error that says why a file gives no device.
    package let unplayable: [String]
    private let demuxer: Demuxer
    /// Each track's last presentation − decode offset, for packets that come without a presentation time.
    private var reorderOffsets: [Int: CMTime] = [:]

    /// Opens `url`. Throws the demuxer's error for a file libavformat cannot read.
    package init(url: URL) throws {
        demuxer = try Demuxer(path: url.path)
        duration = demuxer.duration
        var tracks: [MovieTrack] = []
        var unplayable: [String] = []
        for stream in demuxer.streams {
            switch stream.mediaType {
            case .video:
                guard !tracks.contains(where: { $0.media == .video }) else { continue }
                switch Self.videoTrack(stream) {
                case .success(let track): tracks.append(track)
                case .failure(let reason): unplayable.append(reason.text)
                }
            case .audio:
                guard !tracks.contains(where: { $0.media == .audio }) else { continue }
                // The file's claim, checked before a session sizes anything from it (a level meter per channel: a
                // fuzzed CAF claiming 8 323 072 channels made it allocate gigabytes), as AVAssetReader checks it.
                guard stream.claimsDecodableAudio else {
                    unplayable.append(
                        "audio \(stream.codecName) claiming \(stream.channelCount) channels at \(stream.sampleRate) Hz "
                            + "(played: \(Demuxer.Stream.decodableAudioLimits))")
                    continue
                }
                if let track = Self.audioTrack(stream) {
                    tracks.append(track)
                } else {
                    unplayable.append("audio codec \(stream.codecName)")
                }
            case .other:
                continue
            }
        }
        self.tracks = tracks.sorted { $0.media == .video && $1.media != .video }
        self.unplayable = unplayable
    }

    /// The opener movie-file devices are made with.
    package static let opener: MoviePacketSourceOpener = { url in try DemuxerPacketSource(url: url) }

    package func playOnly(track index: Int) {
        demuxer.readOnly(streams: [index])
    }

    package func nextPacket() throws -> MoviePacket? {
        while true {
            switch try demuxer.readPacket() {
            case .endOfStream:
                return nil
            case .packet(let packet, let stream):
                guard tracks.contains(where: { $0.index == stream }) else { continue }
                return MoviePacket(
                    track: stream, data: packet.data,
                    presentationTime: presentationTime(
                        of: packet.presentationTime, decodeTime: packet.decodeTime, stream),
                    decodeTime: packet.decodeTime, duration: packet.duration, isKeyFrame: packet.isKeyFrame)
            }
        }
    }

    /// A packet's presentation time, inferred when the file leaves it out: an MPEG program stream (`.mpg`, `.vob`)
    /// carries one only where a PES packet starts a picture, and MPEG-1/2 decoders hold a picture back, so the
    /// decode time alone would show each such picture a frame early, on its predecessor's time. The track's last
    /// known offset between the two is kept instead (exact for streams without B-frames; with B-frames a guess, as
    /// any without the pictures' types).
    private func presentationTime(of presentation: CMTime, decodeTime: CMTime, _ track: Int) -> CMTime {
        if presentation.isNumeric {
            if decodeTime.isNumeric { reorderOffsets[track] = presentation - decodeTime }
            return presentation
        }
        guard decodeTime.isNumeric, let offset = reorderOffsets[track] else { return presentation }
        return decodeTime + offset
    }

    /// libavcodec's codec names and the codec types their samples carry; the session decodes each with
    /// `VideoDecoder.decoderName(for:)`'s decoder, so every entry must be one of its types.
    private static let videoCodecTypes: [String: String] = [
        "h264": "avc1", "hevc": "hvc1", "mjpeg": "jpeg", "mpeg4": "mp4v", "prores": "apcn", "vp8": "vp08",
        "vp9": "vp09", "av1": "av01",
        // MPEG-1/2 (a DVB stick's .ts, a camcorder's or a DVD's .mpg/.vob) and older codecs.
        "mpeg1video": "mp1v", "mpeg2video": "mp2v", "h263": "h263", "dvvideo": "dvc ", "theora": "XiTh",
        "wmv3": "WMV3", "vc1": "WVC1", "flv1": "FLV1", "msmpeg4v3": "DIV3", "cinepak": "cvid",
    ]

    /// FFmpeg's raw pixel formats that are OpenCoreVideo pixel formats, byte for byte.
    private static let rawPixelFormats: [String: OSType] = [
        "yuv420p": kCVPixelFormatType_420YpCbCr8Planar, "yuvj420p": kCVPixelFormatType_420YpCbCr8PlanarFullRange,
        "nv12": kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, "yuyv422": kCVPixelFormatType_422YpCbCr8_yuvs,
        "uyvy422": kCVPixelFormatType_422YpCbCr8, "gray": kCVPixelFormatType_OneComponent8,
        "rgb24": kCVPixelFormatType_24RGB, "bgr24": kCVPixelFormatType_24BGR, "argb": kCVPixelFormatType_32ARGB,
        "bgra": kCVPixelFormatType_32BGRA, "abgr": kCVPixelFormatType_32ABGR, "rgba": kCVPixelFormatType_32RGBA,
    ]

    /// Why a video stream cannot be played.
    struct Unplayable: Error {
        var text: String
    }

    static func videoTrack(_ stream: Demuxer.Stream) -> Result<MovieTrack, Unplayable> {
        guard stream.width > 0, stream.height > 0 else {
            return .failure(Unplayable(text: "video \(stream.codecName) of unknown size"))
        }
        let frameDuration =
            stream.frameRate > 0 ? CMTime(seconds: 1 / stream.frameRate, preferredTimescale: 90_000) : CMTime.invalid
        if stream.codecName == "rawvideo" {
            guard let pixelFormat = rawPixelFormats[stream.pixelFormatName] else {
                let known = rawPixelFormats.keys.sorted().joined(separator: ", ")
                return .failure(
                    Unplayable(text: "raw video in \(stream.pixelFormatName) (raw formats played: \(known))"))
            }
            guard
                let description = try? CMFormatDescription(
                    videoCodecType: .init(rawValue: pixelFormat), width: stream.width, height: stream.height)
            else { return .failure(Unplayable(text: "raw video in \(stream.pixelFormatName)")) }
            // AVI's uncompressed RGB runs bottom-up; libavformat marks it by ending the extradata with "BottomUp".
            let isBottomUp =
                stream.extradata.count >= 9 && Array(stream.extradata.suffix(9)) == Array("BottomUp\0".utf8)
            return .success(
                MovieTrack(
                    index: stream.index, media: .video, formatDescription: description,
                    rawLayout: RawVideoLayout(pixelFormat: pixelFormat, isBottomUp: isBottomUp),
                    frameDuration: frameDuration, duration: stream.duration))
        }
        // A build of FFmpeg without the decoder cannot play the track, whatever the table says. A codec QuickTime
        // has no code for gets one that names FFmpeg's decoder, when there is one.
        let tabled = videoCodecTypes[stream.codecName].map(fourCharCode).flatMap { code in
            VideoDecoder.decoderName(for: code).map(VideoDecoder.hasDecoder(named:)) == true ? code : nil
        }
        guard let codeValue = tabled ?? VideoDecoder.ffmpegCodecType(forCodecNamed: stream.codecName) else {
            return .failure(Unplayable(text: "video codec \(stream.codecName) (this FFmpeg has no decoder for it)"))
        }
        var extensions: [String: Any] = [:]
        if !stream.extradata.isEmpty {
            let atom = stream.codecName == "hevc" ? "hvcC" : stream.codecName == "h264" ? "avcC" : "glbl"
            extensions[kCMFormatDescriptionExtension_SampleDescriptionExtensionAtoms] = [atom: stream.extradata]
        }
        guard
            let description = try? CMFormatDescription(
                videoCodecType: .init(rawValue: codeValue), width: stream.width, height: stream.height,
                extensions: extensions)
        else { return .failure(Unplayable(text: "video codec \(stream.codecName)")) }
        return .success(
            MovieTrack(
                index: stream.index, media: .video, formatDescription: description, frameDuration: frameDuration,
                duration: stream.duration))
    }

    private static let audioFormatIDs: [String: String] = [
        "aac": "aac ", "alac": "alac", "mp3": ".mp3", "opus": "opus", "flac": "flac",
        // DVB and MPEG program streams: MPEG-1 Layer 2 mostly, AC-3 and E-AC-3 on HD channels.
        "mp2": ".mp2", "mp1": ".mp1", "ac3": "ac-3", "eac3": "ec-3",
    ]

    static func audioTrack(_ stream: Demuxer.Stream) -> MovieTrack? {
        guard stream.sampleRate > 0, stream.channelCount > 0 else { return nil }
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
            if !stream.extradata.isEmpty {
                extensions[kCMFormatDescriptionExtension_OpenAVMagicCookie] = stream.extradata
            }
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

/// Movie files opened as devices: the checks that say why a file cannot be, and the devices made from `file:`
/// unique IDs, kept so the same ID gives the same device object while the file plays.
///
/// Threading: thread safe (a mutex guards the table).
package enum MovieFileDevices {
    private static let opened = Mutex<[String: any CaptureBackend]>([:])

    /// The camera and microphone of the movie file at `path` (relative paths resolve against the working
    /// directory; errors name `path` as given).
    ///
    /// - Throws: an `NSError` in `NSPOSIXErrorDomain` with the OS's reason when the file cannot be opened (missing,
    ///   not permitted, a directory); `AVError(.fileFormatNotRecognized)` when FFmpeg does not read it as media;
    ///   `AVError(.decoderNotFound)` naming the codecs when it has no track that can be played.
    package static func open(
        path: String, loops: Bool, pacing: VirtualClockMode
    ) throws -> (camera: CaptureDrivers.MovieFileDevice?, microphone: CaptureDrivers.MovieFileDevice?) {
        let url = URL(fileURLWithPath: path).standardizedFileURL
        try checkReadable(url.path, given: path)
        // Opened here to learn why it fails; the devices open the file again to list and to play it.
        let source: DemuxerPacketSource
        do {
            source = try DemuxerPacketSource(url: url)
        } catch let error as MediaCodecsError {
            throw AVError(
                .fileFormatNotRecognized, "\(path) is not a media file FFmpeg can read (\(error.message))",
                suggestion: "Give a movie, y4m or sound file.")
        }
        guard !source.tracks.isEmpty else {
            if source.unplayable.isEmpty {
                throw AVError(.invalidSourceMedia, "\(path) has no video or audio track")
            }
            throw AVError(
                .decoderNotFound,
                "\(path) has no track that can be played: " + source.unplayable.joined(separator: "; "),
                suggestion: "Convert it, e.g. ffmpeg -i \(path) -c:v libx264 -c:a aac out.mp4")
        }
        return try CaptureDrivers.MovieFileDevice.devices(
            url: url, loops: loops, pacing: pacing, opener: DemuxerPacketSource.opener)
    }

    /// Throws the OS's reason when `path` cannot be opened for reading as a file.
    private static func checkReadable(_ path: String, given: String) throws {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        var failure = descriptor < 0 ? errno : 0
        if descriptor >= 0 {
            var status = stat()
            if fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFDIR { failure = EISDIR }
            close(descriptor)
        }
        guard failure != 0 else { return }
        let reason = String(cString: strerror(failure))
        throw NSError(
            domain: NSPOSIXErrorDomain, code: Int(failure),
            userInfo: [NSLocalizedDescriptionKey: "cannot open \(given): \(reason)", NSFilePathErrorKey: given])
    }

    /// The backend for a `file:PATH` (camera) or `file:PATH#audio` (microphone) unique ID, opened at first use
    /// (real time, no loop) and kept while it plays; a file that played to its end is opened afresh.
    ///
    /// - Throws: what ``open(path:loops:pacing:)`` throws, or `AVError(.deviceNotConnected)` when the file has no
    ///   such track.
    package static func backend(forUniqueID uniqueID: String) throws -> (any CaptureBackend)? {
        guard uniqueID.hasPrefix("file:") else { return nil }
        var path = String(uniqueID.dropFirst("file:".count))
        let wantsAudio = path.hasSuffix("#audio")
        if wantsAudio { path.removeLast("#audio".count) }
        // The table is keyed by the absolute path, so `file:clip.mov` and `file:/here/clip.mov` are one device.
        let key = "file:" + URL(fileURLWithPath: path).standardizedFileURL.path + (wantsAudio ? "#audio" : "")
        if let known = opened.withLock({ $0[key] }), known.isConnected { return known }
        let devices = try open(path: path, loops: false, pacing: .realTime)
        let backend = opened.withLock { table -> (any CaptureBackend)? in
            if let known = table[key], known.isConnected { return known }
            if let camera = devices.camera { table[camera.identity.uniqueID] = camera }
            if let microphone = devices.microphone { table[microphone.identity.uniqueID] = microphone }
            return table[key]
        }
        guard let backend else {
            throw AVError(
                .deviceNotConnected, "\(path) has no \(wantsAudio ? "audio" : "video") track",
                suggestion: wantsAudio
                    ? "Record without sound (--audio none)." : "Play its sound with file:\(path)#audio.")
        }
        return backend
    }
}

/// y4m frames read straight into the device's buffers (`Demuxer.readY4MFrame(into:)`).
extension DemuxerPacketSource: MovieRawFrameReader {
    package var readsRawFrames: Bool {
        tracks.count == 1 && tracks[0].rawLayout != nil && demuxer.readsY4MFrames
    }

    package func readRawFrame(into planes: [MovieRawPlane]) throws -> (presentationTime: CMTime, duration: CMTime)? {
        switch try demuxer.readY4MFrame(into: planes) {
        case .frame(let presentationTime, let duration): return (presentationTime, duration)
        case .endOfStream: return nil
        }
    }
}
