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
        /// A sample; `afterLoss` says sound was lost between the last audio buffer and this one (the recording's
        /// clock follower then leaves its place for silence instead of stretching over it).
        case sample(CMSampleBuffer, AVCaptureConnection, isVideo: Bool, afterLoss: Bool = false)
        /// A picture for the encoder the output shares with a publishing output (`AVCaptureFileOutput+SharedEncoder`).
        case sharedPicture(CMSampleBuffer, AVCaptureConnection)
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
        /// Where its samples fall in the file: start, pause offset, edges, the drain's edge.
        var timeline = RecordingTimeline()
        var pendingAudio: [CMSampleBuffer] = []
        var didStart = false
        /// The file's size on disk when last read, and when (read at most every 100 ms while writing).
        var sizeOnDisk: Int64 = 0
        var sizeReadAt: ContinuousClock.Instant?
        /// While draining: the error to finish with.
        var finishError: AVError?
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
                && ((connection.inputPorts.first?.input as? AVCaptureDeviceInput)?.device.uniqueID.hasPrefix("file:")
                    ?? false)
        }

        init(_ request: Request) {
            self.request = request
            hasVideo = request.connections.contains { AVCaptureFileOutput.isVideo($0) }
            hasAudio = request.connections.contains { !AVCaptureFileOutput.isVideo($0) }
        }

        var recordedDuration: CMTime {
            // A size limit stopped the writer there: later samples were given to it but not written.
            timeline.recordedDuration(hasVideo: hasVideo, stoppedAt: writer?.sizeLimits.stoppedAt)
        }
    }

    weak var output: AVCaptureFileOutput?
    let queue: DispatchQueue
    let callbackQueue = DispatchQueue(label: "OpenAVCapture.AVCaptureMovieFileOutput.callbacks")
    var current: Recording?
    /// The recording being switched away from: it gets audio until `current` has its first video frame.
    var previous: Recording?
    /// Recordings finishing that still take audio up to their last video frame.
    var draining: [Recording] = []
    /// How long a drain waits in host time, in seconds, when no picture comes and its microphone has not ended
    /// either: every device of the session went quiet. Five seconds; a test that must see a drain end without it
    /// sets it longer before recording (read on the work queue).
    var silentSessionBackstop = 5.0

    init(queue: DispatchQueue) { self.queue = queue }

    /// Whether a recording's writer inputs still hold buffers for their encoders. On the work queue.
    var hasPendingWrites: Bool {
        ([current, previous].compactMap { $0 } + draining).contains { recording in
            (recording.videoInput?.pendingBufferCount ?? 0) > 0 || (recording.audioInput?.pendingBufferCount ?? 0) > 0
        }
    }

    /// The thread (on the work queue) showing a sample-accurate file output delegate a buffer, or 0: requests that
    /// delegate makes from that thread are handled at once, before that buffer. Atomic: read from any thread.
    let sampleAccurateCallbackThread = Atomic<UInt>(0)

    /// Whether the caller is a sample-accurate file output delegate inside its buffer callback.
    var isInSampleAccurateCallback: Bool {
        sampleAccurateCallbackThread.load(ordering: .relaxed) == UInt(bitPattern: Int(bitPattern: pthread_self()))
    }

    func handle(_ work: Work) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch work {
        case .sample(let buffer, let connection, let isVideo, let afterLoss):
            if isVideo { output?.videoHandled() }
            if afterLoss { for recording in [previous, current] { recording?.clockFollower?.bufferWasLost() } }
            if let output, let (delegate, isSampleAccurate) = output.fileDelegate {
                if isSampleAccurate {
                    sampleAccurateCallbackThread.store(
                        UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .relaxed)
                }
                delegate.fileOutput(output, didOutputSampleBuffer: buffer, from: connection)
                sampleAccurateCallbackThread.store(0, ordering: .relaxed)
            }
            if isVideo {
                finishOutwaitedDrains(videoAt: buffer.presentationTimeStamp)
                handleVideo(buffer, from: connection)
            } else {
                handleAudio(buffer, from: connection)
            }
        case .sharedPicture(let picture, _):
            output?.videoHandled()
            // An IDR wherever the recording must start decoding: its first frame, a resume, after a frame left out.
            let needsKeyFrame =
                current.map { $0.phase == .waiting || $0.phase == .resuming || $0.awaitsKeyFrame } ?? false
            finishOutwaitedDrains(videoAt: picture.presentationTimeStamp)
            output?.encodeShared(picture, keyFrame: needsKeyFrame)
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
            // A drain waits for sound only: once the microphone has ended or failed (a movie file's sound track
            // ends as a disconnect, after its picture's), none is coming, so a recording ends without one and one
            // already draining is finished now. A camera's end still lets the sound catch up to its last frame.
            let soundEnded = !AVCaptureFileOutput.isVideo(connection)
            for recording in [previous, current].compactMap({ $0 })
            where recording.request.connections.contains(where: { $0 === connection }) {
                guard !keepsRecording(recording, through: error, of: connection) else { continue }
                end(recording, error: Self.finishedError(error.code, error.localizedDescription), drain: !soundEnded)
            }
            if soundEnded {
                for recording in draining where recording.request.connections.contains(where: { $0 === connection }) {
                    finalize(recording)
                }
            }
        }
        output?.setActive(current != nil || previous != nil || !draining.isEmpty)
    }

    // MARK: Requests

    func begin(_ request: Request) {
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
                releaseHeldAudio(recording, upTo: recording.timeline.videoEdge + recording.timeline.offset)
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
                if let previous, checkLimits(previous, at: previous.timeline.written(time), duration: duration) {
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
            recording.timeline.begin(at: time)
            recording.writer?.startSession(atSourceTime: time)
            recording.phase = .recording
            let pending = recording.pendingAudio
            recording.pendingAudio.removeAll()
            if let previous {
                // The old file's sound ends where this frame begins, to the sample; sound from before it that is
                // still to come goes there too (a drain), the rest to the new file, cut at its start.
                let edge = previous.timeline.written(time)
                for audio in pending { appendAudio(audio, to: previous, before: edge) }
                end(previous, error: nil, drain: true, until: edge)
            }
            appendVideo(buffer, duration: duration, to: recording)
            for audio in pending { appendAudio(audio, to: recording) }
        case .resuming:
            recording.timeline.resume(atVideo: time)
            recording.phase = .recording
            let pending = recording.pendingAudio
            recording.pendingAudio.removeAll()
            if checkLimits(recording, at: recording.timeline.written(time), duration: duration) {
                appendVideo(buffer, duration: duration, to: recording)
                for audio in pending { appendAudio(audio, to: recording) }
            }
        case .recording:
            if let series = recording.request.segments, let writer = recording.writer,
                series.isDue(
                    elapsed: recording.timeline.elapsed(at: time), frameDuration: duration,
                    encodedBytes: writer.encodedBytes.value),
                cutSegment(recording, of: series, at: time)
            {
                // This frame opens the next segment.
                handleVideo(buffer, from: connection)
                return
            }
            if checkLimits(recording, at: recording.timeline.written(time), duration: duration) {
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
            appendAudio(buffer, to: recording, before: recording.timeline.drainUntil)
            if recording.timeline.drainIsComplete(
                afterSoundAt: buffer.presentationTimeStamp, duration: Self.audioDuration(buffer))
            {
                finalize(recording)
            }
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
            recording.timeline.begin(at: time)
            recording.writer?.startSession(atSourceTime: time)
            recording.phase = .recording
            appendAudio(buffer, to: recording)
        case .resuming:
            recording.timeline.resume(atAudio: time)
            recording.phase = .recording
            appendAudio(buffer, to: recording)
        case .paused where recording.hasVideo:
            // The pause ends the sound where it ends the picture, to the sample, as a stop does: sound that
            // arrives after the pause but belongs before the last frame's end is still written.
            appendAudio(buffer, to: recording, before: recording.timeline.videoEdge)
        case .recording where recording.hasVideo && recording.request.segments != nil:
            // A segment's sound waits for its video frame, so a cut can split it at the frame that opens the next.
            recording.heldAudio.append(buffer)
            releaseHeldAudio(recording, upTo: recording.lastFrameTime)
            // The picture stalled: sound goes on rather than piling up.
            while recording.heldAudio.count > 1000 { appendAudio(recording.heldAudio.removeFirst(), to: recording) }
        case .recording:
            let written = recording.timeline.written(time)
            let start = recording.timeline.start
            if recording.hasVideo {
                // Sound stops at maxRecordedDuration to the sample (the frame that crosses it ends the recording,
                // and the drain brings the sound up to the last frame's end, which is the limit at most).
                let limit = start + recording.request.limits.maxDuration
                if limit.isNumeric {
                    appendAudio(buffer, to: recording, before: limit)
                } else {
                    appendAudio(buffer, to: recording)
                }
                // The camera is away (survivesDisconnection): no frame will cross the limit, so the sound ends it.
                if limit.isNumeric, recording.isMissingVideo, !(written + Self.audioDuration(buffer) < limit) {
                    finishForLimit(
                        recording, .maximumDurationReached,
                        "The recording reached maxRecordedDuration (\(recording.request.limits.maxDuration.seconds) s)."
                    )
                }
                break
            }
            // Sound alone ends at maxRecordedDuration to the sample: the frames of the buffer that crosses it that
            // still fit are written before the limit ends the recording.
            let room = recording.request.limits.maxDuration - (written - start)
            if let head = PCMSlicing.frames(before: room, of: buffer) {
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
        let written = recording.timeline.written(buffer.presentationTimeStamp)
        guard let retimed = Self.retimed(buffer, to: written, sampleDuration: duration),
            retimed.imageBuffer != nil ? input.append(retimed) : input.appendAsItComes(retimed)
        else {
            writerFailed(recording)
            return
        }
        recording.timeline.wroteVideo(at: written, duration: duration)
        output?.videoFrameWasWritten(backlog: input.pendingBufferCount)
        didWrite(recording)
    }

    /// Appends what of `buffer` comes before written time `edge`: all of it, its first frames (cut to the sample),
    /// or nothing. The one place sound is cut at an edge: a limit, a pause, the end of a drain.
    func appendAudio(_ buffer: CMSampleBuffer, to recording: Recording, before edge: CMTime) {
        let room = edge - recording.timeline.written(buffer.presentationTimeStamp)
        // To the sample: a buffer that ends a nanosecond past the edge fits whole, one that begins a nanosecond
        // before it does not fit at all.
        let frames = PCMSlicing.frameCount(in: room, of: buffer)
        guard frames > 0 else { return }
        appendAudio(frames < buffer.numSamples ? PCMSlicing.frames(before: room, of: buffer) : buffer, to: recording)
    }

    func appendAudio(_ buffer: CMSampleBuffer?, to recording: Recording) {
        guard let buffer, let input = recording.audioInput, recording.timeline.start.isNumeric else { return }
        // The first sound after a resume starts where the file's sound stopped, to the sample: what comes before
        // that edge was heard before the pause (or while paused) and is left out.
        guard let trimmed = recording.timeline.trimmedAfterResume(buffer) else { return }
        guard input.pendingBufferCount < Self.maximumAudioBacklog else {
            output?.encoderWasBehind(isVideo: false)
            recording.clockFollower?.bufferWasLost()
            return
        }
        // From the file's start on, and not overlapping what was written before a pause.
        guard let (placed, written) = recording.timeline.placement(of: trimmed) else { return }
        let rate = placed.formatDescription?.audioStreamBasicDescription?.mSampleRate ?? 48_000
        let each = CMTime(value: 1, timescale: Int32(rate.rounded()))
        guard let retimed = Self.retimed(placed, to: written, sampleDuration: each) else {
            writerFailed(recording)
            return
        }
        if let followed = follow(retimed, in: recording) {
            guard input.append(followed) else {
                writerFailed(recording)
                return
            }
        }
        recording.timeline.wroteAudio(at: written, duration: Self.audioDuration(placed))
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
        // The muxer writes a fragment at a time; between fragments the encoded bytes are the better measure. The
        // file changes only at a fragment (a second or more apart), so its size is read at most every 100 ms: a
        // stat per sample was about 1 % of a passthrough recording's CPU. The finish sets the finished file's size.
        let now = ContinuousClock.now
        if recording.sizeReadAt.map({ now - $0 >= .milliseconds(100) }) ?? true {
            recording.sizeOnDisk = Self.fileSize(recording.request.url)
            recording.sizeReadAt = now
        }
        let size = max(recording.sizeOnDisk, recording.writer?.encodedBytes.value ?? 0)
        let duration = recording.recordedDuration
        let generation = recording.request.generation
        output?.fileState.withLock { state in
            guard self.output?.currentGeneration == generation else { return }
            state.recordedDuration = duration
            state.recordedFileSize = size
        }
    }
}
