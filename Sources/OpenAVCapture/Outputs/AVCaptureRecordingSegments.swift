import Foundation
import Synchronization

/// A recording cut into consecutive files, "segments", with nothing lost or repeated at a cut. Beyond Apple: ours,
/// built on file switching (``AVCaptureFileOutput/startRecording(to:recordingDelegate:)`` while recording), started
/// with ``AVCaptureMovieFileOutput/startRecording(segments:recordingDelegate:)``.
///
/// What a cut guarantees:
/// - Every video frame is in exactly one segment; a segment begins with the frame that opens it, encoded as a key
///   frame by an encoder of its own, so each file plays alone.
/// - Sound is sample continuous: a segment's audio ends at the sample where the next segment's first frame begins,
///   and the next segment's audio starts with that sample (device sound, PCM, is cut to the sample before encoding).
/// - A duration cut falls on the frame nearest each multiple of ``duration`` of recorded time (counted over the
///   whole series, so rounding never accumulates); a size cut on the first frame after a segment's encoded media
///   reached ``maxFileSize`` (the finished file is larger by its index and the few frames still in the encoder).
///
/// Names: ``pattern`` is a path whose `strftime(3)` escapes (`%Y%m%d-%H%M%S`, …) are filled with the local time at
/// which each segment begins (the series' start plus the recorded time before it). A name already taken (the
/// same second, or no escape at all) gets `-2`, `-3`, … before its extension.
///
/// Pruning: after a segment is finished, the oldest finished segments of the series are deleted while more than
/// ``keepCount`` are kept or they take more than ``keepBytes`` together (0: no such bound); the segment being
/// recorded and the newest finished one are never deleted.
///
/// The recording delegate hears each segment as a recording of its own (didStart … didFinish, in order for each
/// file; a segment's didFinish comes once its file is finalized, after the next segment's didStart).
/// ``isComplete`` is true before the series' final `didFinishRecordingTo`: the last segment has ended and every
/// file is finalized. The
/// output's `maxRecordedDuration` bounds the whole series; `maxRecordedFileSize` and `minFreeDiskSpaceLimit` each
/// segment's file. Pausing pauses the segment under way.
///
/// Threading: thread safe; its properties may be read from any thread while the series records.
public final class AVCaptureRecordingSegments: Sendable {
    /// The file path of each segment, with `strftime(3)` escapes; its extension chooses the container.
    public let pattern: String
    /// The recorded time a segment lasts, or `.invalid` for no duration cut.
    public let duration: CMTime
    /// The encoded media, in bytes, after which a segment is cut; 0 for no size cut.
    public let maxFileSize: Int64
    /// The most finished segments kept on disk, or 0 for all of them.
    public let keepCount: Int
    /// The most bytes the finished segments kept may take together, or 0 for no bound.
    public let keepBytes: Int64

    private struct State {
        var startDate: Date?
        var usedPaths: Set<String> = []
        var kept: [(url: URL, bytes: Int64)] = []
        var removed: [URL] = []
        var finished: [URL] = []
        var current: URL?
        /// Segments begun and not yet finished.
        var open = 0
        /// The last segment ended (no other follows it).
        var hasEnded = false
        var isComplete = false
        /// Recorded time of the segments before the current one.
        var completedDuration: CMTime = .zero
        var index = 0
    }

    private let state = Mutex(State())

    /// A series written to `pattern`, cut every `duration` of recorded time and/or when a segment's media reaches
    /// `maxFileSize` bytes; `keepCount` and `keepBytes` (0: no bound) prune old segments. Traps unless at least
    /// one cut is given (a duration above zero or a size above zero), as a series without cuts is one file.
    public init(
        pattern: String, duration: CMTime = .invalid, maxFileSize: Int64 = 0, keepCount: Int = 0, keepBytes: Int64 = 0
    ) {
        precondition(
            (duration.isNumeric && duration > .zero) || maxFileSize > 0,
            "AVCaptureRecordingSegments: give a duration above zero or a maxFileSize above zero; without a cut, use"
                + " startRecording(to:recordingDelegate:)")
        precondition(keepCount >= 0 && keepBytes >= 0, "AVCaptureRecordingSegments: keepCount and keepBytes cannot be negative")
        self.pattern = pattern
        self.duration = duration
        self.maxFileSize = maxFileSize
        self.keepCount = keepCount
        self.keepBytes = keepBytes
    }

    /// The segments finished so far, oldest first, removed ones included.
    public var finishedFiles: [URL] { state.withLock { $0.finished } }
    /// The finished segments still on disk, oldest first.
    public var keptFiles: [URL] { state.withLock { $0.kept.map(\.url) } }
    /// The segments deleted by pruning, oldest first.
    public var removedFiles: [URL] { state.withLock { $0.removed } }
    /// The segment being recorded, or nil before the first and after the last.
    public var currentFile: URL? { state.withLock { $0.current } }
    /// Whether the series has ended: set before its last segment's `didFinishRecordingTo`.
    public var isComplete: Bool { state.withLock { $0.isComplete } }

    // MARK: For the recording engine (its work queue)

    /// The first segment's URL; the series' clock starts now.
    func firstURL() -> URL {
        state.withLock { state in
            let now = Date()
            state.startDate = now
            let url = Self.freeURL(pattern, at: now, used: &state.usedPaths)
            state.current = url
            state.open = 1
            return url
        }
    }

    /// Whether the segment recorded for `elapsed` (its written time, to the start of the frame at hand), lasting
    /// one frame of `frameDuration` more, with `encodedBytes` of media so far, is to be cut before that frame.
    func isDue(elapsed: CMTime, frameDuration: CMTime, encodedBytes: Int64) -> Bool {
        if maxFileSize > 0, encodedBytes >= maxFileSize { return true }
        guard duration.isNumeric else { return false }
        let (completed, index) = state.withLock { ($0.completedDuration, $0.index) }
        // The frame nearest the boundary opens the next segment: the frame's start plus half a frame reaches it.
        let boundary = CMTimeMultiply(duration, multiplier: Int32(clamping: index + 1))
        let half = CMTimeMultiplyByRatio(frameDuration, multiplier: 1, divisor: 2)
        return completed + elapsed + half >= boundary
    }

    /// The next segment's URL, once the current one was cut after recording `length`.
    func nextURL(afterSegmentOf length: CMTime) -> URL {
        state.withLock { state in
            state.completedDuration = state.completedDuration + length
            state.index += 1
            let date = (state.startDate ?? Date()).addingTimeInterval(state.completedDuration.seconds)
            let url = Self.freeURL(pattern, at: date, used: &state.usedPaths)
            state.current = url
            state.open += 1
            return url
        }
    }

    /// A segment ended (its file finished, or none written); prunes old segments. Returns whether the series is
    /// now complete: its last segment ended and every earlier one is finished.
    @discardableResult
    func segmentFinished(_ url: URL, hasFile: Bool) -> Bool {
        let (isComplete, doomed) = state.withLock { state -> (Bool, [URL]) in
            state.open -= 1
            if state.current == url {
                state.current = nil
                state.hasEnded = true
            }
            state.isComplete = state.hasEnded && state.open <= 0
            guard hasFile else { return (state.isComplete, []) }
            state.finished.append(url)
            state.kept.append((url, MovieRecordingEngine.fileSize(url)))
            var doomed: [URL] = []
            while state.kept.count > 1,
                (keepCount > 0 && state.kept.count > keepCount)
                    || (keepBytes > 0 && state.kept.reduce(0, { $0 + $1.bytes }) > keepBytes)
            {
                doomed.append(state.kept.removeFirst().url)
            }
            state.removed += doomed
            return (state.isComplete, doomed)
        }
        for url in doomed { try? FileManager.default.removeItem(at: url) }
        return isComplete
    }

    /// `pattern` (a path with `strftime(3)` escapes) filled in for `date`, local time, with `-2`, `-3`, … before the
    /// extension when a file of that name exists: the names ``AVCaptureRecordingSegments`` gives its files, for
    /// other files that are named by the time they begin (a pre-event recording's).
    public static func fileURL(forPattern pattern: String, at date: Date = Date()) -> URL {
        var used: Set<String> = []
        return freeURL(pattern, at: date, used: &used)
    }

    /// `pattern` filled in for `date`, made unique among `used` and existing files by a `-N` suffix.
    static func freeURL(_ pattern: String, at date: Date, used: inout Set<String>) -> URL {
        let base = URL(fileURLWithPath: expand(pattern, at: date))
        var candidate = base
        var number = 1
        while used.contains(candidate.path) || FileManager.default.fileExists(atPath: candidate.path) {
            number += 1
            let name = base.deletingPathExtension().lastPathComponent + "-\(number)"
            candidate = base.deletingLastPathComponent().appendingPathComponent(name).appendingPathExtension(
                base.pathExtension)
        }
        used.insert(candidate.path)
        return candidate
    }

    /// `pattern` with its `strftime(3)` escapes filled in for `date`, local time.
    static func expand(_ pattern: String, at date: Date) -> String {
        guard pattern.contains("%") else { return pattern }
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        localtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = strftime(&buffer, buffer.count, pattern, &parts)
        guard count > 0 else { return pattern }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
