import CaptureDrivers
import CaptureGraph
import Foundation
import Synchronization

/// Told about a file output's recordings: started, paused, resumed, finishing, finished.
///
/// `fileOutput(_:didFinishRecordingTo:from:error:)` is called for every recording request, even when nothing was
/// written; the others have default implementations that do nothing. Callbacks run on an internal serial queue,
/// in this order: didStart, then any didPause/didResume pairs, then willFinish, then didFinish.
public protocol AVCaptureFileOutputRecordingDelegate: NSObjectProtocol {
    func fileOutput(
        _ output: AVCaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [AVCaptureConnection])
    func fileOutput(
        _ output: AVCaptureFileOutput, didPauseRecordingTo fileURL: URL, from connections: [AVCaptureConnection])
    func fileOutput(
        _ output: AVCaptureFileOutput, didResumeRecordingTo fileURL: URL, from connections: [AVCaptureConnection])
    func fileOutput(
        _ output: AVCaptureFileOutput, willFinishRecordingTo fileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?)
    /// The recording ended; the file at `outputFileURL` is finalized and playable when
    /// `(error as NSError?)?.userInfo[AVErrorRecordingSuccessfullyFinishedKey]` is true or `error` is nil.
    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?)
}

extension AVCaptureFileOutputRecordingDelegate {
    /// The first sample was written (default: nothing).
    public func fileOutput(
        _ output: AVCaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {}
    /// The recording paused (default: nothing).
    public func fileOutput(
        _ output: AVCaptureFileOutput, didPauseRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {}
    /// The recording resumed (default: nothing).
    public func fileOutput(
        _ output: AVCaptureFileOutput, didResumeRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {}
    /// No more samples will be written; the file is being finalized (default: nothing).
    public func fileOutput(
        _ output: AVCaptureFileOutput, willFinishRecordingTo fileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {}
}

/// Sees every sample buffer a file output records (macOS): decide per buffer with
/// `fileOutputShouldProvideSampleAccurateRecordingStart(_:)`.
public protocol AVCaptureFileOutputDelegate: NSObjectProtocol {
    func fileOutputShouldProvideSampleAccurateRecordingStart(_ output: AVCaptureFileOutput) -> Bool
    func fileOutput(
        _ output: AVCaptureOutput, didOutputSampleBuffer sampleBuffer: CMSampleBuffer,
        from connection: AVCaptureConnection)
}

extension AVCaptureFileOutputDelegate {
    /// A buffer the output records (default: nothing; not called by this implementation).
    public func fileOutput(
        _ output: AVCaptureOutput, didOutputSampleBuffer sampleBuffer: CMSampleBuffer,
        from connection: AVCaptureConnection
    ) {}
}

/// The base of the outputs that record to a file (``AVCaptureMovieFileOutput``): the recording's limits, its
/// progress, and the start / stop / pause / resume requests.
///
/// Limits: ``maxRecordedDuration`` (`.invalid`, the default, for none), ``maxRecordedFileSize`` (0 for none) and
/// ``minFreeDiskSpaceLimit`` (0 for none) end a recording with `AVError` `.maximumDurationReached`,
/// `.maximumFileSizeReached` or `.diskFull`, with `AVErrorRecordingSuccessfullyFinishedKey` true: the file is
/// finalized and playable. They are read when a recording starts.
///
/// Threading: thread safe. Properties and requests may be used from any thread; requests return at once and
/// take effect in order on the output's own serial queue, between two sample buffers. Recording delegates are
/// called on an internal serial queue, in the order documented on ``AVCaptureFileOutputRecordingDelegate``.
open class AVCaptureFileOutput: AVCaptureOutput, @unchecked Sendable {
    /// What the file output's properties hold; subclasses update the progress fields.
    package struct FileState: @unchecked Sendable {
        weak var delegate: (any AVCaptureFileOutputDelegate)?
        var maxRecordedDuration: CMTime = .invalid
        var maxRecordedFileSize: Int64 = 0
        var minFreeDiskSpaceLimit: Int64 = 0
        var outputFileURL: URL?
        var recordedDuration: CMTime = .zero
        var recordedFileSize: Int64 = 0
        /// The sizes of the files finished since the statistics last started (file switches, segments), so a
        /// monitor's byte count goes on across files.
        var finishedFilesBytes: Int64 = 0
        var isRecording = false
        var isRecordingPaused = false
        var isSampleAccurate = false
        /// Whether recordings go on through an unplugged device (ours; see
        /// `AVCaptureMovieFileOutput.survivesDisconnection`).
        var survivesDisconnection = false
    }

    package let fileState = Mutex(FileState())

    override package init() {
        let queue = DispatchQueue(label: "OpenAVCapture.\(Self.self)")
        let engine = MovieRecordingEngine(queue: queue)
        workQueue = queue
        self.engine = engine
        mailbox = SampleBufferMailbox(queue: queue, capacity: 1024, limit: 1024) { engine.handle($0) }
        super.init()
        engine.output = self
    }

    /// Sees every sample buffer the output receives, recording or not (macOS), on the output's serial queue, so it
    /// can start and stop recordings at a chosen sample. Held weakly. When its
    /// `fileOutputShouldProvideSampleAccurateRecordingStart(_:)` (asked when it is set) is true, a
    /// ``startRecording(to:recordingDelegate:)`` or ``stopRecording()`` called from
    /// `fileOutput(_:didOutputSampleBuffer:from:)` takes effect at that buffer: a started recording includes it (a
    /// movie still begins at a video frame), a stopped one ends before it. Otherwise requests take effect after it.
    open var delegate: (any AVCaptureFileOutputDelegate)? {
        get { fileState.withLock { $0.delegate } }
        set {
            let sampleAccurate = newValue?.fileOutputShouldProvideSampleAccurateRecordingStart(self) ?? false
            fileState.withLock {
                $0.delegate = newValue
                $0.isSampleAccurate = sampleAccurate
            }
            hasFileDelegate.store(newValue != nil, ordering: .sequentiallyConsistent)
            demandsChanged()
        }
    }

    /// The longest a recording may last, or `.invalid` (the default) for no limit. A recording that reaches it
    /// ends with `AVError.maximumDurationReached` at the last whole frame that fits.
    open var maxRecordedDuration: CMTime {
        get { fileState.withLock { $0.maxRecordedDuration } }
        set { fileState.withLock { $0.maxRecordedDuration = newValue } }
    }

    /// The largest a recorded file may grow, in bytes, or 0 (the default) for no limit. A recording that would
    /// pass it ends with `AVError.maximumFileSizeReached` at the last whole frame that fits: the finished file is
    /// never larger (see ``AVCaptureMovieFileOutput``).
    open var maxRecordedFileSize: Int64 {
        get { fileState.withLock { $0.maxRecordedFileSize } }
        set { fileState.withLock { $0.maxRecordedFileSize = max(0, newValue) } }
    }

    /// Free space, in bytes, the volume must keep; 0 (the default) for 1 MiB. Checked before a recording starts
    /// (it then ends at once with `AVError.diskFull`) and at every sample while it runs: the recording ends with
    /// `AVError.diskFull` at the last whole frame that keeps it free, the file finished.
    open var minFreeDiskSpaceLimit: Int64 {
        get { fileState.withLock { $0.minFreeDiskSpaceLimit } }
        set { fileState.withLock { $0.minFreeDiskSpaceLimit = max(0, newValue) } }
    }

    /// The file of the recording under way, or `nil` when not recording.
    open var outputFileURL: URL? { fileState.withLock { $0.outputFileURL } }

    /// How long the recording under way lasts so far (paused time left out); the last recording's length
    /// once it has ended.
    open var recordedDuration: CMTime { fileState.withLock { $0.recordedDuration } }

    /// The size of the file being recorded so far, in bytes: the larger of what is on disk and the encoded media
    /// written (the muxer holds a fragment's media in memory until it writes the fragment).
    open var recordedFileSize: Int64 { fileState.withLock { $0.recordedFileSize } }

    /// Whether a recording was requested and has not ended (stopped, or ended by a limit or a fault).
    open var isRecording: Bool { fileState.withLock { $0.isRecording } }

    /// Whether the recording under way is paused.
    open var isRecordingPaused: Bool { fileState.withLock { $0.isRecordingPaused } }

    /// Starts recording to `outputFileURL`; `delegate` (held strongly until its
    /// `fileOutput(_:didFinishRecordingTo:from:error:)`) is told how it goes. Returns at once; the recording
    /// begins with the next suitable sample (see each file output). Starting while a recording is under way
    /// switches files without losing or repeating a sample.
    open func startRecording(
        to outputFileURL: URL, recordingDelegate delegate: any AVCaptureFileOutputRecordingDelegate
    ) {
        startRecording(to: outputFileURL, fileType: recordingFileType(for: outputFileURL), delegate: delegate)
    }

    /// Stops the recording under way; the delegate's `didFinishRecordingTo` follows once the file is finalized.
    open func stopRecording() {
        fileState.withLock { state in
            state.isRecording = false
            state.isRecordingPaused = false
        }
        submit(.stop)
    }

    /// Pauses the recording under way: nothing is written until ``resumeRecording()``, and the paused time is
    /// left out of the file.
    open func pauseRecording() {
        fileState.withLock { if $0.isRecording { $0.isRecordingPaused = true } }
        submit(.pause)
    }

    /// Resumes a paused recording; the file's timeline goes on where it paused.
    open func resumeRecording() {
        fileState.withLock { $0.isRecordingPaused = false }
        submit(.resume)
    }

    // MARK: Statistics (ours)

    /// What the recording under way (or the last one) has taken in and lost so far. Not in Apple's API: ours, so a
    /// recorder can say why frames are missing.
    open var recordingStatistics: AVCaptureRecordingStatistics { statistics.withLock { $0 } }

    private let statistics = Mutex(AVCaptureRecordingStatistics())

    /// The engine made an encoder for a new file: whether it keeps real time on this machine.
    func noteRealTimeAdvice(_ advice: String?) { statistics.withLock { $0.realTimeAdvice = advice } }

    func countDrop(_ reason: String) {
        statistics.withLock { $0.droppedVideoFrames[reason, default: 0] += 1 }
    }

    /// Counts a buffer left out because the recording was behind: a late video frame or an audio buffer.
    private func countLate(isVideo: Bool) {
        if isVideo {
            countDrop(DropReason.frameWasLate.rawValue)
        } else {
            statistics.withLock { $0.droppedAudioBuffers += 1 }
        }
    }

    // MARK: What each file output decides (overridden)

    /// The container a recording to `url` is written as.
    func recordingFileType(for url: URL) -> AVFileType { .mov }

    /// The complete writer settings for `connection`'s media.
    func recordingSettings(for connection: AVCaptureConnection, fileType: AVFileType) -> [String: Any] { [:] }

    /// The fragment interval and metadata a new file is written with.
    var recordingFragmentIntervalAndMetadata: (CMTime, [AVMetadataItem]) { (.invalid, []) }

    // MARK: The recording machinery shared by the file outputs

    /// Incremented by every start request, so the engine only updates the properties for the newest.
    private let generation = Mutex(0)
    /// Internal, not private: tests set its backstops (`MovieRecordingEngine.silentSessionBackstop`).
    let engine: MovieRecordingEngine
    private let mailbox: SampleBufferMailbox<MovieRecordingEngine.Work>
    /// Copies the compressed frames the file takes as they are (a camera lends its buffers only briefly).
    private let compressedFrames = CompressedFrameCopier()
    let framesAwaitingEngine = Atomic<Int>(0)
    /// Whether a file output delegate wants every buffer (read on the capture thread).
    let hasFileDelegate = Atomic<Bool>(false)
    private let isActive = Atomic<Bool>(false)
    /// Set when sound was lost on the way to the engine (its mailbox was full, or the device reported a drop),
    /// until the next buffer that reaches it carries the news (see `MovieRecordingEngine.Work.sample`).
    private let audioWasLost = Atomic<Bool>(false)
    /// The recording queue: the mailbox's handler and every request run here.
    private let workQueue: DispatchQueue
    /// The publishing output's encoder this output records from while it shares it (see
    /// `AVCaptureFileOutput+SharedEncoder`).
    let encoderSharing = Mutex<VideoEncoderSharing?>(nil)

    func startRecording(
        to url: URL, fileType: AVFileType, delegate: any AVCaptureFileOutputRecordingDelegate,
        segments: AVCaptureRecordingSegments? = nil
    ) {
        let generation = generation.withLock { value in
            value += 1
            return value
        }
        let startsStatistics = !isActive.load(ordering: .sequentiallyConsistent)
        let (limits, survivesDisconnection) = fileState.withLock { state in
            state.isRecording = true
            state.isRecordingPaused = false
            state.outputFileURL = url
            state.recordedDuration = .zero
            state.finishedFilesBytes = startsStatistics ? 0 : state.finishedFilesBytes + state.recordedFileSize
            state.recordedFileSize = 0
            let limits = MovieRecordingEngine.Limits(
                maxDuration: state.maxRecordedDuration, maxFileSize: state.maxRecordedFileSize,
                minFreeDiskSpace: state.minFreeDiskSpaceLimit)
            return (limits, state.survivesDisconnection)
        }
        if startsStatistics {
            statistics.withLock { $0 = AVCaptureRecordingStatistics() }
            statisticsEpoch.add(1, ordering: .relaxed)
        }
        isActive.store(true, ordering: .sequentiallyConsistent)
        updateEncoderSharing()
        demandsChanged()
        submit(
            .start(
                MovieRecordingEngine.Request(
                    url: url, fileType: fileType, delegate: delegate, generation: generation, limits: limits,
                    connections: connections, segments: segments, survivesDisconnection: survivesDisconnection)))
    }

    /// A segmented recording cut to its next file (ours): the properties follow the new segment, as after a
    /// `startRecording(to:)` while recording. Returns the segment's generation.
    func startNextSegment(_ url: URL) -> Int {
        let generation = generation.withLock { value in
            value += 1
            return value
        }
        fileState.withLock { state in
            state.outputFileURL = url
            state.recordedDuration = .zero
            state.finishedFilesBytes += state.recordedFileSize
            state.recordedFileSize = 0
        }
        return generation
    }

    /// Subclasses call this when their metadata changes, so a recording under way writes the new metadata.
    func metadataDidChange() { submit(.metadataChanged) }

    private func submit(_ work: MovieRecordingEngine.Work) {
        // Called from the file output delegate's sample callback (on the work queue): the request applies at that
        // buffer, so it is handled now rather than after it.
        if engine.isInSampleAccurateCallback {
            engine.handle(work)
            return
        }
        if !mailbox.post(work) {
            let item = UncheckedSendable(work)
            workQueue.async { [engine] in engine.handle(item.value) }
        }
    }

    // MARK: For the engine (on the work queue)

    var currentGeneration: Int { generation.withLock { $0 } }
    /// The file output delegate and whether it asked for sample-accurate starts.
    var fileDelegate: (delegate: any AVCaptureFileOutputDelegate, isSampleAccurate: Bool)? {
        fileState.withLock { state in state.delegate.map { ($0, state.isSampleAccurate) } }
    }
    func setActive(_ active: Bool) {
        let wasActive = isActive.exchange(active, ordering: .sequentiallyConsistent)
        if wasActive, !active { endEncoderSharing() }
        demandsChanged()
    }
    func videoHandled() { framesAwaitingEngine.subtract(1, ordering: .relaxed) }

    override package var hasWorkInFlight: Bool {
        !mailbox.isIdle || framesAwaitingEngine.load(ordering: .relaxed) > 0
            || workQueue.sync { engine.hasPendingWrites }
    }
    /// The engine left a buffer out because the encoder had too many waiting.
    func encoderWasBehind(isVideo: Bool) { countLate(isVideo: isVideo) }

    /// The recording measured the microphone's clock error (see ``AVCaptureRecordingStatistics/audioClockDriftPPM``).
    func audioClockDriftWasMeasured(_ ppm: Double) { statistics.withLock { $0.audioClockDriftPPM = ppm } }

    /// The engine handed a video frame to the file's writer, which now holds `backlog` frames for its encoder.
    func videoFrameWasWritten(backlog: Int) {
        statistics.withLock { $0.videoFramesWritten += 1 }
        encoderBacklog.store(backlog, ordering: .relaxed)
    }

    /// Frames waiting for the encoder at the last frame handed to it (read by monitors from any thread).
    private let encoderBacklog = Atomic<Int>(0)
    /// How many times the statistics started again from zero.
    private let statisticsEpoch = Atomic<Int>(0)

    override package var measurements: OutputMeasurements? {
        let statistics = recordingStatistics
        var measured = OutputMeasurements()
        measured.framesCaptured = statistics.videoFramesReceived
        measured.framesWritten = statistics.videoFramesWritten
        measured.framesDropped = statistics.droppedVideoFrames
        measured.epoch = statisticsEpoch.load(ordering: .relaxed)
        measured.bytesWritten = fileState.withLock { $0.finishedFilesBytes + $0.recordedFileSize }
        measured.encoderQueueDepth = isRecording ? encoderBacklog.load(ordering: .relaxed) : 0
        measured.audioClockDriftPPM = statistics.audioClockDriftPPM
        measured.fileURL = outputFileURL
        return measured
    }

    // MARK: Graph hooks

    override package func receive(_ sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        guard isActive.load(ordering: .relaxed) || hasFileDelegate.load(ordering: .relaxed) else { return }
        if sampleBuffer.imageBuffer != nil, sharesEncoder(for: connection) {
            offerToSharedEncoder(sampleBuffer, from: connection)
            return
        }
        // A picture, or a compressed frame the file takes as it is.
        let isVideo = sampleBuffer.imageBuffer != nil || sampleBuffer.formatDescription?.mediaType == .video
        // The decoded picture of a frame the file takes compressed: only at the instant recording starts, when the
        // frame was offered compressed a moment before it was active. Its compressed twin brings the next one.
        if sampleBuffer.imageBuffer != nil, let device = connection.inputPorts.first?.formatDescription,
            device.mediaType == .video,
            SampleDecodeStage.decodedPixelFormat(forCodec: device.mediaSubType.rawValue) != nil,
            takesCompressedVideo(device, from: connection)
        {
            return
        }
        // At most 8 video frames wait for the engine; more are dropped (it is behind). The engine bounds what waits
        // for the encoder (video and audio) in turn.
        if isVideo, !admitsVideoFrame() { return }
        let recorded =
            !isVideo
            ? AudioChannelGain.apply(to: sampleBuffer, channels: connection.audioChannels)
            : sampleBuffer.imageBuffer == nil ? compressedFrames.copy(sampleBuffer) : sampleBuffer
        let afterLoss = !isVideo && audioWasLost.exchange(false, ordering: .relaxed)
        post(.sample(recorded, connection, isVideo: isVideo, afterLoss: afterLoss), isVideo: isVideo)
    }

    /// Whether another video frame may wait for the engine (at most 8 do); a frame it refuses is counted late.
    func admitsVideoFrame() -> Bool {
        guard framesAwaitingEngine.add(1, ordering: .relaxed).newValue <= 8 else {
            framesAwaitingEngine.subtract(1, ordering: .relaxed)
            countLate(isVideo: true)
            return false
        }
        return true
    }

    /// Posts a sample's work to the engine, counting it as received if `counted`; a full mailbox drops it as late.
    func post(_ work: MovieRecordingEngine.Work, isVideo: Bool, counted: Bool = true) {
        if mailbox.post(work) {
            guard counted else { return }
            statistics.withLock { isVideo ? ($0.videoFramesReceived += 1) : ($0.audioBuffersReceived += 1) }
        } else {
            if isVideo {
                framesAwaitingEngine.subtract(1, ordering: .relaxed)
            } else {
                audioWasLost.store(true, ordering: .relaxed)
            }
            countLate(isVideo: isVideo)
        }
    }

    /// While recording (or while a file output delegate watches), frames in a format the encoder takes.
    override package func videoDemand(for connection: AVCaptureConnection) -> VideoFormatDemand? {
        guard isActive.load(ordering: .relaxed) || hasFileDelegate.load(ordering: .relaxed) else { return nil }
        return encoderDemand(for: connection)
    }

    /// Frames are used while recording, or while a file output delegate watches (`receive` drops the others).
    override package func wantsVideoFrames(from connection: AVCaptureConnection) -> Bool {
        isActive.load(ordering: .relaxed) || hasFileDelegate.load(ordering: .relaxed)
    }

    /// Frames go to the encoder only, unless a file output delegate is shown them; the H.264 and HEVC encoders
    /// take 4:2:0 planar as it is.
    override package func takesLentPictures(from connection: AVCaptureConnection) -> Bool {
        guard !hasFileDelegate.load(ordering: .relaxed) else { return false }
        return videoDemand(for: connection)?.pixelFormats.contains(kCVPixelFormatType_420YpCbCr8Planar) ?? true
    }

    /// The pixel formats the encoder of `connection`'s media takes as they are; nil takes any (subclasses).
    func encoderDemand(for connection: AVCaptureConnection) -> VideoFormatDemand? { nil }

    /// While recording, compressed frames the file takes as they are (see ``writesAsItComes(_:for:)``); not while
    /// a file output delegate watches, since it is shown decoded frames.
    override package func takesCompressedVideo(
        _ format: CMFormatDescription, from connection: AVCaptureConnection
    )
        -> Bool
    {
        isActive.load(ordering: .relaxed) && !hasFileDelegate.load(ordering: .relaxed)
            && writesAsItComes(format, for: connection)
    }

    /// A publishing output's encoder for this output's recordings, with the connection it would take pictures from,
    /// or nil to encode its own (subclasses; the movie file output shares when its settings allow).
    func sharableVideoEncoder() -> VideoEncoderSharing? { nil }

    /// Whether `connection`'s frames in compressed `format` go into the file as they are (subclasses).
    func writesAsItComes(_ format: CMFormatDescription, for connection: AVCaptureConnection) -> Bool { false }

    override package func receiveDrop(
        presentationTime: CMTime, reason: DropReason, format: CMFormatDescription?, from connection: AVCaptureConnection
    ) {
        guard isActive.load(ordering: .relaxed) else { return }
        guard Self.isVideo(connection) else {
            audioWasLost.store(true, ordering: .relaxed)
            return
        }
        countDrop(reason.rawValue)
    }

    override package func sessionDidStopRunning() { submit(.sessionStopped) }

    override package func inputDidFail(_ error: AVError, connection: AVCaptureConnection) {
        submit(.inputFailed(error, connection))
    }

    static func isVideo(_ connection: AVCaptureConnection) -> Bool {
        connection.inputPorts.contains { $0.mediaType == .video }
    }
}

/// What a file output's recording took in and lost (ours; see ``AVCaptureFileOutput/recordingStatistics``).
///
/// Counts start at zero with the first recording after the output was idle and go on across file switches.
/// Value type; `Sendable`.
public struct AVCaptureRecordingStatistics: Sendable, Hashable {
    /// Video frames handed to the recording (before the recording's own limits and pauses).
    public var videoFramesReceived = 0
    /// Audio buffers handed to the recording.
    public var audioBuffersReceived = 0
    /// Video frames taken into the file (by its encoder, or as they came for compressed frames kept as they are).
    public var videoFramesWritten = 0
    /// Video frames that never reached the recording, by `kCMSampleBufferDroppedFrameReason_…` value:
    /// `FrameWasLate` (the encoder was behind), `OutOfBuffers` and `Discontinuity` (the device's).
    public var droppedVideoFrames: [String: Int] = [:]
    /// Audio buffers left out because the recording was behind (only a device faster than real time, such as a
    /// free-running virtual microphone, outruns the encoder).
    public var droppedAudioBuffers = 0
    /// Set when a file starts whose video encoder needs more of this machine's cores than it can spare beside
    /// capture (3840x2160 at 30 fps in H.264 on two cores): what it needs, and the frame rate or size that would keep
    /// up; nil when the encoder keeps up or the picture is written as it comes. Frames the encoder cannot take in time
    /// are dropped as `FrameWasLate`.
    public var realTimeAdvice: String?
    /// The microphone's sample clock error against the session clock, in ppm (positive: it runs fast), as measured
    /// by the recording that corrects it (its sound is resampled to stay with the pictures); nil before 2 s of
    /// sound.
    public var audioClockDriftPPM: Double?

    public init() {}

    /// Every dropped video frame, whatever the reason.
    public var totalDroppedVideoFrames: Int { droppedVideoFrames.values.reduce(0, +) }
}
