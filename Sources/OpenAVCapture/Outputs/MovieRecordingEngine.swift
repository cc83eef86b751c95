import Foundation
import MediaCodecs
import Synchronization

/// The recording machinery behind ``AVCaptureMovieFileOutput`` and ``AVCaptureAudioFileOutput``: turns requests and sample buffers into
/// ``AVAssetWriter`` calls and delegate callbacks.
///
/// Threading: confined to the output's serial work queue (`handle(_:)` runs only there; `@unchecked Sendable` so
/// the mailbox's handler can hold it). Delegate callbacks are posted to `callbackQueue`, a serial queue, so their
/// order is the order they were decided in.
final class MovieRecordingEngine: @unchecked Sendable {
    struct Limits {
        var maxDuration: CMTime
        var maxFileSize: Int64
        var minFreeDiskSpace: Int64
    }

    /// `@unchecked Sendable`: immutable; the delegate and connections are only passed along.
    struct Request: @unchecked Sendable {
        let url: URL
        let fileType: AVFileType
        let delegate: any AVCaptureFileOutputRecordingDelegate
        let generation: Int
        let limits: Limits
        let connections: [AVCaptureConnection]
        /// The series this recording is a segment of (ours), or nil for a recording of one file.
        var segments: AVCaptureRecordingSegments? = nil
        /// Whether the recording goes on through an unplugged device (ours; `AVCaptureMovieFileOutput+Reconnection`).
        var survivesDisconnection = false
    }

    /// What the work queue handles, in order. `@unchecked Sendable`: buffers, connections and delegates are
    /// thread safe classes; the enum only carries them across.
    enum Work: @unchecked Sendable {
        case sample(CMSampleBuffer, AVCaptureConnection, isVideo: Bool)
        case start(Request)
        case stop
        case pause
        case resume
        case sessionStopped
        case inputFailed(AVError, AVCaptureConnection)
        /// The output's metadata changed: the recordings under way get it in their finished files.
        case metadataChanged
    }

    /// One recording request.
    /// `@unchecked Sendable`: touched only on the work queue (the timeout closure runs there too).
    final class Recording: @unchecked Sendable {
        enum Phase { case waiting, recording, paused, resuming, draining, finished }

        let request: Request
        var phase = Phase.waiting
        var writer: AVAssetWriter?
        var videoInput: AVAssetWriterInput?
        var audioInput: AVAssetWriterInput?
        let hasVideo: Bool
        let hasAudio: Bool
        /// The file's time 0, on the source clock.
        var start: CMTime = .invalid
        /// Paused time so far: written time = source time − offset.
        var offset: CMTime = .zero
        /// Ends of the last video frame and audio buffer written, in written time.
        var videoEdge: CMTime = .invalid
        var audioEdge: CMTime = .invalid
        var pendingAudio: [CMSampleBuffer] = []
        var didStart = false
        /// While draining: the error to finish with, and the written time audio must reach.
        var finishError: AVError?
        var drainUntil: CMTime = .invalid
        /// After a resume: sound before this written time is already in the file (or would overlap it), so the
        /// first buffers are trimmed to start exactly there; invalid once sound flows again.
        var resumedAudioFrom: CMTime = .invalid
        /// Whether the video track holds a camera's inter-frame stream as it came (H.264): after a frame was left
        /// out, nothing until the next key frame can be decoded, so nothing until then is written.
        var isInterFramePassthrough = false
        var awaitsKeyFrame = false
        /// A segment's sound that came before the video frame it belongs with, held (in order) so a cut can split
        /// it to the sample at the frame that opens the next segment. Empty for a recording of one file.
        var heldAudio: [CMSampleBuffer] = []
        /// The source time of the last video frame written: held sound before it is written.
        var lastFrameTime: CMTime = .invalid
        /// Resamples the microphone's sound to follow the session clock (its sample clock drifts); nil until the
        /// first sound, and for sound it cannot take (then written as it comes).
        var clockFollower: AudioClockFollower?
        /// The connections whose device was unplugged while the recording went on (ours), with the written time its
        /// media stopped at: the gap in the file begins there.
        var lostConnections: [ObjectIdentifier: CMTime] = [:]
        /// A movie file's sound has no clock of its own to drift (its timestamps are the file's): it is written as it
        /// comes, sample for sample, however late a loaded machine delivers it.
        lazy var followsClock: Bool = !request.connections.contains { connection in
            !AVCaptureFileOutput.isVideo(connection)
                && ((connection.inputPorts.first?.input as? AVCaptureDeviceInput)?.device.uniqueID.hasPrefix("file:") ?? false)
        }

        init(_ request: Request) {
            self.request = request
            hasVideo = request.connections.contains { AVCaptureFileOutput.isVideo($0) }
            hasAudio = request.connections.contains { !AVCaptureFileOutput.isVideo($0) }
        }

        var recordedDuration: CMTime {
            var edge = hasVideo ? videoEdge : audioEdge
            // A size limit stopped the writer there: later samples were given to it but not written.
            if let stopped = writer?.sizeLimits.stoppedAt, stopped.isNumeric, edge.isNumeric, stopped < edge {
                edge = stopped
            }
            return edge.isNumeric && start.isNumeric ? max(edge - start, .zero) : .zero
        }
    }

    weak var output: AVCaptureFileOutput?
    private let queue: DispatchQueue
    private let callbackQueue = DispatchQueue(label: "OpenAVCapture.AVCaptureMovieFileOutput.callbacks")
    private var current: Recording?
    /// The recording being switched away from: it gets audio until `current` has its first video frame.
    private var previous: Recording?
    /// Recordings finishing that still take audio up to their last video frame.
    private var draining: [Recording] = []

    init(queue: DispatchQueue) { self.queue = queue }

    /// The thread (on the work queue) showing a sample-accurate file output delegate a buffer, or 0: requests that
    /// delegate makes from that thread are handled at once, before that buffer. Atomic: read from any thread.
    private let sampleAccurateCallbackThread = Atomic<UInt>(0)

    /// Whether the caller is a sample-accurate file output delegate inside its buffer callback.
    var isInSampleAccurateCallback: Bool {
        sampleAccurateCallbackThread.load(ordering: .relaxed) == UInt(bitPattern: Int(bitPattern: pthread_self()))
    }

    func handle(_ work: Work) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch work {
        case .sample(let buffer, let connection, let isVideo):
            if isVideo { output?.videoHandled() }
            if let output, let (delegate, isSampleAccurate) = output.fileDelegate {
                if isSampleAccurate {
                    sampleAccurateCallbackThread.store(UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .relaxed)
                }
                delegate.fileOutput(output, didOutputSampleBuffer: buffer, from: connection)
                sampleAccurateCallbackThread.store(0, ordering: .relaxed)
            }
            if isVideo {
                handleVideo(buffer, from: connection)
            } else {
                handleAudio(buffer, from: connection)
            }
        case .start(let request): begin(request)
        case .stop:
            if let previous { end(previous, error: nil, drain: true) }
            if let current { end(current, error: nil, drain: true) }
        case .pause: pause()
        case .resume: resume()
        case .sessionStopped:
            for recording in draining { finalize(recording) }
            if let previous { end(previous, error: nil, drain: false) }
            if let current { end(current, error: nil, drain: false) }
        case .metadataChanged:
            let metadata = output?.recordingFragmentIntervalAndMetadata.1 ?? []
            for recording in [previous, current].compactMap({ $0 }) {
                recording.writer?.replaceMetadataWhileWriting(metadata)
            }
        case .inputFailed(let error, let connection):
            for recording in [previous, current].compactMap({ $0 })
            where recording.request.connections.contains(where: { $0 === connection }) {
                guard !keepsRecording(recording, through: error, of: connection) else { continue }
                end(recording, error: Self.finishedError(error.code, error.localizedDescription), drain: true)
            }
        }
        output?.setActive(current != nil || previous != nil || !draining.isEmpty)
    }

    // MARK: Requests

    private func begin(_ request: Request) {
        let path = request.url.path
        if FileManager.default.fileExists(atPath: path) {
            let error = AVError(
                .fileAlreadyExists, "A file already exists at \(path); it was left untouched.",
                suggestion: "Remove the file or choose another URL.",
                extra: [AVErrorRecordingSuccessfullyFinishedKey: false])
            reportFinish(request, error: error, recordedDuration: .zero)
            return
        }
        if request.limits.minFreeDiskSpace > 0,
            let free = Self.freeSpace(at: request.url), free < request.limits.minFreeDiskSpace
        {
            let error = AVError(
                .diskFull, "Only \(free) bytes are free for \(path), less than minFreeDiskSpaceLimit.",
                suggestion: "Free some space or lower minFreeDiskSpaceLimit.",
                extra: [AVErrorRecordingSuccessfullyFinishedKey: false])
            reportFinish(request, error: error, recordedDuration: .zero)
            return
        }
        for recording in draining { finalize(recording) }
        if let previous { end(previous, error: nil, drain: false) }
        if let current {
            if current.didStart && current.hasVideo && (current.phase == .recording || current.phase == .resuming) {
                previous = current
            } else {
                end(current, error: nil, drain: false)
            }
        }
        current = Recording(request)
    }

    private func pause() {
        guard let recording = current else { return }
        switch recording.phase {
        case .recording, .resuming, .waiting:
            let wasStarted = recording.didStart
            recording.phase = wasStarted ? .paused : .waiting
            if recording.phase == .paused {
                releaseHeldAudio(recording, upTo: recording.videoEdge + recording.offset)
                recording.heldAudio.removeAll()
                recording.pendingAudio.removeAll()
                callback(recording) { $0.fileOutput($1, didPauseRecordingTo: $2, from: $3) }
            }
        default: break
        }
    }

    private func resume() {
        guard let recording = current, recording.phase == .paused else { return }
        recording.phase = .resuming
        callback(recording) { $0.fileOutput($1, didResumeRecordingTo: $2, from: $3) }
    }

    // MARK: Samples

    private func handleVideo(_ buffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        guard let recording = current, recording.request.connections.contains(where: { $0 === connection }) else {
            return
        }
        let time = buffer.presentationTimeStamp
        guard time.isNumeric else { return }
        let duration = Self.frameDuration(buffer)
        if Self.cannotStartDecoding(buffer) {
            // A camera's H.264 frame that needs the frames before it: a file (or a resumed one) starts at a key
            // frame. Until the new file starts, the one it replaces keeps the frames, so a switch loses none.
            switch recording.phase {
            case .waiting:
                if let previous, checkLimits(previous, at: time - previous.offset, duration: duration) {
                    appendVideo(buffer, duration: duration, to: previous)
                }
                return
            case .resuming: return
            case .recording where recording.awaitsKeyFrame: return
            default: break
            }
        }
        recording.awaitsKeyFrame = false
        if !recording.lostConnections.isEmpty { noteReturn(of: connection, in: recording, at: time) }
        switch recording.phase {
        case .waiting:
            guard makeWriter(recording, firstVideo: buffer) else { return }
            recording.start = time
            recording.writer?.startSession(atSourceTime: time)
            recording.phase = .recording
            let pending = recording.pendingAudio
            recording.pendingAudio.removeAll()
            if let previous {
                // The old file's sound ends where this frame begins, to the sample; sound from before it that is
                // still to come goes there too (a drain), the rest to the new file, cut at its start.
                let edge = time - previous.offset
                for audio in pending { appendAudio(audio, to: previous, before: edge) }
                end(previous, error: nil, drain: true, until: edge)
            }
            appendVideo(buffer, duration: duration, to: recording)
            for audio in pending { appendAudio(audio, to: recording) }
        case .resuming:
            recording.offset = time - recording.videoEdge
            recording.resumedAudioFrom = max(recording.videoEdge, recording.audioEdge)
            recording.phase = .recording
            let pending = recording.pendingAudio
            recording.pendingAudio.removeAll()
            if checkLimits(recording, at: time - recording.offset, duration: duration) {
                appendVideo(buffer, duration: duration, to: recording)
                for audio in pending { appendAudio(audio, to: recording) }
            }
        case .recording:
            if let series = recording.request.segments, let writer = recording.writer,
                series.isDue(
                    elapsed: time - recording.offset - recording.start, frameDuration: duration,
                    encodedBytes: writer.encodedBytes.value),
                cutSegment(recording, of: series, at: time)
            {
                // This frame opens the next segment.
                handleVideo(buffer, from: connection)
                return
            }
            if checkLimits(recording, at: time - recording.offset, duration: duration) {
                releaseHeldAudio(recording, upTo: time)
                appendVideo(buffer, duration: duration, to: recording)
                recording.lastFrameTime = time
            }
        case .paused, .draining, .finished:
            break
        }
    }

    private func handleAudio(_ buffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        for recording in draining where recording.request.connections.contains(where: { $0 === connection }) {
            // The sound ends with the picture, to the sample.
            appendAudio(buffer, to: recording, before: recording.drainUntil)
            let end = buffer.presentationTimeStamp - recording.offset + Self.audioDuration(buffer)
            if !(end < recording.drainUntil) { finalize(recording) }
        }
        guard let recording = current, recording.request.connections.contains(where: { $0 === connection }) else {
            return
        }
        let time = buffer.presentationTimeStamp
        if !recording.lostConnections.isEmpty { noteReturn(of: connection, in: recording, at: time) }
        switch recording.phase {
        case .waiting where recording.hasVideo, .resuming where recording.hasVideo:
            recording.pendingAudio.append(buffer)
            if recording.pendingAudio.count > 1000 { recording.pendingAudio.removeFirst() }
        case .waiting:
            guard makeWriter(recording, firstVideo: nil, firstAudio: buffer) else { return }
            recording.start = time
            recording.writer?.startSession(atSourceTime: time)
            recording.phase = .recording
            appendAudio(buffer, to: recording)
        case .resuming:
            recording.offset = time - recording.audioEdge
            recording.phase = .recording
            appendAudio(buffer, to: recording)
        case .paused where recording.hasVideo:
            // The pause ends the sound where it ends the picture, to the sample, as a stop does: sound that
            // arrives after the pause but belongs before the last frame's end is still written.
            appendAudio(buffer, to: recording, before: recording.videoEdge)
        case .recording where recording.hasVideo && recording.request.segments != nil:
            // A segment's sound waits for its video frame, so a cut can split it at the frame that opens the next.
            recording.heldAudio.append(buffer)
            releaseHeldAudio(recording, upTo: recording.lastFrameTime)
            // The picture stalled: sound goes on rather than piling up.
            while recording.heldAudio.count > 1000 { appendAudio(recording.heldAudio.removeFirst(), to: recording) }
        case .recording:
            let written = time - recording.offset
            if recording.hasVideo {
                // Sound stops at maxRecordedDuration to the sample (the frame that crosses it ends the recording,
                // and the drain brings the sound up to the last frame's end, which is the limit at most).
                let limit = recording.start + recording.request.limits.maxDuration
                if limit.isNumeric {
                    appendAudio(buffer, to: recording, before: limit)
                } else {
                    appendAudio(buffer, to: recording)
                }
                // The camera is away (survivesDisconnection): no frame will cross the limit, so the sound ends it.
                if limit.isNumeric, recording.isMissingVideo, !(written + Self.audioDuration(buffer) < limit) {
                    finishForLimit(
                        recording, .maximumDurationReached,
                        "The recording reached maxRecordedDuration (\(recording.request.limits.maxDuration.seconds) s).")
                }
                break
            }
            // Sound alone ends at maxRecordedDuration to the sample: the frames of the buffer that crosses it that
            // still fit are written before the limit ends the recording.
            if let head = Self.framesBefore(recording.request.limits.maxDuration - (written - recording.start), buffer) {
                appendAudio(head, to: recording)
            }
            if checkLimits(recording, at: written, duration: Self.audioDuration(buffer)) {
                appendAudio(buffer, to: recording)
            }
        case .paused, .draining, .finished:
            break
        }
    }

    /// The most buffers an input may hold waiting for the encoder before the next is dropped as late: a device
    /// that runs faster than the encoder (a free-running virtual one, a movie file read at full speed) would
    /// otherwise fill memory. Video: 8 frames, as many as a camera lends. Audio: 100 buffers, a second or two of
    /// periods, so a real-time recording whose encoder stalls briefly loses nothing.
    static let maximumVideoBacklog = 8
    static let maximumAudioBacklog = 100

    private func appendVideo(_ buffer: CMSampleBuffer, duration: CMTime, to recording: Recording) {
        guard let input = recording.videoInput else { return }
        // A track holds the camera's H.264 as it came or encoded pictures, never both (a frame of the other kind can
        // only come at the instant a recording starts or stops).
        guard recording.isInterFramePassthrough == Self.isInterFrameCompressed(buffer) else { return }
        guard input.pendingBufferCount < Self.maximumVideoBacklog else {
            output?.encoderWasBehind(isVideo: true)
            if recording.isInterFramePassthrough { recording.awaitsKeyFrame = true }
            return
        }
        let written = buffer.presentationTimeStamp - recording.offset
        guard let retimed = Self.retimed(buffer, to: written, sampleDuration: duration),
            retimed.imageBuffer != nil ? input.append(retimed) : input.appendAsItComes(retimed)
        else {
            writerFailed(recording)
            return
        }
        recording.videoEdge = written + duration
        didWrite(recording)
    }

    /// Appends what of `buffer` comes before written time `edge`: all of it, its first frames (cut to the sample),
    /// or nothing. The one place sound is cut at an edge: a limit, a pause, the end of a drain.
    private func appendAudio(_ buffer: CMSampleBuffer, to recording: Recording, before edge: CMTime) {
        let room = edge - (buffer.presentationTimeStamp - recording.offset)
        // To the sample: a buffer that ends a nanosecond past the edge fits whole, one that begins a nanosecond
        // before it does not fit at all.
        let frames = Self.frameCount(in: room, of: buffer)
        guard frames > 0 else { return }
        appendAudio(frames < buffer.numSamples ? Self.framesBefore(room, buffer) : buffer, to: recording)
    }

    private func appendAudio(_ buffer: CMSampleBuffer?, to recording: Recording) {
        guard var buffer, let input = recording.audioInput, recording.start.isNumeric else { return }
        if recording.resumedAudioFrom.isNumeric {
            // The first sound after a resume starts where the file's sound stopped, to the sample: what comes
            // before that edge was heard before the pause (or while paused) and is left out.
            let skipped = recording.resumedAudioFrom - (buffer.presentationTimeStamp - recording.offset)
            if skipped > .zero {
                guard let tail = Self.framesAfter(skipped, buffer) else { return }
                buffer = tail
            }
            recording.resumedAudioFrom = .invalid
        }
        guard input.pendingBufferCount < Self.maximumAudioBacklog else {
            output?.encoderWasBehind(isVideo: false)
            return
        }
        var written = buffer.presentationTimeStamp - recording.offset
        if written < recording.start {
            // It straddles the file's start (the first frame of a file switched to): its frames from the start on.
            guard let tail = Self.framesAfter(recording.start - written, buffer) else { return }
            buffer = tail
            // Its first frame is the start's, to the sample: device times are host-clock nanoseconds, so the tail's
            // time may fall a nanosecond before the start (or the buffer began within half a sample of it).
            written = max(recording.start, buffer.presentationTimeStamp - recording.offset)
        }
        // Overlapping what was written before a pause: left out.
        guard written >= recording.start else { return }
        if recording.audioEdge.isNumeric, written < recording.audioEdge - CMTime(value: 1, timescale: 1000) { return }
        let rate = buffer.formatDescription?.audioStreamBasicDescription?.mSampleRate ?? 48_000
        let each = CMTime(value: 1, timescale: Int32(rate.rounded()))
        guard let retimed = Self.retimed(buffer, to: written, sampleDuration: each) else {
            writerFailed(recording)
            return
        }
        if let followed = follow(retimed, in: recording) {
            guard input.append(followed) else {
                writerFailed(recording)
                return
            }
        }
        recording.audioEdge = written + Self.audioDuration(buffer)
        didWrite(recording)
    }

    /// `buffer` resampled to follow the session clock (see ``AudioClockFollower``), nil while the resampler holds
    /// it; `buffer` itself for sound the follower cannot take. The measured drift goes to `recordingStatistics`.
    private func follow(_ buffer: CMSampleBuffer, in recording: Recording) -> CMSampleBuffer? {
        guard recording.followsClock, let description = buffer.formatDescription?.audioStreamBasicDescription else {
            return buffer
        }
        do throws(MediaCodecsError) {
            if recording.clockFollower == nil { recording.clockFollower = try AudioClockFollower(description) }
            let followed = try recording.clockFollower?.follow(buffer)
            if let drift = recording.clockFollower?.measuredDriftPPM { output?.audioClockDriftWasMeasured(drift) }
            return followed
        } catch {
            // Not linear PCM the follower takes, or libswresample failed: the sound goes in as it comes.
            recording.followsClock = false
            recording.clockFollower = nil
            return buffer
        }
    }

    private func didWrite(_ recording: Recording) {
        if !recording.didStart {
            recording.didStart = true
            callback(recording) { $0.fileOutput($1, didStartRecordingTo: $2, from: $3) }
        }
        guard recording === current else { return }
        // The muxer writes a fragment at a time; between fragments the encoded bytes are the better measure.
        let size = max(Self.fileSize(recording.request.url), recording.writer?.encodedBytes.value ?? 0)
        let duration = recording.recordedDuration
        let generation = recording.request.generation
        output?.fileState.withLock { state in
            guard self.output?.currentGeneration == generation else { return }
            state.recordedDuration = duration
            state.recordedFileSize = size
        }
    }

    // MARK: Segments (ours)

    /// Cuts segment `recording` of `series` before its frame at source time `time`: the next segment begins (the
    /// caller hands it that frame), the sound held so far split at `time`. Returns false, leaving the segment
    /// going, when the volume lacks `minFreeDiskSpaceLimit` for a new file (the segment then meets the limit).
    private func cutSegment(_ recording: Recording, of series: AVCaptureRecordingSegments, at time: CMTime) -> Bool {
        guard let output else { return false }
        var limits = recording.request.limits
        if limits.minFreeDiskSpace > 0, let free = Self.freeSpace(at: recording.request.url),
            free < limits.minFreeDiskSpace
        {
            return false
        }
        let length = time - recording.offset - recording.start
        // maxRecordedDuration bounds the series: the next segment gets what is left of it.
        if limits.maxDuration.isNumeric { limits.maxDuration = limits.maxDuration - length }
        let url = series.nextURL(afterSegmentOf: length)
        let request = Request(
            url: url, fileType: recording.request.fileType, delegate: recording.request.delegate,
            generation: output.startNextSegment(url), limits: limits, connections: recording.request.connections,
            segments: series, survivesDisconnection: recording.request.survivesDisconnection)
        releaseHeldAudio(recording, upTo: time)
        let carried = recording.heldAudio
        recording.heldAudio.removeAll()
        begin(request)
        // What was held from the cut on belongs to the new segment: it takes it with its first frame.
        current?.pendingAudio = carried
        // A device still unplugged is still missing from the next segment: its gap there runs from the start.
        current?.lostConnections = recording.lostConnections.mapValues { _ in .invalid }
        return true
    }

    /// Writes the held sound of `recording` that comes before source time `edge`, the buffer that straddles it cut
    /// to the sample (its tail stays held). A buffer that cannot be cut (not PCM) is written whole.
    private func releaseHeldAudio(_ recording: Recording, upTo edge: CMTime) {
        guard edge.isNumeric else { return }
        // To the sample: a buffer that begins a nanosecond before the edge begins at it.
        while let first = recording.heldAudio.first,
            Self.frameCount(in: edge - first.presentationTimeStamp, of: first) > 0
        {
            recording.heldAudio.removeFirst()
            let room = edge - first.presentationTimeStamp
            guard let head = Self.framesBefore(room, first),
                let tail = Self.framesAfter(room, first)
            else {
                appendAudio(first, to: recording)
                continue
            }
            appendAudio(head, to: recording)
            recording.heldAudio.insert(tail, at: 0)
            return
        }
    }

    /// Whether a sample at written time `time` lasting `duration` may be written; ends the recording when a limit
    /// says no.
    ///
    /// The size limits are the writer's to apply, packet by packet, against a bound of the finished file
    /// (``FileSizeLimits``): here the disk budget is brought up to date and a limit the writer met ends the
    /// recording.
    private func checkLimits(_ recording: Recording, at time: CMTime, duration: CMTime) -> Bool {
        let limits = recording.request.limits
        let end = time + duration - recording.start
        if limits.maxDuration.isNumeric, end > limits.maxDuration + CMTime(value: 1, timescale: 1000) {
            finishForLimit(
                recording, .maximumDurationReached,
                "The recording reached maxRecordedDuration (\(limits.maxDuration.seconds) s).")
            return false
        }
        guard let writer = recording.writer else { return true }
        updateDiskBudget(recording, writer: writer)
        switch writer.sizeLimits.reason {
        case .fileSize?:
            finishForLimit(
                recording, .maximumFileSizeReached,
                "The recording reached maxRecordedFileSize (\(limits.maxFileSize) bytes).")
            return false
        case .disk?:
            let free = Self.freeSpace(at: recording.request.url) ?? 0
            finishForLimit(
                recording, .diskFull,
                limits.minFreeDiskSpace > 0
                    ? "Free space would fall below minFreeDiskSpaceLimit (\(free) bytes free)."
                    : "The disk is nearly full (\(free) bytes free); the recording stopped while it could finish.")
            return false
        case nil:
            return true
        }
    }

    /// The free bytes a recording leaves on its volume: `minFreeDiskSpaceLimit`, or 1 MiB when none is set, so a
    /// full disk is met before a write fails.
    static func freeSpaceFloor(_ limits: Limits) -> Int64 {
        limits.minFreeDiskSpace > 0 ? limits.minFreeDiskSpace : 1 << 20
    }

    /// Tells the writer how large the file may grow before the volume's free space would fall below the floor: the
    /// bytes the file has on disk plus those free, less the floor. Read again for every sample, so space others
    /// take or give back counts at once (`statvfs` costs a microsecond).
    private func updateDiskBudget(_ recording: Recording, writer: AVAssetWriter) {
        guard let free = Self.freeSpace(at: recording.request.url) else { return }
        let budget = Self.fileSize(recording.request.url) + free - Self.freeSpaceFloor(recording.request.limits)
        writer.sizeLimits.diskBudget.store(max(0, budget), ordering: .relaxed)
    }

    private func finishForLimit(_ recording: Recording, _ code: AVError.Code, _ description: String) {
        if recording === current {
            let generation = recording.request.generation
            output?.fileState.withLock { state in
                guard self.output?.currentGeneration == generation else { return }
                state.isRecording = false
                state.isRecordingPaused = false
            }
        }
        end(recording, error: Self.finishedError(code, description), drain: true)
    }

    // MARK: Ending

    /// Ends `recording`: with `drain`, audio is still taken up to the last video frame's end, or to written time
    /// `until` when given (for at most 0.5 s).
    private func end(_ recording: Recording, error: AVError?, drain: Bool, until: CMTime = .invalid) {
        if recording === current { current = nil }
        let wasSwitchedFrom = recording === previous
        if wasSwitchedFrom { previous = nil }
        guard recording.phase != .draining, recording.phase != .finished else { return }
        recording.finishError = error
        if recording.phase == .recording, !recording.heldAudio.isEmpty, recording.videoEdge.isNumeric {
            releaseHeldAudio(recording, upTo: (until.isNumeric ? until : recording.videoEdge) + recording.offset)
            recording.heldAudio.removeAll()
        }
        let drainUntil = until.isNumeric ? until : recording.videoEdge
        if wasSwitchedFrom, let next = current, next.phase == .waiting, drainUntil.isNumeric {
            // The file switched to never got its first frame (the input ended, a stop came first): the sound it
            // kept waiting for it came before this file's last frame ended, so it is this file's.
            for audio in next.pendingAudio { appendAudio(audio, to: recording, before: drainUntil) }
            next.pendingAudio.removeAll()
        }
        let audioBehind =
            recording.hasVideo && recording.audioInput != nil && drainUntil.isNumeric
            && !(recording.audioEdge.isNumeric && recording.audioEdge >= drainUntil)
        if drain, recording.didStart, audioBehind, recording.phase == .recording {
            recording.phase = .draining
            recording.drainUntil = drainUntil
            draining.append(recording)
            queue.asyncAfter(deadline: .now() + 0.5) { [self] in
                if recording.phase == .draining { finalize(recording) }
                output?.setActive(current != nil || previous != nil || !draining.isEmpty)
            }
        } else {
            finalize(recording)
        }
    }

    private func finalize(_ recording: Recording) {
        dispatchPrecondition(condition: .onQueue(queue))
        draining.removeAll { $0 === recording }
        if recording === current { current = nil }
        if recording === previous { previous = nil }
        guard recording.phase != .finished else { return }
        recording.phase = .finished
        let request = recording.request
        guard let writer = recording.writer, recording.didStart else {
            recording.writer?.cancelWriting()
            let error =
                recording.finishError
                ?? AVError(
                    .noDataCaptured, "The recording ended before any sample was captured; no file was written.",
                    suggestion: "Start the session and wait for the first frames before stopping.",
                    extra: [AVErrorRecordingSuccessfullyFinishedKey: false])
            reportFinish(request, error: error, recordedDuration: .zero)
            return
        }
        let error = recording.finishError
        let duration = recording.recordedDuration
        callback(recording) { $0.fileOutput($1, willFinishRecordingTo: $2, from: $3, error: error) }
        // The few frames the clock follower's resampler still holds end the sound.
        if let tail = try? recording.clockFollower?.flush() { _ = recording.audioInput?.append(tail) }
        recording.videoInput?.markAsFinished()
        recording.audioInput?.markAsFinished()
        writer.finishWriting { [self] in
            let failure: (any Error)? =
                if writer.status == .completed {
                    error
                } else if writer.fileAfterFailure == .complete, !writer.keptFragmentedFile {
                    // An encoder failed: the file was finished with everything written before.
                    error
                        ?? Self.finishedError(
                            (writer.error as? AVError)?.code ?? .unknown,
                            "The movie holds what was recorded before the failure: "
                                + ((writer.error as? AVError)?.localizedDescription ?? "writing failed."))
                } else if writer.keptFragmentedFile {
                    // Every sample is in the file, as movie fragments: playable, just not rewritten with the
                    // index first (the disk had no room for the rewrite).
                    error
                        ?? Self.finishedError(
                            (writer.error as? AVError)?.code ?? .diskFull,
                            "The movie was kept as written, in fragments: "
                                + ((writer.error as? AVError)?.localizedDescription ?? "it could not be rewritten."))
                } else if let full = Self.filledDisk(writer) {
                    error ?? full
                } else {
                    // The writer removed a file with nothing playable, or kept its complete fragments.
                    Self.unfinished(error ?? writer.error, url: request.url)
                }
            reportFinish(request, error: failure, recordedDuration: duration)
        }
    }

    /// The writer failed: the file was finished with what was written, cut back to its complete fragments, or
    /// removed when nothing playable was in it (``AVAssetWriter/fileAfterFailure``); the delegate hears which.
    private func writerFailed(_ recording: Recording) {
        let writerError = recording.writer?.error
        if recording.writer?.fileAfterFailure == .complete {
            recording.finishError = Self.finishedError(
                (writerError as? AVError)?.code ?? .unknown,
                "The movie holds what was recorded before the failure: "
                    + ((writerError as? AVError)?.localizedDescription ?? "writing failed."))
        } else if let writer = recording.writer, let full = Self.filledDisk(writer) {
            recording.finishError = full
        } else {
            recording.finishError = Self.unfinished(writerError, url: recording.request.url)
        }
        finalize(recording)
    }

    // MARK: Writer

    private func makeWriter(
        _ recording: Recording, firstVideo: CMSampleBuffer?, firstAudio: CMSampleBuffer? = nil
    ) -> Bool {
        guard let output else { return false }
        let request = recording.request
        let writer: AVAssetWriter
        do {
            writer = try AVAssetWriter(outputURL: request.url, fileType: request.fileType)
        } catch {
            recording.finishError = error as? AVError
            finalize(recording)
            return false
        }
        let (fragmentInterval, metadata) = output.recordingFragmentIntervalAndMetadata
        writer.movieFragmentInterval = fragmentInterval
        writer.metadata = metadata
        let limits = request.limits
        if limits.maxFileSize > 0 {
            writer.sizeLimits.maximumFileBytes.store(limits.maxFileSize, ordering: .relaxed)
            // Fragments of a quarter of the limit at most: what reaches the disk follows the recording closely,
            // and a crash loses a quarter of the allowed size at most.
            writer.maximumFragmentBytes = Int(
                clamping: min(Int64(Muxer.Options.defaultMaximumFragmentBytes), max(16 << 10, limits.maxFileSize / 4)))
        }
        writer.minimumFreeBytesAfterRewrite = Self.freeSpaceFloor(limits)
        updateDiskBudget(recording, writer: writer)
        if let video = request.connections.first(where: { AVCaptureFileOutput.isVideo($0) }), let firstVideo,
            Self.isInterFrameCompressed(firstVideo), let format = firstVideo.formatDescription
        {
            // The camera's H.264 as it comes: a track without an encoder, described by the camera's parameter sets.
            let input = AVAssetWriterInput(mediaType: .video, outputSettings: nil, sourceFormatHint: format)
            input.expectsMediaDataInRealTime = true
            input.transform = CGAffineTransform(rotationAngle: video.videoRotationAngle * .pi / 180)
            writer.add(input)
            recording.videoInput = input
            recording.isInterFramePassthrough = true
            output.noteRealTimeAdvice(nil)
        } else if let video = request.connections.first(where: { AVCaptureFileOutput.isVideo($0) }), let firstVideo,
            let hint = Self.pictureDescription(of: firstVideo)
        {
            var settings = output.recordingSettings(for: video, fileType: request.fileType)
            settings[AVVideoWidthKey] = Int(hint.dimensions.width)
            settings[AVVideoHeightKey] = Int(hint.dimensions.height)
            let codec = settings[AVVideoCodecKey] as? AVVideoCodecType ?? .h264
            var properties = settings[AVVideoCompressionPropertiesKey] as? [String: Any]
            let frameDuration = Self.frameDuration(firstVideo)
            let frameRate = max(1, Int((1 / frameDuration.seconds).rounded()))
            if codec == .h264 || codec == .hevc, properties?[AVVideoExpectedSourceFrameRateKey] == nil {
                properties?[AVVideoExpectedSourceFrameRateKey] = frameRate
                settings[AVVideoCompressionPropertiesKey] = properties
            }
            output.noteRealTimeAdvice(Self.realTimeAdvice(codec: codec, dimensions: hint.dimensions, frameRate: frameRate))
            // The encoder is made for the frames' own pixel format (the conversion stage delivers one it takes) and
            // tags the stream with their Y'CbCr matrix: a description of the picture itself carries both.
            let input = AVAssetWriterInput(mediaType: .video, outputSettings: settings, sourceFormatHint: hint)
            input.expectsMediaDataInRealTime = true
            // With a size limit the file may end within its first seconds: keep them to the average rate, so the
            // limit holds as much of the recording as it can.
            input.keepsFirstSecondToAverageRate = request.limits.maxFileSize > 0
            input.transform = CGAffineTransform(rotationAngle: video.videoRotationAngle * .pi / 180)
            writer.add(input)
            recording.videoInput = input
        }
        if let audio = request.connections.first(where: { !AVCaptureFileOutput.isVideo($0) }),
            let hint = firstAudio?.formatDescription ?? recording.pendingAudio.first?.formatDescription
                ?? audio.inputPorts.first?.formatDescription
        {
            var settings = output.recordingSettings(for: audio, fileType: request.fileType)
            if let description = hint.audioStreamBasicDescription {
                settings[AVSampleRateKey] = Int(description.mSampleRate.rounded())
                settings[AVNumberOfChannelsKey] = Int(description.mChannelsPerFrame)
            }
            let input = AVAssetWriterInput(mediaType: .audio, outputSettings: settings, sourceFormatHint: hint)
            input.expectsMediaDataInRealTime = true
            writer.add(input)
            recording.audioInput = input
        }
        recording.writer = writer
        guard writer.startWriting() else {
            recording.finishError = Self.unfinished(writer.error, url: request.url)
            finalize(recording)
            return false
        }
        return true
    }

    // MARK: Callbacks

    func callback(
        _ recording: Recording,
        _ body:
            @escaping (any AVCaptureFileOutputRecordingDelegate, AVCaptureFileOutput, URL, [AVCaptureConnection]) ->
            Void
    ) {
        guard let output else { return }
        let request = recording.request
        let call = UncheckedSendable({ body(request.delegate, output, request.url, request.connections) })
        callbackQueue.async { call.value() }
    }

    /// Tells the delegate the request ended (its last callback) and clears the output's state if it was current.
    private func reportFinish(_ request: Request, error: (any Error)?, recordedDuration: CMTime) {
        guard let output else { return }
        let size = Self.fileSize(request.url)
        request.segments?.segmentFinished(request.url, hasFile: size > 0)
        output.fileState.withLock { state in
            guard output.currentGeneration == request.generation else { return }
            state.isRecording = false
            state.isRecordingPaused = false
            state.recordedDuration = recordedDuration
            if size > 0 { state.recordedFileSize = size }
        }
        let call = UncheckedSendable({
            request.delegate.fileOutput(
                output, didFinishRecordingTo: request.url, from: request.connections, error: error)
        })
        callbackQueue.async { call.value() }
    }

    // MARK: Helpers

    static func finishedError(_ code: AVError.Code, _ description: String) -> AVError {
        AVError(code, description, extra: [AVErrorRecordingSuccessfullyFinishedKey: true])
    }

    /// The disk filled up under the writer (a write failed with `ENOSPC`, faster than the free-space floor could
    /// see coming) and the file was cut back to the fragments complete on disk: a movie that plays to its end, so
    /// the recording counts as finished, as Apple's does on `.diskFull`. Nil for any other failure.
    static func filledDisk(_ writer: AVAssetWriter) -> AVError? {
        guard writer.fileAfterFailure == .partial, let error = writer.error as? AVError, error.code == .diskFull
        else { return nil }
        return finishedError(
            .diskFull, "The disk filled up; the movie holds what reached the disk in complete fragments before it "
                + "did. \(error.localizedDescription)")
    }

    static func unfinished(_ error: (any Error)?, url: URL) -> AVError {
        var info = (error as? AVError)?.userInfo ?? [NSLocalizedDescriptionKey: "Writing \(url.path) failed."]
        info[AVErrorRecordingSuccessfullyFinishedKey] = false
        return AVError((error as? AVError)?.code ?? .unknown, userInfo: info)
    }

    /// What the encoder of a recording whose first frame is `buffer` is made for: the picture's own description
    /// (its pixel format, size and Y'CbCr matrix), or for a compressed frame written as it comes (a camera's JPEG)
    /// full-range NV12 of its size with JPEG's BT.601 matrix, what its decoded pictures would be.
    static func pictureDescription(of buffer: CMSampleBuffer) -> CMFormatDescription? {
        if let image = buffer.imageBuffer { return (try? CMFormatDescription(imageBuffer: image)) ?? buffer.formatDescription }
        guard let format = buffer.formatDescription, format.mediaType == .video else { return nil }
        return try? CMFormatDescription(
            videoCodecType: .init(rawValue: kCVPixelFormatType_420YpCbCr8BiPlanarFullRange),
            width: Int(format.dimensions.width), height: Int(format.dimensions.height),
            extensions: [kCMFormatDescriptionExtension_YCbCrMatrix: kCVImageBufferYCbCrMatrix_ITU_R_601_4])
    }

    /// What ``AVCaptureRecordingStatistics/realTimeAdvice`` says of encoding `codec` at this size and rate here.
    static func realTimeAdvice(codec type: AVVideoCodecType, dimensions: CMVideoDimensions, frameRate: Int) -> String? {
        let codec: VideoEncoder.Codec
        switch type {
        case .h264: codec = .h264
        case .hevc: codec = .hevc
        default: return nil
        }
        let (width, height) = (Int(dimensions.width), Int(dimensions.height))
        return EncoderThreadPlan(codec: codec, width: width, height: height, frameRate: frameRate)
            .advice(codec: codec, width: width, height: height, frameRate: frameRate)
    }

    /// Whether `buffer` is a compressed frame of an inter-frame codec (a camera's H.264, in AVCC by now).
    static func isInterFrameCompressed(_ buffer: CMSampleBuffer) -> Bool {
        buffer.imageBuffer == nil && buffer.formatDescription?.mediaSubType == .h264
    }

    /// Whether `buffer` is an inter-frame codec's frame that is no key frame, or one still in Annex B (seen before
    /// any parameter sets, so it has no description a track could take): decoding cannot start there.
    static func cannotStartDecoding(_ buffer: CMSampleBuffer) -> Bool {
        guard isInterFrameCompressed(buffer), let format = buffer.formatDescription else { return false }
        return !CompressedFrameSync.isKeyFrame(buffer) || !H264Bitstream.isAVCC(format)
    }

    static func frameDuration(_ buffer: CMSampleBuffer) -> CMTime {
        let duration = buffer.duration
        return duration.isNumeric && duration > .zero ? duration : CMTime(value: 1, timescale: 30)
    }

    static func audioDuration(_ buffer: CMSampleBuffer) -> CMTime {
        let rate = buffer.formatDescription?.audioStreamBasicDescription?.mSampleRate ?? 48_000
        return CMTime(value: Int64(buffer.numSamples), timescale: Int32(rate.rounded()))
    }

    /// The first frames of an interleaved PCM buffer that fit in `room`, when the buffer lasts longer than `room`
    /// and at least one frame fits; nil otherwise (it fits whole, or nothing of it does).
    static func framesBefore(_ room: CMTime, _ buffer: CMSampleBuffer) -> CMSampleBuffer? {
        guard buffer.formatDescription?.audioStreamBasicDescription != nil else { return nil }
        let frames = frameCount(in: room, of: buffer)
        guard frames > 0, frames < buffer.numSamples else { return nil }
        return pcmFrames(0..<frames, of: buffer)
    }

    /// How many frames of `buffer` fit in `room`, to the nearest frame (0 when it is not positive): device times
    /// are host-clock nanoseconds, so the room is a sample count give or take a nanosecond.
    static func frameCount(in room: CMTime, of buffer: CMSampleBuffer) -> Int {
        guard room.isNumeric, room > .zero else { return 0 }
        return sampleIndex(at: room, of: buffer)
    }

    /// The index of the sample `offset` after a PCM buffer's start, to the nearest sample, halves away from zero
    /// (exact rational arithmetic, as the asset reader cuts): the one rounding every cut of the recording uses.
    private static func sampleIndex(at offset: CMTime, of buffer: CMSampleBuffer) -> Int {
        let rate = buffer.formatDescription?.audioStreamBasicDescription?.mSampleRate ?? 48_000
        return Int(offset.convertScale(Int32(rate.rounded()), method: .roundHalfAwayFromZero).value)
    }

    /// The frames of an interleaved PCM buffer after its first `skipped`, timed from there; nil when nothing of
    /// it is left (or it is not PCM, whose frames cannot be split).
    static func framesAfter(_ skipped: CMTime, _ buffer: CMSampleBuffer) -> CMSampleBuffer? {
        guard buffer.formatDescription?.audioStreamBasicDescription != nil else { return nil }
        guard skipped.isNumeric else { return buffer }
        let first = sampleIndex(at: skipped, of: buffer)
        guard first < buffer.numSamples else { return nil }
        guard first > 0 else { return buffer }
        return pcmFrames(first..<buffer.numSamples, of: buffer)
    }

    /// Frames `range` of an interleaved PCM buffer as a buffer of their own, timed from the first; nil when the
    /// buffer is not linear PCM (compressed packets cannot be cut) or the range is not inside it.
    private static func pcmFrames(_ range: Range<Int>, of buffer: CMSampleBuffer) -> CMSampleBuffer? {
        guard buffer.formatDescription?.audioStreamBasicDescription?.mFormatID == kAudioFormatLinearPCM else {
            return nil
        }
        return try? buffer.copy(samplesIn: range)
    }

    /// `buffer` moved to written time `time`; a compressed frame's decode time moves with it (a movie file's
    /// B-frames are decoded before they are shown).
    static func retimed(_ buffer: CMSampleBuffer, to time: CMTime, sampleDuration: CMTime) -> CMSampleBuffer? {
        if time == buffer.presentationTimeStamp { return buffer }
        let decodeTime = buffer.decodeTimeStamp
        return try? buffer.withNewTiming([
            CMSampleTimingInfo(
                duration: sampleDuration, presentationTimeStamp: time,
                decodeTimeStamp: decodeTime.isNumeric ? decodeTime + (time - buffer.presentationTimeStamp) : .invalid)
        ])
    }

    /// The recording's size so far (0 before the file exists), through the writers' storage funnel.
    static func fileSize(_ url: URL) -> Int64 {
        WriterStorage.fileSize(atPath: url.path) ?? 0
    }

    /// What is free beside the recording, through the writers' storage funnel.
    static func freeSpace(at url: URL) -> Int64? {
        WriterStorage.freeBytes(besides: url.path)
    }
}
