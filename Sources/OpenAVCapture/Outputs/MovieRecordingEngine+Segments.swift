// The engine's own segments and limits: cutting a series at its interval, holding audio across the edge, and
// finishing a recording that reached its duration, size or free-space limit.

import Foundation
import MediaCodecs
import Synchronization

extension MovieRecordingEngine {
    /// Cuts segment `recording` of `series` before its frame at source time `time`: the next segment begins (the
    /// caller hands it that frame), the sound held so far split at `time`. Returns false, leaving the segment
    /// going, when the volume lacks `minFreeDiskSpaceLimit` for a new file (the segment then meets the limit).
    func cutSegment(_ recording: Recording, of series: AVCaptureRecordingSegments, at time: CMTime) -> Bool {
        guard let output else { return false }
        var limits = recording.request.limits
        if limits.minFreeDiskSpace > 0, let free = Self.freeSpace(at: recording.request.url),
            free < limits.minFreeDiskSpace
        {
            return false
        }
        let length = recording.timeline.elapsed(at: time)
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
    func releaseHeldAudio(_ recording: Recording, upTo edge: CMTime) {
        guard edge.isNumeric else { return }
        // To the sample: a buffer that begins a nanosecond before the edge begins at it.
        while let first = recording.heldAudio.first,
            PCMSlicing.frameCount(in: edge - first.presentationTimeStamp, of: first) > 0
        {
            recording.heldAudio.removeFirst()
            let room = edge - first.presentationTimeStamp
            guard let head = PCMSlicing.frames(before: room, of: first),
                let tail = PCMSlicing.frames(after: room, of: first)
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
    func checkLimits(_ recording: Recording, at time: CMTime, duration: CMTime) -> Bool {
        let limits = recording.request.limits
        if recording.timeline.passes(limits.maxDuration, frameAt: time, duration: duration) {
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
    func updateDiskBudget(_ recording: Recording, writer: AVAssetWriter) {
        guard let free = Self.freeSpace(at: recording.request.url) else { return }
        let budget = Self.fileSize(recording.request.url) + free - Self.freeSpaceFloor(recording.request.limits)
        writer.sizeLimits.diskBudget.store(max(0, budget), ordering: .relaxed)
    }

    func finishForLimit(_ recording: Recording, _ code: AVError.Code, _ description: String) {
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
}
