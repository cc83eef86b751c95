// AVAssetWriter: media files from sample buffers, encoded and muxed on the writer's own serial queue.

import CaptureGraph
import Dispatch
import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// Writes media to a QuickTime movie, an MPEG-4 file or an audio file, from sample buffers you append to its
/// inputs (``AVAssetWriterInput``).
///
/// The life cycle is Apple's: create it with ``init(outputURL:fileType:)``, ``add(_:)`` inputs, ``startWriting()``,
/// ``startSession(atSourceTime:)``, append, then ``finishWriting(completionHandler:)`` (or ``cancelWriting()``).
/// ``status`` goes `.unknown` → `.writing` → `.completed`, or to `.failed` (with ``error``) or `.cancelled`.
/// Misuse that Apple answers with an Objective-C exception (adding an input after `startWriting()`, starting a
/// session twice, finishing before writing) stops the program with a message naming the rule.
///
/// Encoding: each input's output settings make a libavcodec encoder at ``startWriting()`` (H.264 with libx264,
/// HEVC, JPEG, ProRes 422; AAC, ALAC, linear PCM), and the file is written with libavformat. Appended buffers are
/// encoded and muxed on the writer's own serial queue, not on the caller's thread: `append` only enqueues.
/// Errors found there put the writer in `.failed`; the next `append` returns `false`. A failure leaves what plays
/// and nothing else (ours; Apple leaves the file as it stands): when an encoder failed, the file is finished with
/// what was written before; when writing the file failed, a fragmented movie is cut back to its last complete
/// fragment; a file with nothing playable in it is removed.
///
/// Crash safety: with a numeric ``movieFragmentInterval`` a movie is written as fragments, and the file is
/// readable up to its last fragment if the process dies; a clean finish turns it into a conventional fast-start
/// movie, replaced atomically. The default is `.invalid` (no fragments), as Apple's writer. A fragment is cut at
/// the first key frame after the interval, or earlier, once it holds 4 MiB of media: the memory a fragment
/// waits in stays bounded at high bit rates.
///
/// Timestamps: the file's time 0 is the session's source time; video samples before it are dropped, and samples
/// appended after ``endSession(atSourceTime:)`` at or past its time are dropped. (Apple also trims samples already
/// appended past the end; we do not.)
///
/// Threading: thread safe (`@unchecked Sendable`); every method may be called from any thread, but not from a
/// key-value observation handler of the writer's ``status`` (that runs on the writer's queue, where
/// ``cancelWriting()`` and ``startWriting()`` would deadlock; they trap there instead). The completion handler of
/// ``finishWriting(completionHandler:)`` runs on the writer's queue.
open class AVAssetWriter: NSObject, KeyValueObservable, @unchecked Sendable {
    /// The writer's key-value observers (``status``, ``error``).
    public let keyValueObservers = KeyValueObserverRegistry()
    /// The file written.
    open var outputURL: URL { storedOutputURL }
    private let storedOutputURL: URL
    /// The container.
    open var outputFileType: AVFileType { storedOutputFileType }
    private let storedOutputFileType: AVFileType
    /// The file types the writer can write.
    public static let availableFileTypes: [AVFileType] = [.mov, .mp4, .m4v, .m4a, .wav, .aiff, .aifc, .caf]

    let muxerFileType: Muxer.FileType
    /// The segment output's settings and delegate (``init(contentType:)``); nil for a writer of a file.
    let segmentWriting: SegmentWriting?
    /// Where encoding and muxing happen.
    let queue: DispatchQueue
    private let state = Mutex<State>(State())
    /// The encoders and muxer; touched only on ``queue``.
    private let pipeline: QueueBound<WriterPipeline?>
    /// True when finishing failed only in rewriting a fragmented movie as a conventional one (the disk filled up):
    /// the fragmented movie at ``outputURL`` is complete and playable although ``status`` is `.failed`.
    var keptFragmentedFile: Bool { state.withLock { $0.keptFragmentedFile } }
    /// Encoded bytes written so far (file outputs report them as the recorded size between fragments).
    let encodedBytes = EncodedByteCounter()
    /// The sizes the file must stay within (file outputs set them); a packet that would pass them is not written,
    /// nor anything after it.
    let sizeLimits = FileSizeLimits()
    /// What a failure left at ``outputURL``: nil while the writer has not failed (see
    /// ``WriterPipeline/FileAfterFailure``).
    var fileAfterFailure: WriterPipeline.FileAfterFailure? { state.withLock { $0.fileAfterFailure } }

    /// The media bytes after which a fragment is cut early (``Muxer/Options/maximumFragmentBytes``). File outputs
    /// with a size limit set a fraction of it, so the fragments on disk follow the recording closely. Set it before
    /// ``startWriting()``.
    var maximumFragmentBytes: Int {
        get { state.withLock { $0.maximumFragmentBytes } }
        set { setBeforeWriting("maximumFragmentBytes") { $0.maximumFragmentBytes = newValue } }
    }

    /// The free bytes the volume must keep after the finishing rewrite of a fragmented movie; with less, the
    /// complete fragmented movie is kept instead (``Muxer/Options/minimumFreeBytesAfterRewrite``). Set it before
    /// ``startWriting()``.
    var minimumFreeBytesAfterRewrite: Int64 {
        get { state.withLock { $0.minimumFreeBytesAfterRewrite } }
        set { setBeforeWriting("minimumFreeBytesAfterRewrite") { $0.minimumFreeBytesAfterRewrite = newValue } }
    }

    private struct State {
        var status: Status = .unknown
        var error: AVError?
        var metadata: [AVMetadataItem] = []
        var keptFragmentedFile = false
        var shouldOptimizeForNetworkUse = false
        var movieFragmentInterval: CMTime = .invalid
        var inputs: [AVAssetWriterInput] = []
        var sessionStart: CMTime?
        var sessionEnd: CMTime?
        /// Whether the writer made the file (so cancelling removes it).
        var ownsFile = false
        var maximumFragmentBytes = Muxer.Options.defaultMaximumFragmentBytes
        var minimumFreeBytesAfterRewrite: Int64 = 0
        var fileAfterFailure: WriterPipeline.FileAfterFailure?
    }

    /// A writer of a new file at `outputURL`.
    ///
    /// - Throws: ``AVError`` `.fileAlreadyExists` when a file is there (it is left untouched),
    ///   `.operationNotAllowed` when the directory does not exist or is not writable, `.formatUnsupported` for a
    ///   file type the writer cannot write (see ``availableFileTypes``), `.invalidOutputURLPathExtension` for a
    ///   URL that is not a file URL.
    public init(outputURL: URL, fileType outputFileType: AVFileType) throws {
        guard outputURL.isFileURL else {
            throw AVError(
                .invalidOutputURLPathExtension, "The output URL \(outputURL) is not a file URL.",
                suggestion: "Give a file URL, such as URL(fileURLWithPath:).")
        }
        guard let fileType = Self.muxerFileType(outputFileType) else {
            throw AVError(
                .formatUnsupported, "AVAssetWriter cannot write files of type \(outputFileType.rawValue).",
                suggestion: "Use one of AVAssetWriter.availableFileTypes.",
                extra: [AVErrorFileTypeKey: outputFileType.rawValue])
        }
        let path = outputURL.path
        if FileManager.default.fileExists(atPath: path) {
            throw AVError(
                .fileAlreadyExists, "A file already exists at \(path); it was left untouched.",
                suggestion: "Remove the file or choose another URL.")
        }
        let directory = outputURL.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue,
            access(directory, W_OK | X_OK) == 0
        else {
            throw AVError(
                .operationNotAllowed,
                "Cannot write \(path): the directory \(directory) does not exist or is not writable.",
                suggestion: "Create the directory or choose a writable location.",
                extra: [NSUnderlyingErrorKey: NSError(domain: NSPOSIXErrorDomain, code: Int(EACCES))])
        }
        self.storedOutputURL = outputURL
        self.storedOutputFileType = outputFileType
        self.muxerFileType = fileType
        self.segmentWriting = nil
        let queue = DispatchQueue(label: "OpenAVCapture.AVAssetWriter")
        self.queue = queue
        self.pipeline = QueueBound(nil, on: queue)
        super.init()
    }

    /// A writer that writes no file but hands fragmented MPEG-4 segments to its ``delegate``: an initialization
    /// segment (`ftyp`+`moov`), then media segments (`moof`+`mdat`) each about ``preferredOutputSegmentInterval``
    /// long, each beginning with a video key frame (see ``AVAssetWriterDelegate``).
    ///
    /// `outputContentType` is the container, such as `UTType(AVFileType.mp4.rawValue)!`. Traps when it is not one of
    /// ``AVFileType``'s types, as Apple's raises for a type AVMediaFormat.h does not declare; a declared type other
    /// than MPEG-4 makes ``startWriting()`` fail. ``outputURL`` is `about:blank` (there is no file).
    public init(contentType outputContentType: UTType) {
        let fileType = AVFileType(outputContentType.identifier)
        guard let muxerFileType = Self.muxerFileType(fileType) else {
            preconditionFailure(
                "AVAssetWriter(contentType:): \(outputContentType.identifier) is not a container AVFileType declares")
        }
        self.storedOutputURL = URL(string: "about:blank")!
        self.storedOutputFileType = fileType
        self.muxerFileType = muxerFileType
        self.segmentWriting = SegmentWriting()
        let queue = DispatchQueue(label: "OpenAVCapture.AVAssetWriter")
        self.queue = queue
        self.pipeline = QueueBound(nil, on: queue)
        super.init()
    }

    /// Apple's other spelling of ``init(outputURL:fileType:)``.
    public convenience init(url: URL, fileType: AVFileType) throws {
        try self.init(outputURL: url, fileType: fileType)
    }

    static func muxerFileType(_ type: AVFileType) -> Muxer.FileType? {
        switch type {
        case .mov: .mov
        case .mp4: .mp4
        case .m4v: .m4v
        case .m4a: .m4a
        case .wav: .wav
        case .aiff: .aiff
        case .aifc: .aifc
        case .caf: .caf
        default: nil
        }
    }

    // MARK: Properties

    /// Where the writer is in its life cycle. Key-value observable.
    open var status: Status { state.withLock { $0.status } }

    /// Why ``status`` is `.failed`: an ``AVError``; `nil` otherwise. Key-value observable.
    open var error: (any Error)? { state.withLock { $0.error } }

    /// Movie-level metadata written into the file (title, location as ISO 6709, creation date, …). Set it before
    /// ``startWriting()``.
    open var metadata: [AVMetadataItem] {
        get { state.withLock { $0.metadata } }
        set { setBeforeWriting("metadata") { $0.metadata = newValue } }
    }

    /// Whether a movie written without fragments gets its `moov` atom first (fast start). A fragmented movie
    /// always ends as fast start. Set it before ``startWriting()``.
    open var shouldOptimizeForNetworkUse: Bool {
        get { state.withLock { $0.shouldOptimizeForNetworkUse } }
        set { setBeforeWriting("shouldOptimizeForNetworkUse") { $0.shouldOptimizeForNetworkUse = newValue } }
    }

    /// How often a movie fragment is written (crash safety), or `.invalid` (the default, as Apple's) for a
    /// conventional movie written once at the end. Ignored by audio files that are not MPEG-4. Set it before
    /// ``startWriting()``.
    ///
    /// The interval is the longest time between fragments: a fragment ends at the first video key frame after it
    /// (audio-only movies: the first packet), or earlier, at the first key frame once the fragment holds 4 MiB of
    /// media, so that at high bit rates the memory a fragment waits in stays small (about 5 MB at 10 Mb/s). Apple
    /// documents no such cap.
    open var movieFragmentInterval: CMTime {
        get { state.withLock { $0.movieFragmentInterval } }
        set {
            // AVAssetWriter.h documents no exception for a time that is neither `.invalid` nor positive; it means
            // no fragments, as `.invalid` does.
            var interval = newValue
            if newValue.isValid && !(newValue.isNumeric && newValue > .zero) {
                ToleratedMisuse.report(
                    "AVAssetWriter.movieFragmentInterval",
                    "AVAssetWriter.movieFragmentInterval \(newValue.seconds) s is not a positive time; no fragments are"
                        + " written")
                interval = .invalid
            }
            setBeforeWriting("movieFragmentInterval") { $0.movieFragmentInterval = interval }
        }
    }

    private func setBeforeWriting(_ name: String, _ change: (inout State) -> Void) {
        state.withLock { state in
            precondition(
                state.status == .unknown,
                "AVAssetWriter.\(name) cannot be set after startWriting() (status is \(state.status))")
            change(&state)
        }
    }

    /// The inputs added, in order.
    open var inputs: [AVAssetWriterInput] { state.withLock { $0.inputs } }

    /// Whether the session has started (``startSession(atSourceTime:)`` was called).
    var sessionStarted: Bool { state.withLock { $0.sessionStart != nil } }

    // MARK: Inputs

    /// Whether `input` can be added: the writer has not started, the input belongs to no writer, and the file
    /// type can hold its media (audio files hold no video).
    open func canAdd(_ input: AVAssetWriterInput) -> Bool {
        guard status == .unknown, !input.isAttached else { return false }
        if input.mediaType == .video { return muxerFileType.isMovie && muxerFileType != .m4a }
        return true
    }

    /// Adds `input`. Traps when ``canAdd(_:)`` is false, as Apple raises.
    open func add(_ input: AVAssetWriterInput) {
        let status = status
        precondition(
            status == .unknown,
            "AVAssetWriter.add(_:): inputs cannot be added after startWriting() (status is \(status))")
        precondition(!input.isAttached, "AVAssetWriter.add(_:): the input already belongs to a writer")
        precondition(
            canAdd(input),
            "AVAssetWriter.add(_:): a \(outputFileType.rawValue) file cannot hold \(input.mediaType.rawValue) media")
        let index = state.withLock { state in
            state.inputs.append(input)
            return state.inputs.count - 1
        }
        input.attach(to: self, trackIndex: index)
    }

    // MARK: Writing

    /// Creates the encoders from each input's output settings and opens the file for writing.
    ///
    /// - Returns: `true` and ``status`` `.writing`, or `false` and `.failed` with ``error`` (the file exists by
    ///   now, a codec the container cannot hold, settings the encoder refuses).
    /// Traps when the writer has started before, as Apple raises.
    /// Replaces the movie metadata while writing (file outputs whose `metadata` changes during a recording): it is
    /// written into the finished file, keeping the creation date the file started with.
    func replaceMetadataWhileWriting(_ items: [AVMetadataItem]) {
        state.withLock { $0.metadata = items }
        let tags = MetadataKeyMapping.tags(for: items).sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
        let sendable = UncheckedSendable(tags)
        perform { pipeline throws(MediaCodecsError) in try pipeline.muxer.replaceMetadata(sendable.value) }
    }

    /// The container tags for `metadata`, with the moment writing starts as the creation date (the movie header's,
    /// as Apple's writer sets it) unless the metadata gives one.
    static func fileTags(for metadata: [AVMetadataItem]) -> [String: String] {
        var tags = MetadataKeyMapping.tags(for: metadata)
        if tags["creation_time"] == nil {
            tags["creation_time"] = ISO8601Timestamp.string(from: Date())
        }
        return tags
    }

    @discardableResult
    open func startWriting() -> Bool {
        dispatchPrecondition(condition: .notOnQueue(queue))
        let (inputs, options) = state.withLock { state in
            precondition(
                state.status == .unknown,
                "AVAssetWriter.startWriting() cannot be called when status is \(state.status)")
            var options = Muxer.Options(
                fragmentInterval: state.movieFragmentInterval.isNumeric ? state.movieFragmentInterval : nil,
                fastStart: state.shouldOptimizeForNetworkUse,
                metadata: Self.fileTags(for: state.metadata).sorted { $0.key < $1.key }.map {
                    (key: $0.key, value: $0.value)
                })
            options.overwrite = false
            options.maximumFragmentBytes = state.maximumFragmentBytes
            options.minimumFreeBytesAfterRewrite = state.minimumFreeBytesAfterRewrite
            return (state.inputs, options)
        }
        // Apple documents no exception for a writer without inputs; it is a failure to start, reported as such.
        guard !inputs.isEmpty else {
            fail(AVError(.operationNotAllowed, "AVAssetWriter.startWriting(): the writer has no inputs; add one with add(_:)"))
            return false
        }
        let tracks = inputs.map { ($0.encoderSettings, $0.encoderPixelFormat, $0.trackTransform) }
        let trackTags = inputs.map(\.trackTags)
        let scalingModes = inputs.map(\.scalingMode)
        // A video input's naturalSize, when set, is its track header's size (the encoded size otherwise).
        var displaySizes: [Int: CGSize] = [:]
        for (index, input) in inputs.enumerated() where input.mediaType == .video {
            let size = input.naturalSize
            if size.width > 0, size.height > 0 { displaySizes[index] = size }
        }
        let path = outputURL.path
        let fileType = muxerFileType
        let segments: UncheckedSendable<SegmentOutput?>
        do throws(AVError) {
            segments = UncheckedSendable(try makeSegmentOutput())
        } catch {
            fail(error)
            return false
        }
        let failure: MediaCodecsError? = queue.sync {
            do throws(MediaCodecsError) {
                pipeline.value = try WriterPipeline(
                    path: path, fileType: fileType, options: options, tracks: tracks, displaySizes: displaySizes,
                    encodedBytes: encodedBytes, limits: sizeLimits, segments: segments.value)
                try pipeline.value?.setTrackTags(trackTags)
                pipeline.value?.setScalingModes(scalingModes)
                return nil
            } catch {
                return error
            }
        }
        if let failure {
            fail(AVError(failure, writing: path))
            return false
        }
        let old = state.withLock { state in
            state.ownsFile = segmentWriting == nil
            defer { state.status = .writing }
            return state.status
        }
        keyValueObservers.notifyChange(\AVAssetWriter.status, of: self, from: old, to: .writing)
        for input in inputs { input.updateReadiness() }
        return true
    }

    /// Starts the file's timeline: samples at `startTime` are at time 0 in the file.
    ///
    /// Traps when ``startWriting()`` has not succeeded, when called twice or with a non-numeric time.
    open func startSession(atSourceTime startTime: CMTime) {
        precondition(startTime.isNumeric, "AVAssetWriter.startSession(atSourceTime:): the time must be numeric")
        let status = state.withLock { state in
            precondition(
                state.status != .unknown,
                "AVAssetWriter.startSession(atSourceTime:) cannot be called before startWriting()")
            precondition(
                state.sessionStart == nil, "AVAssetWriter.startSession(atSourceTime:) cannot be called twice")
            state.sessionStart = startTime
            return state.status
        }
        guard status == .writing else { return }
        perform { pipeline throws(MediaCodecsError) in
            try pipeline.muxer.start(atSourceTime: startTime)
            pipeline.sessionStart = startTime
        }
    }

    /// Ends the session: samples appended later at or after `endTime` are dropped.
    open func endSession(atSourceTime endTime: CMTime) {
        precondition(endTime.isNumeric, "AVAssetWriter.endSession(atSourceTime:): the time must be numeric")
        state.withLock { state in
            precondition(
                state.sessionStart != nil,
                "AVAssetWriter.endSession(atSourceTime:) cannot be called before startSession")
            state.sessionEnd = endTime
        }
        perform { pipeline in pipeline.sessionEnd = endTime }
    }

    /// Marks every input finished, flushes the encoders and finishes the file; `handler` then runs (on the
    /// writer's queue) with ``status`` `.completed` or `.failed`.
    ///
    /// Traps when ``status`` is `.unknown`, `.completed` or `.cancelled`, as Apple raises; when it is `.failed`,
    /// `handler` runs and nothing else happens.
    open func finishWriting(completionHandler handler: @escaping @Sendable () -> Void) {
        let status = status
        switch status {
        case .writing:
            for input in inputs { input.markFinishedForWriterFinish() }
            queue.async { [self] in
                let (failure, keptFragments, left): (MediaCodecsError?, Bool, WriterPipeline.FileAfterFailure?) =
                    pipeline.with { pipeline in
                        guard let pipeline else { return (nil, false, nil) }
                        do throws(MediaCodecsError) {
                            try pipeline.finish()
                            return (nil, false, nil)
                        } catch {
                            return (error, pipeline.muxer.keptFragmentedFile, pipeline.keepPlayablePart())
                        }
                    }
                if let failure {
                    state.withLock {
                        $0.keptFragmentedFile = keptFragments
                        $0.fileAfterFailure = left
                    }
                    fail(AVError(failure, writing: outputURL.path))
                } else {
                    let old = state.withLock { state in
                        let old = state.status
                        if old == .writing { state.status = .completed }
                        return old
                    }
                    if old == .writing {
                        keyValueObservers.notifyChange(\AVAssetWriter.status, of: self, from: old, to: .completed)
                    }
                }
                pipeline.value = nil
                handler()
            }
        case .failed:
            queue.async { handler() }
        default:
            preconditionFailure(
                "AVAssetWriter.finishWriting(completionHandler:) cannot be called when status is \(status)")
        }
    }

    /// Finishes the file (see ``finishWriting(completionHandler:)``) and returns when it is done.
    open func finishWriting() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            finishWriting { continuation.resume() }
        }
    }

    /// Stops writing, discards the encoders and removes the file the writer made. Blocks until done. Does nothing
    /// once the writer has completed or been cancelled.
    open func cancelWriting() {
        dispatchPrecondition(condition: .notOnQueue(queue))
        let (old, ownsFile) = state.withLock { state in
            let old = state.status
            guard old != .completed, old != .cancelled else { return (old, false) }
            state.status = .cancelled
            return (old, state.ownsFile)
        }
        guard old != .completed, old != .cancelled else { return }
        // Dropping the muxer closes the file as it stands.
        queue.sync { pipeline.value = nil }
        if ownsFile { try? FileManager.default.removeItem(at: outputURL) }
        keyValueObservers.notifyChange(\AVAssetWriter.status, of: self, from: old, to: .cancelled)
        for input in inputs { input.updateReadiness() }
    }

    // MARK: Internal

    /// Runs `work` on the queue with the pipeline, if writing; a thrown error fails the writer, and the file keeps
    /// what plays (``WriterPipeline/keepPlayablePart()``): finished with what was written, cut back to its
    /// complete fragments, or removed when nothing playable was written. No debris is left at the URL.
    func perform(_ work: @escaping @Sendable (WriterPipeline) throws(MediaCodecsError) -> Void) {
        queue.async { [self] in
            let failure: MediaCodecsError? = pipeline.with { pipeline in
                guard let pipeline, !pipeline.hasFailed else { return nil }
                do throws(MediaCodecsError) {
                    try work(pipeline)
                    return nil
                } catch {
                    pipeline.hasFailed = true
                    let left = pipeline.keepPlayablePart()
                    state.withLock { $0.fileAfterFailure = left }
                    return error
                }
            }
            if let failure { fail(AVError(failure, writing: outputURL.path)) }
        }
    }

    /// Puts the writer in `.failed` with `error`, unless it has already finished or been cancelled.
    func fail(_ error: AVError) {
        let old: (status: Status, error: AVError?)? = state.withLock { state in
            guard state.status == .writing || state.status == .unknown else { return nil }
            defer {
                state.status = .failed
                state.error = error
            }
            return (state.status, state.error)
        }
        guard let old else { return }
        keyValueObservers.notifyChange(\AVAssetWriter.error, of: self, from: old.error, to: error)
        keyValueObservers.notifyChange(\AVAssetWriter.status, of: self, from: old.status, to: .failed)
        for input in inputs { input.updateReadiness() }
    }
}
