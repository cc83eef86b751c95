// AVAssetWriterInput: one track of an AVAssetWriter, with back-pressure.

import Dispatch
import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// One track of an ``AVAssetWriter``: the buffers you append to it are encoded with its ``outputSettings`` on the
/// writer's queue.
///
/// Output settings are read and checked in the initializer (see ``init(mediaType:outputSettings:sourceFormatHint:)``).
/// Video inputs take NV12 or I420 pixel buffers of the settings' size (other formats supported by the encoder's
/// converter also work; the pixel format is fixed at `startWriting()` from the pixel buffer adaptor's attributes,
/// the source format hint, or `'420v'`). Audio inputs take interleaved Int16, Int32 or Float32 PCM; a sample rate or
/// channel count other than the settings' is converted with libswresample (mono copied to both sides, stereo
/// averaged to mono), and what the resampler holds is written when the input is finished.
///
/// Back-pressure: ``isReadyForMoreMediaData`` is false while more than a few appended buffers (3, or 8 when
/// ``expectsMediaDataInRealTime``) wait on the writer's queue. Appending anyway is allowed, as on Apple's
/// platforms, but memory grows.
///
/// Threading: thread safe (`@unchecked Sendable`); append from one thread at a time per input so the order is
/// yours. Key-value notifications of ``isReadyForMoreMediaData`` are delivered on the thread that changed it: the
/// appending thread or the writer's queue.
open class AVAssetWriterInput: NSObject, KeyValueObservable, @unchecked Sendable {
    /// The input's key-value observers (``isReadyForMoreMediaData``).
    public let keyValueObservers = KeyValueObserverRegistry()
    /// The input's media type, `.video` or `.audio`.
    open var mediaType: AVMediaType { storedMediaType }
    private let storedMediaType: AVMediaType
    /// The settings the input encodes with, as given.
    open var outputSettings: [String: Any]? { storedOutputSettings }
    private let storedOutputSettings: [String: Any]?
    /// The format of the buffers to come, if given.
    open var sourceFormatHint: CMFormatDescription? { storedSourceFormatHint }
    private let storedSourceFormatHint: CMFormatDescription?

    /// The checked settings.
    let settings: WriterTrackSettings
    private let state = Mutex<State>(State())

    private struct State {
        weak var writer: AVAssetWriter?
        var trackIndex = -1
        var isAttached = false
        /// Set by a movie file output with a size limit: rate control starts nearly empty.
        var keepsFirstSecondToAverageRate = false
        var expectsMediaDataInRealTime = false
        var transform = CGAffineTransform.identity
        var naturalSize = CGSize.zero
        var metadata: [AVMetadataItem] = []
        var sourceSize: (width: Int, height: Int)?
        var pixelFormat: OSType?
        var pending = 0
        var isFinished = false
        var isReady = false
        var request: (queue: DispatchQueue, block: @Sendable () -> Void)?
        var isRequestScheduled = false
    }

    /// An input that encodes `mediaType` buffers with `outputSettings`.
    ///
    /// Video settings: `AVVideoCodecKey` (`.h264`, `.hevc`, `.jpeg`, `.proRes422`), `AVVideoWidthKey`,
    /// `AVVideoHeightKey`, and `AVVideoCompressionPropertiesKey` with `AVVideoAverageBitRateKey`,
    /// `AVVideoMaxKeyFrameIntervalKey`, `AVVideoMaxKeyFrameIntervalDurationKey`, `AVVideoExpectedSourceFrameRateKey`
    /// (default 30), `AVVideoQualityKey` (JPEG), `AVVideoAllowFrameReorderingKey` (accepted; frames are never
    /// reordered) and `AVVideoProfileLevelKey` (H.264 High, HEVC Main). Audio settings: `AVFormatIDKey`
    /// (`kAudioFormatMPEG4AAC`, `kAudioFormatAppleLossless`, `kAudioFormatLinearPCM`), `AVSampleRateKey`,
    /// `AVNumberOfChannelsKey` (both from `sourceFormatHint` when absent), `AVEncoderBitRateKey` (AAC), and for
    /// linear PCM `AVLinearPCMBitDepthKey`, `AVLinearPCMIsFloatKey`, `AVLinearPCMIsBigEndianKey`,
    /// `AVLinearPCMIsNonInterleaved` (false).
    ///
    /// `nil` settings write compressed sample buffers as they are (passthrough, e.g. from an asset reader's
    /// output with nil settings); they need `sourceFormatHint`, the samples' format, since the file's track is
    /// made at `startWriting()`. An unknown key, a key that does not apply, a value out of range, or nil settings
    /// without a hint stop the program with a message naming it, as Apple raises `NSInvalidArgumentException`.
    public init(mediaType: AVMediaType, outputSettings: [String: Any]?, sourceFormatHint: CMFormatDescription? = nil) {
        self.storedMediaType = mediaType
        self.storedOutputSettings = outputSettings
        self.storedSourceFormatHint = sourceFormatHint
        self.settings = WriterTrackSettings.read(mediaType: mediaType, settings: outputSettings, hint: sourceFormatHint)
        super.init()
    }

    // MARK: Properties

    /// Whether the buffers come from a live source: the input then tolerates more buffers in flight before it
    /// reports not ready. Set it before the writer starts.
    open var expectsMediaDataInRealTime: Bool {
        get { state.withLock { $0.expectsMediaDataInRealTime } }
        set { setBeforeWriting("expectsMediaDataInRealTime") { $0.expectsMediaDataInRealTime = newValue } }
    }

    /// The track's display matrix (90° clockwise for a portrait recording from a landscape sensor). Set it before
    /// the writer starts.
    open var transform: CGAffineTransform {
        get { state.withLock { $0.transform } }
        set { setBeforeWriting("transform") { $0.transform = newValue } }
    }

    /// The size the track's pictures are shown at, before `transform`; `.zero` (the default, as Apple's) shows
    /// them at their encoded size. Set it before the writer starts. A video track's header (`tkhd` width and height)
    /// carries it, independently of the encoded size: players scale the pictures to it (FFmpeg reads the difference
    /// as the sample aspect ratio). Audio tracks have no display size.
    open var naturalSize: CGSize {
        get { state.withLock { $0.naturalSize } }
        set { setBeforeWriting("naturalSize") { $0.naturalSize = newValue } }
    }

    /// Track-level metadata. The title (common key title, `udta/tnam`) is written as the track's name (`udta`/`name`)
    /// and the common key language (ISO 639-2) in its media header; other items are kept but not written (see
    /// `trackTags`).
    open var metadata: [AVMetadataItem] {
        get { state.withLock { $0.metadata } }
        set { setBeforeWriting("metadata") { $0.metadata = newValue } }
    }

    /// Whether the input takes another buffer without queueing up work: the writer is writing, the input is not
    /// finished and few buffers are pending. Key-value observable.
    open var isReadyForMoreMediaData: Bool { state.withLock { $0.isReady } }

    /// Buffers appended and not yet encoded (the file outputs bound it: a device faster than the encoder must not
    /// grow memory without end).
    var pendingBufferCount: Int { state.withLock { $0.pending } }

    private func setBeforeWriting(_ name: String, _ change: (inout State) -> Void) {
        let status = state.withLock { $0.writer?.status } ?? .unknown
        precondition(
            status == .unknown,
            "AVAssetWriterInput.\(name) cannot be set after the writer started (status is \(status))")
        state.withLock { change(&$0) }
    }

    // MARK: Appending

    /// Appends a sample buffer: a video frame (its image buffer and presentation time) or a buffer of PCM audio.
    ///
    /// - Returns: `false` when the writer is not writing (it failed or was cancelled: see its `error`), else
    ///   `true`; encoding happens later on the writer's queue, and its errors fail the writer.
    /// Traps when the writer has not started a session or the input was marked finished, as Apple raises.
    @discardableResult
    open func append(_ sampleBuffer: CMSampleBuffer) -> Bool {
        switch settings {
        case .video:
            guard let image = sampleBuffer.imageBuffer else {
                preconditionFailure("AVAssetWriterInput.append(_:): a video input needs sample buffers with an image")
            }
            return appendPixelBuffer(image, at: sampleBuffer.presentationTimeStamp, caller: "append(_:)")
        case .audio:
            guard let (writer, index) = admit(caller: "append(_:)") else { return false }
            writer.perform { [self] pipeline throws(MediaCodecsError) in
                defer { didProcess() }
                try pipeline.appendAudio(sampleBuffer, track: index)
            }
            return true
        case .passthrough:
            precondition(
                sampleBuffer.dataBuffer != nil,
                "AVAssetWriterInput.append(_:): an input with nil output settings takes compressed sample buffers")
            guard let (writer, index) = admit(caller: "append(_:)") else { return false }
            writer.perform { [self] pipeline throws(MediaCodecsError) in
                defer { didProcess() }
                try pipeline.appendCompressed(sampleBuffer, track: index)
            }
            return true
        }
    }

    /// A compressed frame in the codec the input encodes to (a camera's JPEG for a Motion JPEG track), written as
    /// it is: neither decoded nor encoded. The movie file output's path; Apple's `append(_:)` takes pictures when
    /// output settings are given, so this is not public.
    func appendAsItComes(_ sampleBuffer: CMSampleBuffer) -> Bool {
        guard let (writer, index) = admit(caller: "append(_:)") else { return false }
        let isPassthrough = if case .passthrough = settings { true } else { false }
        writer.perform { [self] pipeline throws(MediaCodecsError) in
            defer { didProcess() }
            if isPassthrough {
                try pipeline.appendCompressed(sampleBuffer, track: index)
            } else {
                try pipeline.appendCompressedVideo(sampleBuffer, track: index)
            }
        }
        return true
    }

    /// The pixel buffer adaptor's path: encode `pixelBuffer` at `time`.
    func appendPixelBuffer(_ pixelBuffer: CVPixelBuffer, at time: CMTime, caller: String) -> Bool {
        precondition(time.isNumeric, "AVAssetWriterInput.\(caller): the presentation time must be numeric")
        if case .passthrough = settings {
            preconditionFailure(
                "AVAssetWriterInput.\(caller): an input with nil output settings takes compressed sample buffers, "
                    + "not pictures")
        }
        guard let (writer, index) = admit(caller: caller) else { return false }
        writer.perform { [self] pipeline throws(MediaCodecsError) in
            defer { didProcess() }
            try pipeline.appendPixelBuffer(pixelBuffer, at: time, track: index)
        }
        return true
    }

    /// Checks the rules of appending and counts the buffer as pending; `nil` when the writer is not writing.
    private func admit(caller: String) -> (AVAssetWriter, Int)? {
        let (writer, index, isFinished) = state.withLock { ($0.writer, $0.trackIndex, $0.isFinished) }
        guard let writer else {
            preconditionFailure("AVAssetWriterInput.\(caller): the input was not added to a writer")
        }
        precondition(!isFinished, "AVAssetWriterInput.\(caller) cannot be called after markAsFinished()")
        let status = writer.status
        precondition(status != .unknown, "AVAssetWriterInput.\(caller) cannot be called before startWriting()")
        guard status == .writing else { return nil }
        precondition(
            writer.sessionStarted, "AVAssetWriterInput.\(caller) cannot be called before startSession(atSourceTime:)")
        state.withLock { $0.pending += 1 }
        updateReadiness()
        return (writer, index)
    }

    private func didProcess() {
        state.withLock { $0.pending -= 1 }
        updateReadiness()
    }

    /// Marks the input finished: no more buffers will be appended; its encoder is flushed. Calling it again does
    /// nothing.
    open func markAsFinished() {
        let (alreadyFinished, writer, index) = state.withLock { state in
            defer { state.isFinished = true }
            return (state.isFinished, state.writer, state.trackIndex)
        }
        updateReadiness()
        guard !alreadyFinished, let writer, writer.status == .writing, writer.sessionStarted else { return }
        writer.perform { pipeline throws(MediaCodecsError) in try pipeline.flush(track: index) }
    }

    /// The writer is finishing: the input takes no more buffers.
    func markFinishedForWriterFinish() {
        state.withLock { $0.isFinished = true }
        updateReadiness()
    }

    /// Calls `block` on `queue` whenever the input is ready for more media data, until ``markAsFinished()``.
    ///
    /// The block should append while ``isReadyForMoreMediaData`` is true and call ``markAsFinished()`` when it has
    /// nothing more; if it returns while the input is still ready, it is called again at once (as Apple's).
    open func requestMediaDataWhenReady(on queue: DispatchQueue, using block: @escaping @Sendable () -> Void) {
        state.withLock { $0.request = (queue, block) }
        updateReadiness()
    }

    // MARK: Writer's side

    var isAttached: Bool { state.withLock { $0.isAttached } }

    func attach(to writer: AVAssetWriter, trackIndex: Int) {
        state.withLock { state in
            state.writer = writer
            state.trackIndex = trackIndex
            state.isAttached = true
        }
    }

    /// The pixel format the video encoder is made for: the adaptor's, the hint's, or NV12 video range.
    var encoderPixelFormat: OSType {
        if let format = state.withLock({ $0.pixelFormat }) { return format }
        if let hint = sourceFormatHint, hint.mediaType == .video { return hint.mediaSubType.rawValue }
        return kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
    }

    /// The settings the encoder is made with: the output settings, and for video the Y'CbCr matrix of the source
    /// format hint (`kCMFormatDescriptionExtension_YCbCrMatrix`), so the stream is tagged with the matrix its
    /// pictures were made with (BT.601 from a JPEG camera, whatever the size), unless `AVVideoColorPropertiesKey`
    /// names a matrix.
    var encoderSettings: WriterTrackSettings {
        guard case .video(var configuration) = settings else { return settings }
        if configuration.matrix == nil, let hint = sourceFormatHint, hint.mediaType == .video {
            configuration.matrix = YCbCrMatrix(formatDescription: hint)
        }
        configuration.startsRateControlNearlyEmpty = state.withLock { $0.keepsFirstSecondToAverageRate }
        if scalingMode == .fit, let source = sourceSize {
            (configuration.width, configuration.height) = VideoScalingMode.fitted(
                source: source, within: (configuration.width, configuration.height))
        }
        return .video(configuration)
    }

    /// Whether the encoder keeps its first second to the average bit rate (rate control starting nearly empty):
    /// a movie file output sets it when a size limit may end the recording within its first seconds.
    var keepsFirstSecondToAverageRate: Bool {
        get { state.withLock { $0.keepsFirstSecondToAverageRate } }
        set { state.withLock { $0.keepsFirstSecondToAverageRate = newValue } }
    }

    /// Set by a pixel buffer adaptor.
    func setSourcePixelFormat(_ format: OSType?) {
        state.withLock { $0.pixelFormat = format }
    }

    /// Set by a pixel buffer adaptor whose attributes give the pictures' size (``AVVideoScalingModeFit`` needs it).
    func setSourceSize(_ size: (width: Int, height: Int)?) {
        state.withLock { $0.sourceSize = size }
    }

    /// The pictures' size as known before writing: the adaptor's, or the source format hint's.
    var sourceSize: (width: Int, height: Int)? {
        if let size = state.withLock({ $0.sourceSize }) { return size }
        guard let hint = sourceFormatHint, hint.mediaType == .video else { return nil }
        let dimensions = hint.dimensions
        return dimensions.width > 0 ? (Int(dimensions.width), Int(dimensions.height)) : nil
    }

    var trackTransform: Muxer.TrackTransform {
        let transform = state.withLock { $0.transform }
        return Muxer.TrackTransform(
            a: Double(transform.a), b: Double(transform.b), c: Double(transform.c), d: Double(transform.d),
            tx: Double(transform.tx), ty: Double(transform.ty))
    }

    /// The writer the input belongs to.
    var writer: AVAssetWriter? { state.withLock { $0.writer } }

    /// Recomputes ``isReadyForMoreMediaData``, notifies a change and schedules the request block when ready.
    func updateReadiness() {
        let writing = writer?.status == .writing
        let (old, new, request) = state.withLock { state in
            let limit = state.expectsMediaDataInRealTime ? 8 : 3
            let old = state.isReady
            state.isReady = writing && !state.isFinished && state.pending < limit
            var request: (queue: DispatchQueue, block: @Sendable () -> Void)?
            if state.isReady, !state.isRequestScheduled, let pending = state.request {
                state.isRequestScheduled = true
                request = pending
            }
            return (old, state.isReady, request)
        }
        if old != new {
            keyValueObservers.notifyChange(\AVAssetWriterInput.isReadyForMoreMediaData, of: self, from: old, to: new)
        }
        if let request {
            request.queue.async { [self] in
                request.block()
                state.withLock { $0.isRequestScheduled = false }
                updateReadiness()
            }
        }
    }
}
