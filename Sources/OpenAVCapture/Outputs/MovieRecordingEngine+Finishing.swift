// How a recording ends (drained, finalized, or failed by its writer), the writer it is made with, and the
// callbacks that report it.

import CaptureGraph
import Foundation
import MediaCodecs
import Synchronization

extension MovieRecordingEngine {
    /// Ends `recording`: with `drain`, audio is still taken up to the last video frame's end, or to written time
    /// `until` when given, until the timeline says the sound got there (``RecordingTimeline``), or for at most
    /// ``drainBackstop`` when it does not come.
    func end(_ recording: Recording, error: AVError?, drain: Bool, until: CMTime = .invalid) {
        if recording === current { current = nil }
        let wasSwitchedFrom = recording === previous
        if wasSwitchedFrom { previous = nil }
        guard recording.phase != .draining, recording.phase != .finished else { return }
        recording.finishError = error
        let timeline = recording.timeline
        if recording.phase == .recording, !recording.heldAudio.isEmpty, timeline.videoEdge.isNumeric {
            releaseHeldAudio(recording, upTo: (until.isNumeric ? until : timeline.videoEdge) + timeline.offset)
            recording.heldAudio.removeAll()
        }
        let drainUntil = until.isNumeric ? until : timeline.videoEdge
        if wasSwitchedFrom, let next = current, next.phase == .waiting, drainUntil.isNumeric {
            // The file switched to never got its first frame (the input ended, a stop came first): the sound it
            // kept waiting for it came before this file's last frame ended, so it is this file's.
            for audio in next.pendingAudio { appendAudio(audio, to: recording, before: drainUntil) }
            next.pendingAudio.removeAll()
        }
        let audioBehind =
            recording.hasVideo && recording.audioInput != nil && recording.timeline.isSoundBehind(drainUntil)
        if drain, recording.didStart, audioBehind, recording.phase == .recording {
            recording.phase = .draining
            recording.timeline.drain(until: drainUntil)
            draining.append(recording)
            // The sound's own arrival ends the drain (`handleAudio`), and so does its microphone's end (`handle`,
            // `.inputFailed`); the picture running `drainBackstop` past the edge ends it on the session's clock
            // (`finishOutwaitedDrains`); this is for a session whose devices all went quiet, where no time comes
            // from them.
            queue.asyncAfter(deadline: .now() + silentSessionBackstop) { [self] in
                if recording.phase == .draining { finalize(recording) }
                output?.setActive(current != nil || previous != nil || !draining.isEmpty)
            }
        } else {
            finalize(recording)
        }
    }

    /// How long a drain waits, on the session's clock (the picture's time), for sound that does not come at all (a
    /// microphone that stalled or went away as the recording ended): half a second, more than any microphone's period.
    static let drainBackstop = CMTime(value: 1, timescale: 2)

    /// Ends the drains whose sound has not come while the picture ran ``drainBackstop`` past their edge; `time` is a
    /// video frame's source time.
    func finishOutwaitedDrains(videoAt time: CMTime) {
        guard !draining.isEmpty, time.isNumeric else { return }
        for recording in draining
        where recording.phase == .draining
            && recording.timeline.drainOutwaited(videoAt: time, backstop: Self.drainBackstop)
        {
            finalize(recording)
        }
    }

    func finalize(_ recording: Recording) {
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
    func writerFailed(_ recording: Recording) {
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

    func makeWriter(
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
            output.noteRealTimeAdvice(
                Self.realTimeAdvice(codec: codec, dimensions: hint.dimensions, frameRate: frameRate))
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
            // A rate or channel count the settings leave out is the source's, from its first buffer (the writer's
            // input takes them from the hint); one they ask for is converted to in the writer's audio path.
            let settings = output.recordingSettings(for: audio, fileType: request.fileType)
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
    func reportFinish(_ request: Request, error: (any Error)?, recordedDuration: CMTime) {
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
}
