import CaptureGraph
import Foundation
import MediaCodecs
import Synchronization

/// Records a session's video and audio into a QuickTime movie (`.mov`; an MPEG-4 file when the URL ends in `.mp4`
/// or `.m4v`, which is ours): H.264 video (or another of
/// ``availableVideoCodecTypes``) and AAC audio, through an ``AVAssetWriter``.
///
/// A recording starts at the first video frame after ``startRecording(to:recordingDelegate:)`` (at the first
/// audio buffer when the output has no video connection); audio before it is left out. The track transform is the
/// video connection's `videoRotationAngle` when the recording starts.
///
/// Pause and resume leave the paused time out: the timestamps of what follows a resume are shifted back so the
/// file's timeline is continuous (the first video frame after the resume follows the last one before the pause).
///
/// Ends of a recording and what the delegate's `didFinishRecordingTo` gets:
/// - ``stopRecording()``: `error` nil.
/// - ``AVCaptureFileOutput/maxRecordedDuration``: `.maximumDurationReached`; the file holds every frame whose end
///   is within the limit, so it is at most one frame short of it.
/// - ``AVCaptureFileOutput/maxRecordedFileSize``: `.maximumFileSizeReached`. The finished file is never larger:
///   the writer checks each encoded packet against a bound of the finished file's size (the media plus what the
///   movie's index and headers can take for them, counted by the muxer) and writes nothing from the first packet
///   that would pass the limit on, so the file ends at the last whole frame that fits, within a frame or two of
///   the limit (97–99 % of it at 0.5 and 10 Mb/s, from 300 kB up, except where one frame is a large share of it:
///   x264's first frames at a high rate). Fragments are cut at a quarter of the limit at most, so the file on
///   disk follows the recording.
/// - ``AVCaptureFileOutput/minFreeDiskSpaceLimit``: `.diskFull`, checked before the start (too little: the recording
///   does not start) and at every sample: the file may grow until the volume would keep only the limit, the same
///   packet-exact way. Without a limit a recording keeps 1 MiB free, so a full disk is met before a write fails.
///   When the volume has no room for the finishing rewrite's copy (it needs the file's size again until its rename),
///   the complete fragmented movie is kept as it is: every sample in it, readable, not moved to fast start.
/// - The video or audio device of the recording fails (unplugged): `.deviceWasDisconnected` (or the session's
///   error, such as `.sessionWasInterrupted` when another application takes the device). With
///   ``survivesDisconnection`` (ours) an unplug leaves a gap instead, and the recording goes on in the same file
///   when the device is back.
/// - The session stops running: the recording is finished normally, `error` nil (our choice: the file is complete
///   and nothing went wrong with it; Apple documents no error for this case).
///
/// With every error above `AVErrorRecordingSuccessfullyFinishedKey` is true and the file is finalized. An existing
/// file gives `.fileAlreadyExists` (false), the file untouched; a recording that got no sample before it was
/// stopped gives `.noDataCaptured` (false) and leaves no file. `didFinishRecordingTo` comes for every request.
///
/// Failures leave no debris. A recording that fails before any media reached the file (the encoder refuses the
/// first frame, a full disk) leaves no file at the URL and nothing beside it (`AVErrorRecordingSuccessfullyFinishedKey`
/// false). One that fails later keeps what plays: when an encoder failed, the file is finished with everything
/// written before (true); when writing the file failed, it is cut back to its last complete fragment, readable
/// but unfinished (false).
///
/// Starting a recording while one is under way switches files: the old file gets every sample before the new
/// file's first video frame (a key frame, since it is the first of its file), the new file everything from it on;
/// the old file is finished once the new one has its first frame. No sample is lost or written twice.
///
/// One encoder with a publishing output (ours): when an ``AVCapturePublishingOutput`` in the session takes the same
/// camera's pictures (same rotation and mirroring) and this output's recording asks nothing of H.264 (the default
/// codec, no compression properties, the picture's size, no file output delegate), the recording shares its encoder:
/// the file gets the published stream's packets (its bit rate and key frames), starting at an IDR asked for at the
/// recording's start, and records on if the publishing output stops or leaves the session.
///
/// Crash safety: ``movieFragmentInterval`` (10 s by default) writes the movie as fragments, so a file cut short by
/// a crash is readable up to its last fragment; a normal end rewrites it as a conventional movie. Above about
/// 3.4 Mb/s fragments come sooner, each at most 4 MiB of media and one key frame interval (see
/// ``movieFragmentInterval``).
///
/// Threading: thread safe. Buffers are received on the capture thread and posted, without waiting, into a mailbox
/// drained by the output's own serial queue, where requests are handled too (in order with the buffers) and the
/// writer is fed. At most 8 video frames wait (more are dropped: the encoder is behind); audio gets 1024 slots and
/// is never dropped in practice. Recording delegates are called on an internal serial queue.
open class AVCaptureMovieFileOutput: AVCaptureFileOutput, @unchecked Sendable {
    private struct Settings: @unchecked Sendable {
        var movieFragmentInterval = CMTime(value: 10, timescale: 1)
        var metadata: [AVMetadataItem] = []
        var outputSettings: [ObjectIdentifier: [String: Any]] = [:]
        /// What each video connection's encoder takes, worked out when its settings are set (absent: H.264's).
        var encoderDemands: [ObjectIdentifier: VideoFormatDemand?] = [:]
        /// The codec each video connection records with, when one was set (absent: H.264).
        var codecs: [ObjectIdentifier: AVVideoCodecType] = [:]
    }

    /// H.264's input formats, the default codec's.
    private static let h264Demand = encoderDemand(for: .h264)

    private let settings = Mutex(Settings())

    public override init() { super.init() }

    // MARK: Settings

    /// How often a movie fragment is written while recording (crash safety), or `.invalid` for a movie written
    /// once at the end. Default 10 s. Read when a recording starts.
    ///
    /// The interval is the longest time between fragments: a fragment ends at the first video key frame after it,
    /// or earlier, at the first key frame once the fragment holds 4 MiB of media. The recording keeps a fragment in
    /// memory until it ends, so the cap bounds that memory at any bit rate (about 5 MB at 1080p30's 10 Mb/s, instead
    /// of 12.5 MB for 10 s); at 640x480's 1.5 Mb/s the 10 s interval alone decides.
    open var movieFragmentInterval: CMTime {
        get { settings.withLock { $0.movieFragmentInterval } }
        set { settings.withLock { $0.movieFragmentInterval = newValue } }
    }

    /// Movie metadata (location, title, …) written into the files. Settable while recording: the file being recorded
    /// gets the new items when it is finished (its creation date stays the moment it started).
    open var metadata: [AVMetadataItem]? {
        get { settings.withLock { $0.metadata } }
        set {
            settings.withLock { $0.metadata = newValue ?? [] }
            metadataDidChange()
        }
    }

    /// The codecs video can be recorded with; the first is the default.
    open var availableVideoCodecTypes: [AVVideoCodecType] { [.h264, .hevc, .jpeg, .proRes422] }

    /// The keys ``setOutputSettings(_:for:)`` takes for `connection`'s media. Sound: AAC (the default), Apple
    /// Lossless or linear PCM (`kAudioFormatLinearPCM`, 16-bit integers unless `AVLinearPCMBitDepthKey` and
    /// `AVLinearPCMIsFloatKey` say otherwise), which records the source's samples bit for bit.
    open func supportedOutputSettingsKeys(for connection: AVCaptureConnection) -> [String] {
        if Self.isVideo(connection) {
            return [AVVideoCodecKey, AVVideoCompressionPropertiesKey, AVVideoEncoderSpecificationKey]
        }
        return [AVFormatIDKey, AVSampleRateKey, AVNumberOfChannelsKey, AVEncoderBitRateKey] + Self.linearPCMKeys
    }

    /// The keys that shape linear PCM (`kAudioFormatLinearPCM` in ``setOutputSettings(_:for:)``), as the audio
    /// file output and the writer take them.
    private static let linearPCMKeys = [
        AVLinearPCMBitDepthKey, AVLinearPCMIsFloatKey, AVLinearPCMIsBigEndianKey, AVLinearPCMIsNonInterleaved,
    ]

    /// The settings `connection`'s media is recorded with: what was set, completed with the defaults (H.264 at the
    /// device's size, about 0.1 bit per pixel per frame at 30 fps, a key frame a second; AAC at 64 kbit/s per
    /// channel at the device's rate).
    open func outputSettings(for connection: AVCaptureConnection) -> [String: Any] {
        let stored = settings.withLock { $0.outputSettings[ObjectIdentifier(connection)] } ?? [:]
        let format = connection.inputPorts.first?.formatDescription
        if Self.isVideo(connection) {
            let codec = Self.codec(stored[AVVideoCodecKey]) ?? .h264
            let width = Int(format?.dimensions.width ?? 0)
            let height = Int(format?.dimensions.height ?? 0)
            var result: [String: Any] = [AVVideoCodecKey: codec, AVVideoWidthKey: width, AVVideoHeightKey: height]
            // Hardware or software: the writer that records the file chooses by it (VideoEncoderSelection).
            if let specification = stored[AVVideoEncoderSpecificationKey] {
                result[AVVideoEncoderSpecificationKey] = specification
            }
            if let properties = stored[AVVideoCompressionPropertiesKey] {
                result[AVVideoCompressionPropertiesKey] = properties
            } else if codec == .h264 || codec == .hevc {
                let bitsPerPixel = codec == .hevc ? 0.06 : 0.1
                result[AVVideoCompressionPropertiesKey] =
                    [
                        AVVideoAverageBitRateKey: max(100_000, Int(Double(width * height) * 30 * bitsPerPixel)),
                        AVVideoMaxKeyFrameIntervalKey: 30, AVVideoAllowFrameReorderingKey: false,
                    ] as [String: Any]
            }
            return result
        }
        let description = format?.audioStreamBasicDescription
        let channels = stored[AVNumberOfChannelsKey] as? Int ?? Int(description?.mChannelsPerFrame ?? 2)
        var result: [String: Any] = [
            AVFormatIDKey: stored[AVFormatIDKey] ?? kAudioFormatMPEG4AAC,
            AVNumberOfChannelsKey: channels,
            AVSampleRateKey: stored[AVSampleRateKey] ?? Int(description?.mSampleRate ?? 48_000),
        ]
        let formatID = (result[AVFormatIDKey] as? UInt32) ?? kAudioFormatMPEG4AAC
        if formatID == kAudioFormatMPEG4AAC {
            result[AVEncoderBitRateKey] = stored[AVEncoderBitRateKey] ?? 64_000 * max(1, channels)
        }
        if formatID == kAudioFormatLinearPCM {
            for key in Self.linearPCMKeys { result[key] = stored[key] }
            result[AVLinearPCMBitDepthKey] = stored[AVLinearPCMBitDepthKey] ?? 16
        }
        return result
    }

    /// Sets the settings of `connection`'s media; nil restores the defaults. Keys must be among
    /// ``supportedOutputSettingsKeys(for:)`` and a video codec among ``availableVideoCodecTypes``; otherwise it
    /// traps, as Apple raises. Read when a recording starts.
    open func setOutputSettings(_ outputSettings: [String: Any]?, for connection: AVCaptureConnection) {
        if let outputSettings {
            let supported = Set(supportedOutputSettingsKeys(for: connection))
            for key in outputSettings.keys {
                precondition(
                    supported.contains(key),
                    "AVCaptureMovieFileOutput: output settings key \(key) is not supported for this connection; use"
                        + " \(supported.sorted()) (Apple raises NSInvalidArgumentException)")
            }
            if let codec = outputSettings[AVVideoCodecKey] {
                precondition(
                    Self.codec(codec).map(availableVideoCodecTypes.contains) ?? false,
                    "AVCaptureMovieFileOutput: codec \(codec) is not one of availableVideoCodecTypes")
            }
        }
        let codec = Self.codec(outputSettings?[AVVideoCodecKey]) ?? .h264
        let demand = Self.encoderDemand(for: codec)
        settings.withLock { settings in
            settings.outputSettings[ObjectIdentifier(connection)] = outputSettings
            settings.encoderDemands[ObjectIdentifier(connection)] = demand
            settings.codecs[ObjectIdentifier(connection)] = codec
        }
        demandsChanged()
    }

    /// The pixel formats `codec`'s encoder takes as they are (nil: the encoder converts whatever comes).
    private static func encoderDemand(for codec: AVVideoCodecType) -> VideoFormatDemand? {
        let formats: [OSType] =
            switch codec {
            case .h264: VideoEncoder.nativePixelFormats(for: .h264)
            case .hevc: VideoEncoder.nativePixelFormats(for: .hevc)
            default: []
            }
        return formats.isEmpty ? nil : VideoFormatDemand(pixelFormats: formats, evenDimensions: true)
    }

    /// A camera's frames are written as they come, neither decoded nor encoded, when the file asks for what the
    /// camera sends: JPEG frames recorded as Motion JPEG, and H.264 frames recorded as H.264 (the default codec) with
    /// no compression properties and no other size asked for. The recording then starts at a key frame.
    override func writesAsItComes(_ format: CMFormatDescription, for connection: AVCaptureConnection) -> Bool {
        let (codec, stored) = settings.withLock {
            ($0.codecs[ObjectIdentifier(connection)] ?? .h264, $0.outputSettings[ObjectIdentifier(connection)])
        }
        switch format.mediaSubType {
        case .jpeg: return codec == .jpeg
        case .h264: return codec == .h264 && Self.asksNothingOf(format, stored)
        default: return false
        }
    }

    /// A publishing output's H.264 encoder, when one in the session takes the same camera's pictures and this
    /// output's settings ask nothing of H.264 (the default codec, no compression properties, the picture's own
    /// size) and the camera's frames are not already taken as they come: one encoder then serves the network and
    /// the file, and the file gets the publishing output's stream (its bit rate and key frames).
    override func sharableVideoEncoder() -> VideoEncoderSharing? {
        guard let connection = connection(with: .video), connection.isEnabled, connection.isActive,
            let port = connection.inputPorts.first
        else { return nil }
        let (codec, stored) = settings.withLock {
            ($0.codecs[ObjectIdentifier(connection)] ?? .h264, $0.outputSettings[ObjectIdentifier(connection)])
        }
        guard codec == .h264, stored?[AVVideoCompressionPropertiesKey] == nil, stored?[AVVideoWidthKey] == nil,
            stored?[AVVideoHeightKey] == nil
        else { return nil }
        if let format = port.formatDescription, writesAsItComes(format, for: connection) { return nil }
        for case let publisher as AVCapturePublishingOutput in session?.outputs ?? [] {
            guard let published = publisher.connection(with: .video), published.isEnabled,
                published.inputPorts.first === port, published.isVideoMirrored == connection.isVideoMirrored,
                published.videoRotationAngle == connection.videoRotationAngle
            else { continue }
            return VideoEncoderSharing(encoder: publisher.sharedVideoEncoder, connection: connection)
        }
        return nil
    }

    /// Whether `settings` ask nothing the camera's compressed `format` does not already have: no compression
    /// properties (bit rate, key frame interval, profile) and the picture's own size if any.
    private static func asksNothingOf(_ format: CMFormatDescription, _ settings: [String: Any]?) -> Bool {
        guard let settings else { return true }
        if settings[AVVideoCompressionPropertiesKey] != nil { return false }
        let dimensions = format.dimensions
        if let width = settings[AVVideoWidthKey] as? Int, width != Int(dimensions.width) { return false }
        if let height = settings[AVVideoHeightKey] as? Int, height != Int(dimensions.height) { return false }
        return true
    }

    override func encoderDemand(for connection: AVCaptureConnection) -> VideoFormatDemand? {
        settings.withLock { $0.encoderDemands[ObjectIdentifier(connection)] } ?? Self.h264Demand
    }

    private static func codec(_ value: Any?) -> AVVideoCodecType? {
        if let codec = value as? AVVideoCodecType { return codec }
        if let string = value as? String { return AVVideoCodecType(rawValue: string) }
        return nil
    }

    // MARK: What the recording machinery asks

    /// QuickTime, or MPEG-4 when the URL ends in `.mp4` or `.m4v` (ours: Apple's output always writes QuickTime).
    override func recordingFileType(for url: URL) -> AVFileType {
        switch url.pathExtension.lowercased() {
        case "mp4": .mp4
        case "m4v": .m4v
        default: .mov
        }
    }

    /// ``outputSettings(for:)``, except that a sound's sample rate and channel count are present only when
    /// ``setOutputSettings(_:for:)`` asked for them: the recording engine takes the source's from its first buffer
    /// otherwise (a port's description may not be what the device delivers), and converts the sound when asked.
    override func recordingSettings(for connection: AVCaptureConnection, fileType: AVFileType) -> [String: Any] {
        var result = outputSettings(for: connection)
        guard !Self.isVideo(connection) else { return result }
        let stored = settings.withLock { $0.outputSettings[ObjectIdentifier(connection)] } ?? [:]
        for key in [AVSampleRateKey, AVNumberOfChannelsKey] where stored[key] == nil { result[key] = nil }
        return result
    }

    override var recordingFragmentIntervalAndMetadata: (CMTime, [AVMetadataItem]) {
        settings.withLock { ($0.movieFragmentInterval, $0.metadata) }
    }

    // MARK: Graph hooks

    override package func accepts(_ mediaType: AVMediaType) -> Bool { mediaType == .video || mediaType == .audio }
}
