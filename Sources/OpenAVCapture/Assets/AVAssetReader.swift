// AVAssetReader: an asset's samples read back, decoded or as stored, through its outputs.

import Foundation
import MediaCodecs
import OpenCoreMedia
import Synchronization

/// Reads an asset's media samples through outputs (``AVAssetReaderTrackOutput``,
/// ``AVAssetReaderAudioMixOutput``), decoded to the format the output settings ask or, with nil settings, as the
/// file stores them.
///
/// The life cycle is Apple's: ``init(asset:)``, set ``timeRange``, ``add(_:)`` outputs, ``startReading()``, then
/// call each output's ``AVAssetReaderOutput/copyNextSampleBuffer()`` until it returns nil, and look at ``status``:
/// `.completed` once every output has given its last sample, `.failed` (with ``error``) when a sample could not be
/// read or decoded, `.cancelled` after ``cancelReading()``. Misuse that Apple answers with an exception (adding an
/// output after ``startReading()``, a track of another asset, starting twice, copying before starting) stops the
/// program with a message naming the rule.
///
/// Samples carry the file's timestamps, exactly as the writer stored them. Each output reads the file with its own
/// libavformat demuxer, so (unlike Apple's) outputs need not be read in step with one another.
///
/// Threading: thread safe (`@unchecked Sendable`): a mutex guards the state; each output guards its own reading,
/// and outputs may be read from different threads at once.
open class AVAssetReader: NSObject, @unchecked Sendable {
    /// Where the reader is in its life cycle; Apple's raw values.
    ///
    /// Threading: a value; `Sendable`.
    public enum Status: Int, Sendable, CustomStringConvertible {
        case unknown = 0
        case reading = 1
        case completed = 2
        case failed = 3
        case cancelled = 4

        /// The status's name, as in messages.
        public var description: String {
            switch self {
            case .unknown: "unknown"
            case .reading: "reading"
            case .completed: "completed"
            case .failed: "failed"
            case .cancelled: "cancelled"
            }
        }
    }

    private struct State {
        var status: Status = .unknown
        var error: AVError?
        var timeRange = CMTimeRange(start: .zero, duration: .positiveInfinity)
        var outputs: [AVAssetReaderOutput] = []
    }

    /// The asset read.
    public let asset: AVAsset
    private let state = Mutex(State())

    /// A reader of `asset`.
    ///
    /// - Throws: the ``AVError`` that says why the asset's file cannot be read.
    public init(asset: AVAsset) throws {
        if asset.path != nil { _ = try asset.loadedContents() }
        self.asset = asset
        super.init()
    }

    /// The reader's status.
    public var status: Status { state.withLock { $0.status } }
    /// Why reading failed, when ``status`` is `.failed`.
    public var error: (any Error)? { state.withLock { $0.error } }
    /// The outputs added.
    public var outputs: [AVAssetReaderOutput] { state.withLock { $0.outputs } }

    /// The part of the asset read; from zero to the end by default. Set it before ``startReading()``.
    public var timeRange: CMTimeRange {
        get { state.withLock { $0.timeRange } }
        set {
            precondition(
                newValue.start.isNumeric && newValue.start >= .zero && newValue.duration >= .zero,
                "*** -[AVAssetReader setTimeRange:] the time range must start at a numeric time ≥ 0 and last ≥ 0")
            state.withLock { state in
                precondition(
                    state.status == .unknown,
                    "*** -[AVAssetReader setTimeRange:] cannot be called after reading has started")
                state.timeRange = newValue
            }
        }
    }

    /// Whether `output` can be added: not yet reading, and its tracks belong to this reader's asset.
    public func canAdd(_ output: AVAssetReaderOutput) -> Bool {
        state.withLock { state in
            state.status == .unknown && output.reader == nil
                && output.tracks.allSatisfy { $0.asset === asset || asset.tracks.contains($0) }
        }
    }

    /// Adds `output`. Traps where ``canAdd(_:)`` is false (Apple raises `NSInvalidArgumentException`).
    public func add(_ output: AVAssetReaderOutput) {
        precondition(
            canAdd(output),
            "*** -[AVAssetReader addOutput:] cannot add an output after reading has started, an output already "
                + "added to a reader, or one whose tracks belong to another asset")
        state.withLock { $0.outputs.append(output) }
        output.reader = self
    }

    /// Prepares every output to read; false (``status`` `.failed`, ``error`` says why) when one cannot (a codec
    /// without a decoder, the file gone). Traps when called twice.
    public func startReading() -> Bool {
        let (outputs, range) = state.withLock { state in
            precondition(
                state.status == .unknown,
                "*** -[AVAssetReader startReading] cannot be called again after reading"
                    + " has already started")
            state.status = .reading
            return (state.outputs, state.timeRange)
        }
        do {
            for output in outputs { try output.prepare(timeRange: range) }
        } catch {
            fail(error)
            return false
        }
        return true
    }

    /// Stops reading: outputs give nothing more and ``status`` becomes `.cancelled`.
    public func cancelReading() {
        let outputs = state.withLock { state -> [AVAssetReaderOutput] in
            if state.status == .unknown || state.status == .reading { state.status = .cancelled }
            return state.outputs
        }
        for output in outputs { output.close() }
    }

    func fail(_ error: AVError) {
        let outputs = state.withLock { state -> [AVAssetReaderOutput] in
            guard state.status == .reading else { return [] }
            state.status = .failed
            state.error = error
            return state.outputs
        }
        for output in outputs { output.close() }
    }

    /// Called by an output when it gave its last sample: the reader completes when all have.
    func outputDidFinish() {
        let outputs = outputs
        guard outputs.allSatisfy(\.isFinished) else { return }
        state.withLock { state in
            if state.status == .reading { state.status = .completed }
        }
    }

    var isReading: Bool { status == .reading }
}

/// What an asset reader gives samples through. Use ``AVAssetReaderTrackOutput`` or ``AVAssetReaderAudioMixOutput``.
///
/// Threading: thread safe (`@unchecked Sendable`); a lock serializes ``copyNextSampleBuffer()``.
open class AVAssetReaderOutput: NSObject, @unchecked Sendable {
    /// The media type of the samples given.
    public let mediaType: AVMediaType
    /// Whether samples are copies the caller may modify (Apple's default true). Ours are always the decoder's own
    /// buffers, not shared with anything else, so the setting changes nothing.
    public var alwaysCopiesSampleData: Bool {
        get { lock.withLock { copies } }
        set { lock.withLock { copies = newValue } }
    }
    /// Whether ``reset(forReadingTimeRanges:)`` may be used. Not supported here: always false.
    public var supportsRandomAccess: Bool {
        get { false }
        set {}
    }

    private let lock = NSLock()
    private var copies = true
    private var producer: (any SampleProducer)?
    private(set) var isFinished = false
    weak var reader: AVAssetReader?

    init(mediaType: AVMediaType) {
        self.mediaType = mediaType
        super.init()
    }

    /// The tracks the output reads (checked against the reader's asset).
    var tracks: [AVAssetTrack] { [] }

    /// Makes what gives the samples; subclasses override.
    func makeProducer(timeRange: CMTimeRange) throws(AVError) -> any SampleProducer {
        preconditionFailure(
            "AVAssetReaderOutput is abstract; use AVAssetReaderTrackOutput or AVAssetReaderAudioMixOutput")
    }

    func prepare(timeRange: CMTimeRange) throws(AVError) {
        let made = try makeProducer(timeRange: timeRange)
        lock.withLock { producer = made }
    }

    func close() {
        lock.withLock { producer = nil }
    }

    /// The next sample, or nil at the end, after a failure (the reader's ``AVAssetReader/status`` is `.failed`) or
    /// a cancellation. Traps when the output was not added to a reader that started reading (Apple raises).
    public func copyNextSampleBuffer() -> CMSampleBuffer? {
        guard let reader, reader.status != .unknown else {
            preconditionFailure(
                "*** -[AVAssetReaderOutput copyNextSampleBuffer] cannot copy next sample buffer before adding this "
                    + "output to an instance of AVAssetReader and calling -startReading on that asset reader")
        }
        guard reader.isReading else { return nil }
        let result: Result<CMSampleBuffer?, AVError> = lock.withLock {
            guard let producer, !isFinished else { return .success(nil) }
            do throws(AVError) {
                let sample = try producer.next()
                if sample == nil {
                    isFinished = true
                    self.producer = nil
                }
                return .success(sample)
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let sample):
            if sample == nil { reader.outputDidFinish() }
            return sample
        case .failure(let error):
            reader.fail(error)
            return nil
        }
    }

    /// Apple's random access; not supported (``supportsRandomAccess`` is false), so it traps as Apple's does then.
    public func reset(forReadingTimeRanges timeRanges: [NSValue]) {
        preconditionFailure(
            "*** -[AVAssetReaderOutput resetForReadingTimeRanges:] cannot be called without supportsRandomAccess "
                + "(not supported here)")
    }

    /// Apple's promise that ``reset(forReadingTimeRanges:)`` will not be called; nothing to do here.
    public func markConfigurationAsFinal() {}
}

/// Something that gives sample buffers one at a time: a track of a file, a composition's track, a mix.
protocol SampleProducer: AnyObject {
    /// The next sample, or nil after the last.
    func next() throws(AVError) -> CMSampleBuffer?
}

extension TrackSampleReader: SampleProducer {}

/// Reads one track's samples, decoded per ``outputSettings`` or, when they are nil, as stored.
///
/// Video settings: `kCVPixelBufferPixelFormatTypeKey` (one format, or an array whose first is used; NV12
/// `'420v'` when absent), `kCVPixelBufferWidthKey` and `kCVPixelBufferHeightKey` to scale. Audio settings:
/// `AVFormatIDKey` `kAudioFormatLinearPCM`, `AVSampleRateKey`, `AVNumberOfChannelsKey` (the track's when absent),
/// `AVLinearPCMBitDepthKey` (16 or 32; 16 when absent), `AVLinearPCMIsFloatKey` (32-bit only),
/// `AVLinearPCMIsBigEndianKey` and `AVLinearPCMIsNonInterleaved` (false only).
///
/// Threading: thread safe, as ``AVAssetReaderOutput``.
open class AVAssetReaderTrackOutput: AVAssetReaderOutput, @unchecked Sendable {
    /// The track read.
    public let track: AVAssetTrack
    /// The settings the samples are decoded to; nil gives the samples as stored.
    public let outputSettings: [String: Any]?
    /// How audio is stretched when a composition scales its time (see ``AVAudioTimePitchAlgorithm``).
    public var audioTimePitchAlgorithm: AVAudioTimePitchAlgorithm = .spectral
    let decoding: TrackSampleReader.Decoding

    /// An output reading `track`; traps for settings Apple refuses (an encoder's keys, a compressed audio format).
    public init(track: AVAssetTrack, outputSettings: [String: Any]?) {
        self.track = track
        self.outputSettings = outputSettings
        decoding = ReaderOutputSettings.decoding(
            for: track, settings: outputSettings, owner: "AVAssetReaderTrackOutput")
        super.init(mediaType: track.mediaType)
    }

    override var tracks: [AVAssetTrack] { [track] }

    override func makeProducer(timeRange: CMTimeRange) throws(AVError) -> any SampleProducer {
        try track.makeSampleProducer(timeRange: timeRange, decoding: decoding, pitch: audioTimePitchAlgorithm)
    }
}

extension AVAssetTrack {
    /// What reads this track's samples within `timeRange`: the file's stream, or, for a composition's track, its
    /// edits.
    func makeSampleProducer(
        timeRange: CMTimeRange, decoding: TrackSampleReader.Decoding, pitch: AVAudioTimePitchAlgorithm
    ) throws(AVError) -> any SampleProducer {
        if let composed = self as? any AVCompositionTrackReading {
            return try composed.makeComposedProducer(timeRange: timeRange, decoding: decoding, pitch: pitch)
        }
        guard let source else {
            throw AVError(.operationNotSupportedForAsset, "track \(trackID) has no samples to read")
        }
        return try TrackSampleReader(source: source, timeRange: timeRange, decoding: decoding)
    }
}

/// Tracks whose samples are made from other tracks' (a composition's).
protocol AVCompositionTrackReading {
    func makeComposedProducer(
        timeRange: CMTimeRange, decoding: TrackSampleReader.Decoding, pitch: AVAudioTimePitchAlgorithm
    ) throws(AVError) -> any SampleProducer
}

/// Reads the settings of reader outputs, trapping as Apple raises for settings it refuses.
enum ReaderOutputSettings {
    static let videoKeys: Set<String> = [
        kCVPixelBufferPixelFormatTypeKey as String, kCVPixelBufferWidthKey as String,
        kCVPixelBufferHeightKey as String,
    ]

    static func decoding(
        for track: AVAssetTrack, settings: [String: Any]?, owner: String
    )
        -> TrackSampleReader.Decoding
    {
        guard let settings else { return .passthrough }
        switch track.mediaType {
        case .video: return video(settings, owner: owner)
        case .audio: return .audio(audio(settings, track: track, owner: owner))
        default:
            preconditionFailure("\(owner): media type \(track.mediaType.rawValue) can only be read with nil settings")
        }
    }

    static func video(_ settings: [String: Any], owner: String) -> TrackSampleReader.Decoding {
        precondition(
            settings[AVVideoCodecKey] == nil,
            "*** \(owner): video output settings may not contain AVVideoCodecKey (the reader decodes; it does not "
                + "encode)")
        requireKnownSettingKeys(settings, videoKeys, owner: owner)
        var format = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
        if let raw = settings[kCVPixelBufferPixelFormatTypeKey as String] {
            let first = (raw as? [Any])?.first ?? raw
            guard let value = integerSetting(first) else {
                preconditionFailure("*** \(owner): kCVPixelBufferPixelFormatTypeKey must be a pixel format, not \(raw)")
            }
            format = OSType(value)
        }
        precondition(
            PixelBufferConverter.supportedPixelFormats.contains(format),
            "*** \(owner): pixel format \(format) is not one this reader decodes to; use "
                + PixelBufferConverter.supportedPixelFormats.map { String($0) }.joined(separator: ", "))
        let width = integerSetting(settings[kCVPixelBufferWidthKey as String])
        let height = integerSetting(settings[kCVPixelBufferHeightKey as String])
        return .video(pixelFormat: format, width: width, height: height)
    }

    static func audio(_ settings: [String: Any], track: AVAssetTrack?, owner: String) -> AudioStreamBasicDescription {
        requireKnownSettingKeys(
            settings,
            [
                AVFormatIDKey, AVSampleRateKey, AVNumberOfChannelsKey, AVLinearPCMBitDepthKey, AVLinearPCMIsFloatKey,
                AVLinearPCMIsBigEndianKey, AVLinearPCMIsNonInterleaved, AVChannelLayoutKey,
            ], owner: owner)
        if let format = settings[AVFormatIDKey] {
            precondition(
                integerSetting(format) == Int(kAudioFormatLinearPCM),
                "*** \(owner): audio output settings must use AVFormatIDKey kAudioFormatLinearPCM (readers decode)")
        }
        precondition(
            boolSetting(settings[AVLinearPCMIsBigEndianKey]) != true
                && boolSetting(settings[AVLinearPCMIsNonInterleaved]) != true,
            "*** \(owner): big-endian and non-interleaved PCM are not supported; read little-endian interleaved PCM")
        let bits = integerSetting(settings[AVLinearPCMBitDepthKey]) ?? 16
        let isFloat = boolSetting(settings[AVLinearPCMIsFloatKey]) ?? false
        precondition(
            (bits == 16 && !isFloat) || bits == 32,
            "*** \(owner): AVLinearPCMBitDepthKey must be 16 (integer) or 32 (integer or float), not \(bits)")
        let askedRate = doubleSetting(settings[AVSampleRateKey])
        let askedChannels = integerSetting(settings[AVNumberOfChannelsKey])
        // Only what the caller asked for traps. The track's own rate and channel count come from the file, which
        // may claim anything (a fuzzed AAC track claimed 42 channels): reading such a track fails with an error
        // when it starts (TrackSampleReader checks the stream).
        precondition(
            (askedRate.map { (8_000...384_000).contains($0) } ?? true)
                && (askedChannels.map { (1...8).contains($0) } ?? true),
            "*** \(owner): the sample rate must be 8 to 384 kHz and the channels 1 to 8")
        let trackFormat = (track?.formatDescriptions.first as? CMFormatDescription)?.audioStreamBasicDescription
        let rate = askedRate ?? trackFormat?.mSampleRate ?? 48_000
        let channels = askedChannels ?? Int(trackFormat?.mChannelsPerFrame ?? 2)
        return .linearPCM(
            sampleRate: rate, channels: UInt32(channels), bitsPerChannel: UInt32(bits), isFloat: isFloat)
    }
}
