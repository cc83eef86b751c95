// AVAssetTrack: one track of an asset.

import Foundation
import MediaCodecs
import OpenCoreMedia

/// One track of an ``AVAsset``: its media type, format, timing and display transform.
///
/// Threading: immutable; `@unchecked Sendable` (it holds format descriptions, which are immutable). Its subclass
/// ``AVCompositionTrack`` is the subclass a composition's tracks are made of.
open class AVAssetTrack: NSObject, @unchecked Sendable {
    /// What a file says about a track (a composition's tracks work theirs out from their segments).
    ///
    /// Threading: a value.
    struct Description {
        var trackID: CMPersistentTrackID
        var mediaType: AVMediaType
        var naturalSize: CGSize
        var nominalFrameRate: Float
        var timeRange: CMTimeRange
        var formatDescriptions: [Any]
        var estimatedDataRate: Float
        var preferredTransform: CGAffineTransform
        var isPlayable: Bool
    }

    let described: Description

    /// The track's ID in the file (stream index + 1).
    public var trackID: CMPersistentTrackID { described.trackID }
    /// `.video`, `.audio`, or the file's other kinds.
    public var mediaType: AVMediaType { described.mediaType }
    /// The encoded picture size, before ``preferredTransform`` (zero for audio).
    public var naturalSize: CGSize { described.naturalSize }
    /// Frames per second (the average over the track); 0 for audio.
    public var nominalFrameRate: Float { described.nominalFrameRate }
    /// When the track plays in the file's timeline.
    public var timeRange: CMTimeRange { described.timeRange }
    /// The format of the track's samples: one `CMFormatDescription` (codec, size, or sample rate and channels).
    public var formatDescriptions: [Any] { described.formatDescriptions }
    /// The average data rate in bits per second.
    public var estimatedDataRate: Float { described.estimatedDataRate }
    /// The display transform (the track matrix): 90° clockwise for a portrait recording.
    public var preferredTransform: CGAffineTransform { described.preferredTransform }
    /// Whether the track's samples can be read.
    public var isPlayable: Bool { described.isPlayable }
    /// Where the track's samples are: the file and its stream, read again by asset readers and exports. `nil` for
    /// a composition's tracks, whose samples come from their segments' source tracks.
    let source: Source?
    /// The asset the track belongs to (Apple's `asset`; held weakly, as Apple's).
    public internal(set) weak var asset: AVAsset?

    /// A track's samples in a file: the path and the stream, as libavformat described it.
    ///
    /// Threading: a value; `Sendable`.
    struct Source: Sendable {
        var path: String
        var stream: Demuxer.Stream
    }

    /// A track with every property given (compositions make theirs this way).
    init(
        trackID: CMPersistentTrackID, mediaType: AVMediaType, naturalSize: CGSize, nominalFrameRate: Float,
        timeRange: CMTimeRange, formatDescriptions: [Any], estimatedDataRate: Float,
        preferredTransform: CGAffineTransform, isPlayable: Bool, source: Source?
    ) {
        described = Description(
            trackID: trackID, mediaType: mediaType, naturalSize: naturalSize, nominalFrameRate: nominalFrameRate,
            timeRange: timeRange, formatDescriptions: formatDescriptions, estimatedDataRate: estimatedDataRate,
            preferredTransform: preferredTransform, isPlayable: isPlayable)
        self.source = source
        super.init()
    }

    convenience init(stream: Demuxer.Stream, fileDuration: CMTime, path: String) {
        let mediaType: AVMediaType =
            switch stream.mediaType {
            case .video: .video
            case .audio: .audio
            case .other: .metadata
            }
        let start = stream.startTime.isNumeric ? stream.startTime : .zero
        let duration = stream.duration.isNumeric ? stream.duration : fileDuration
        var rate = Float(stream.bitRate)
        if rate == 0, stream.sampleRate > 0, stream.codecName.hasPrefix("pcm_") {
            rate = Float(stream.sampleRate * stream.channelCount * Self.pcmBits(stream.codecName))
        }
        let t = stream.transform
        // Apple's naturalSize is the track header's size (`AVAssetWriterInput.naturalSize`), which may differ from
        // the coded size FFmpeg reports; the coded size where the file has no header to say (not a movie).
        var naturalSize = CGSize(width: CGFloat(stream.width), height: CGFloat(stream.height))
        if mediaType == .video, let sizes = TrackHeaderDisplaySize.sizes(inMovieAt: path), stream.index < sizes.count,
            sizes[stream.index].width > 0, sizes[stream.index].height > 0
        {
            naturalSize = CGSize(width: sizes[stream.index].width, height: sizes[stream.index].height)
        }
        self.init(
            trackID: CMPersistentTrackID(stream.index + 1), mediaType: mediaType,
            naturalSize: naturalSize,
            nominalFrameRate: stream.mediaType == .video ? Float(stream.frameRate) : 0,
            timeRange: CMTimeRange(start: start, duration: duration),
            formatDescriptions: Self.formatDescription(of: stream).map { [$0] } ?? [], estimatedDataRate: rate,
            preferredTransform: CGAffineTransform(
                a: CGFloat(t.a), b: CGFloat(t.b), c: CGFloat(t.c), d: CGFloat(t.d), tx: CGFloat(t.tx),
                ty: CGFloat(t.ty)),
            isPlayable: stream.mediaType != .other, source: Source(path: path, stream: stream))
    }

    private static func pcmBits(_ codecName: String) -> Int {
        if codecName.contains("64") { return 64 }
        if codecName.contains("32") { return 32 }
        if codecName.contains("24") { return 24 }
        if codecName.contains("16") { return 16 }
        return 8
    }

    private static func formatDescription(of stream: Demuxer.Stream) -> CMFormatDescription? {
        // The movie-file cameras' descriptions carry the codec configuration (the avcC/hvcC atom, the AAC magic
        // cookie), so a writer input with nil settings can take this as its source format hint.
        let described =
            stream.mediaType == .video
            ? try? DemuxerPacketSource.videoTrack(stream).get().formatDescription
            : stream.mediaType == .audio ? DemuxerPacketSource.audioTrack(stream)?.formatDescription : nil
        if let described { return described }
        switch stream.mediaType {
        case .video:
            let subtype: CMFormatDescription.MediaSubType =
                switch stream.codecName {
                case "h264": .h264
                case "hevc": .hevc
                case "mjpeg": .jpeg
                case "prores": .proRes422
                default: CMFormatDescription.MediaSubType(rawValue: stream.codecTag)
                }
            return try? CMFormatDescription(videoCodecType: subtype, width: stream.width, height: stream.height)
        case .audio:
            let formatID: AudioFormatID
            var flags: AudioFormatFlags = 0
            var bits: UInt32 = 0
            switch stream.codecName {
            case "aac": formatID = kAudioFormatMPEG4AAC
            case "alac": formatID = kAudioFormatAppleLossless
            case let name where name.hasPrefix("pcm_"):
                formatID = kAudioFormatLinearPCM
                bits = UInt32(pcmBits(name))
                flags |= name.contains("pcm_f") ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger
                if name.hasSuffix("be") { flags |= kAudioFormatFlagIsBigEndian }
                flags |= kAudioFormatFlagIsPacked
            default: formatID = stream.codecTag
            }
            let channels = UInt32(max(stream.channelCount, 0))
            let bytesPerFrame = bits * channels / 8
            let description = AudioStreamBasicDescription(
                mSampleRate: Float64(stream.sampleRate), mFormatID: formatID, mFormatFlags: flags,
                mBytesPerPacket: bytesPerFrame, mFramesPerPacket: formatID == kAudioFormatLinearPCM ? 1 : 0,
                mBytesPerFrame: bytesPerFrame, mChannelsPerFrame: channels, mBitsPerChannel: bits, mReserved: 0)
            return try? CMFormatDescription(audioStreamBasicDescription: description)
        case .other:
            return nil
        }
    }
}
