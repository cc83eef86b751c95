// AVCompositionTrack, AVMutableCompositionTrack and their segments: a track made of edits of other tracks.

import Foundation
import OpenCoreMedia
import Synchronization

/// One edit of a composition track: a range of a source track shown over a range of the composition's time, or
/// an empty stretch.
///
/// Threading: immutable; `@unchecked Sendable`.
open class AVCompositionTrackSegment: NSObject, @unchecked Sendable {
    /// The source range and where it plays (source `.invalid` for an empty segment).
    public let timeMapping: CMTimeMapping
    /// Whether the segment shows nothing.
    public let isEmpty: Bool
    /// The file the media comes from.
    public let sourceURL: URL?
    /// The track in that file.
    public let sourceTrackID: CMPersistentTrackID
    /// The track read (kept here: a composition holds the tracks it edits).
    let sourceTrack: AVAssetTrack?

    /// A segment showing `sourceTimeRange` of track `trackID` of the file at `url` over `targetTimeRange`.
    public convenience init(
        url: URL, trackID: CMPersistentTrackID, sourceTimeRange: CMTimeRange, targetTimeRange: CMTimeRange
    ) {
        let track = AVURLAsset(url: url).track(withTrackID: trackID)
        self.init(track: track, url: url, trackID: trackID, source: sourceTimeRange, target: targetTimeRange)
    }

    /// An empty segment over `timeRange`.
    public convenience init(timeRange: CMTimeRange) {
        self.init(track: nil, url: nil, trackID: 0, source: .invalid, target: timeRange)
    }

    init(track: AVAssetTrack?, url: URL?, trackID: CMPersistentTrackID, source: CMTimeRange, target: CMTimeRange) {
        sourceTrack = track
        sourceURL = url
        sourceTrackID = trackID
        timeMapping = CMTimeMapping(source: source, target: target)
        isEmpty = track == nil
        super.init()
    }

    convenience init(track: AVAssetTrack, source: CMTimeRange, target: CMTimeRange) {
        let url = (track.asset as? AVURLAsset)?.url ?? track.source.map { URL(fileURLWithPath: $0.path) }
        self.init(track: track, url: url, trackID: track.trackID, source: source, target: target)
    }

    /// The same source shown over `target` (its source range cut in proportion when `target` is part of it).
    func retargeted(_ target: CMTimeRange) -> AVCompositionTrackSegment {
        guard let sourceTrack else { return AVCompositionTrackSegment(timeRange: target) }
        let old = timeMapping
        let start = CMTimeMapTimeFromRangeToRange(target.start, fromRange: old.target, toRange: old.source)
        let end = CMTimeMapTimeFromRangeToRange(target.end, fromRange: old.target, toRange: old.source)
        return AVCompositionTrackSegment(
            track: sourceTrack, url: sourceURL, trackID: sourceTrackID, source: CMTimeRange(start: start, end: end),
            target: target)
    }

    /// The segment moved to begin at `start`, its duration kept.
    func moved(to start: CMTime) -> AVCompositionTrackSegment {
        AVCompositionTrackSegment(
            track: sourceTrack, url: sourceURL, trackID: sourceTrackID, source: timeMapping.source,
            target: CMTimeRange(start: start, duration: timeMapping.target.duration))
    }

    /// Whether the segment plays its source faster or slower than recorded.
    var isScaled: Bool { !isEmpty && timeMapping.source.duration != timeMapping.target.duration }
}

/// A track of a composition: its media are its ``segments``' source tracks, retimed.
///
/// Threading: thread safe (`@unchecked Sendable`): its edits are guarded by a mutex.
open class AVCompositionTrack: AVAssetTrack, @unchecked Sendable {
    struct Edits {
        var segments: [AVCompositionTrackSegment] = []
        var preferredTransform = CGAffineTransform.identity
        var naturalTimeScale: CMTimeScale = 0
        var isEnabled = true
    }

    let edits = Mutex(Edits())

    init(trackID: CMPersistentTrackID, mediaType: AVMediaType) {
        super.init(
            trackID: trackID, mediaType: mediaType, naturalSize: .zero, nominalFrameRate: 0, timeRange: .zero,
            formatDescriptions: [], estimatedDataRate: 0, preferredTransform: .identity, isPlayable: true,
            source: nil)
    }

    /// The edits, in the composition's time order.
    public var segments: [AVCompositionTrackSegment] { edits.withLock { $0.segments } }

    /// From the first segment's start to the last one's end.
    public override var timeRange: CMTimeRange {
        let segments = segments
        guard let first = segments.first, let last = segments.last else { return .zero }
        return CMTimeRange(start: first.timeMapping.target.start, end: last.timeMapping.target.end)
    }
    /// The first source track's picture size.
    public override var naturalSize: CGSize { sourceTracks.first?.naturalSize ?? .zero }
    /// The first source track's frame rate, scaled by its segment (a segment slowed 8× plays at 1/8 the rate).
    public override var nominalFrameRate: Float {
        guard let segment = segments.first(where: { !$0.isEmpty }), let track = segment.sourceTrack else { return 0 }
        let mapping = segment.timeMapping
        return track.nominalFrameRate * Float(mapping.source.duration.seconds / mapping.target.duration.seconds)
    }
    /// The source tracks' format descriptions, each once.
    public override var formatDescriptions: [Any] {
        var seen: [CMFormatDescription] = []
        for track in sourceTracks {
            for case let description as CMFormatDescription in track.formatDescriptions
            where !seen.contains(description) {
                seen.append(description)
            }
        }
        return seen
    }
    public override var estimatedDataRate: Float { sourceTracks.first?.estimatedDataRate ?? 0 }
    /// The display transform; the first source track's until set on a mutable track.
    public override var preferredTransform: CGAffineTransform {
        edits.withLock { $0.preferredTransform }
    }
    /// The time scale media are written with when exported; 0 chooses the sources'.
    public var naturalTimeScale: CMTimeScale { edits.withLock { $0.naturalTimeScale } }
    /// Whether the track plays.
    public var isEnabled: Bool { edits.withLock { $0.isEnabled } }

    var sourceTracks: [AVAssetTrack] { segments.compactMap(\.sourceTrack) }
}

extension AVCompositionTrack: AVCompositionTrackReading {
    func makeComposedProducer(
        timeRange: CMTimeRange, decoding: TrackSampleReader.Decoding, pitch: AVAudioTimePitchAlgorithm
    ) throws(AVError) -> any SampleProducer {
        try CompositionTrackProducer(
            segments: segments, mediaType: mediaType, timeRange: timeRange, decoding: decoding, pitch: pitch)
    }
}

/// A composition track you edit: insert ranges of other tracks, empty ranges, remove ranges and scale them.
///
/// Edits work on the composition's timeline (the segments' target ranges): an insertion at `t` moves everything at
/// or after `t` later; a removal closes the gap; scaling stretches the segments inside a range in proportion and
/// moves the later ones. A segment cut by an edit is split, its source range cut in proportion.
///
/// Threading: thread safe, as ``AVCompositionTrack``.
open class AVMutableCompositionTrack: AVCompositionTrack, @unchecked Sendable {
    /// The edits; setting them replaces every edit (Apple checks they tile the timeline; we sort them by start).
    public override var segments: [AVCompositionTrackSegment] {
        get { edits.withLock { $0.segments } }
        set {
            let sorted = newValue.sorted { $0.timeMapping.target.start < $1.timeMapping.target.start }
            edits.withLock { $0.segments = sorted }
        }
    }
    public override var preferredTransform: CGAffineTransform {
        get { edits.withLock { $0.preferredTransform } }
        set { edits.withLock { $0.preferredTransform = newValue } }
    }
    public override var naturalTimeScale: CMTimeScale {
        get { edits.withLock { $0.naturalTimeScale } }
        set { edits.withLock { $0.naturalTimeScale = newValue } }
    }
    public override var isEnabled: Bool {
        get { edits.withLock { $0.isEnabled } }
        set { edits.withLock { $0.isEnabled = newValue } }
    }

    /// Inserts `timeRange` of `track` at `startTime`; what was at or after `startTime` moves later by its duration.
    /// Inserting past the end fills the gap with an empty segment.
    ///
    /// - Throws: ``AVError`` `.invalidSourceMedia` when the track's media type differs or the range is not inside
    ///   the track; `.operationNotSupportedForAsset` for a composition's own track (insert its sources instead).
    public func insertTimeRange(_ timeRange: CMTimeRange, of track: AVAssetTrack, at startTime: CMTime) throws {
        guard track.mediaType == mediaType else {
            throw AVError(
                .invalidSourceMedia,
                "a \(track.mediaType.rawValue) track cannot go into a \(mediaType.rawValue) composition track")
        }
        guard track.source != nil else {
            throw AVError(
                .operationNotSupportedForAsset, "inserting a composition's track is not supported",
                suggestion: "Insert the source asset's tracks.")
        }
        guard timeRange.isValid, timeRange.start.isNumeric, timeRange.duration.isNumeric, startTime.isNumeric,
            timeRange.duration > .zero
        else {
            throw AVError(.invalidSourceMedia, "the range to insert must be numeric and not empty")
        }
        let available = track.timeRange
        let tolerance = CMTime(value: 1, timescale: 1000)
        guard timeRange.start >= available.start - tolerance, timeRange.end <= available.end + tolerance else {
            throw AVError(
                .invalidSourceMedia,
                "the range \(timeRange.start.seconds)…\(timeRange.end.seconds) s is outside the track "
                    + "(\(available.start.seconds)…\(available.end.seconds) s)")
        }
        let segment = AVCompositionTrackSegment(
            track: track, source: timeRange, target: CMTimeRange(start: startTime, duration: timeRange.duration))
        edits.withLock { edits in
            if edits.segments.isEmpty, edits.preferredTransform == .identity {
                edits.preferredTransform = track.preferredTransform
            }
            Self.insert(segment, into: &edits.segments)
        }
    }

    /// Inserts an empty stretch: what was at or after its start moves later by its duration.
    public func insertEmptyTimeRange(_ timeRange: CMTimeRange) {
        guard timeRange.isValid, timeRange.duration > .zero else { return }
        edits.withLock { Self.insert(AVCompositionTrackSegment(timeRange: timeRange), into: &$0.segments) }
    }

    /// Removes `timeRange`: what was after it moves earlier by its duration.
    public func removeTimeRange(_ timeRange: CMTimeRange) {
        guard timeRange.isValid, timeRange.duration > .zero else { return }
        edits.withLock { edits in
            var segments = Self.split(Self.split(edits.segments, at: timeRange.start), at: timeRange.end)
            segments.removeAll { timeRange.containsTimeRange($0.timeMapping.target) }
            edits.segments = segments.map { segment in
                let start = segment.timeMapping.target.start
                return start >= timeRange.end ? segment.moved(to: start - timeRange.duration) : segment
            }
        }
    }

    /// Stretches (or squeezes) everything in `timeRange` to last `duration`: slow motion when longer. Later media
    /// move by the difference.
    public func scaleTimeRange(_ timeRange: CMTimeRange, toDuration duration: CMTime) {
        guard timeRange.isValid, timeRange.duration > .zero, duration.isNumeric, duration > .zero else { return }
        let target = CMTimeRange(start: timeRange.start, duration: duration)
        edits.withLock { edits in
            let segments = Self.split(Self.split(edits.segments, at: timeRange.start), at: timeRange.end)
            edits.segments = segments.map { segment in
                let range = segment.timeMapping.target
                if range.start >= timeRange.end {
                    return segment.moved(to: range.start + duration - timeRange.duration)
                }
                guard timeRange.containsTimeRange(range) else { return segment }
                let start = CMTimeMapTimeFromRangeToRange(range.start, fromRange: timeRange, toRange: target)
                let end = CMTimeMapTimeFromRangeToRange(range.end, fromRange: timeRange, toRange: target)
                return AVCompositionTrackSegment(
                    track: segment.sourceTrack, url: segment.sourceURL, trackID: segment.sourceTrackID,
                    source: segment.timeMapping.source, target: CMTimeRange(start: start, end: end))
            }
        }
    }

    // MARK: The timeline's algebra

    /// `segments` with the one containing `time` strictly inside cut in two there.
    static func split(_ segments: [AVCompositionTrackSegment], at time: CMTime) -> [AVCompositionTrackSegment] {
        segments.flatMap { segment -> [AVCompositionTrackSegment] in
            let range = segment.timeMapping.target
            guard range.start < time, time < range.end else { return [segment] }
            return [
                segment.retargeted(CMTimeRange(start: range.start, end: time)),
                segment.retargeted(CMTimeRange(start: time, end: range.end)),
            ]
        }
    }

    /// Inserts `segment` at its target start, moving what was at or after it later; an empty segment fills any gap
    /// between the track's end and the start.
    static func insert(_ segment: AVCompositionTrackSegment, into segments: inout [AVCompositionTrackSegment]) {
        let start = segment.timeMapping.target.start
        let duration = segment.timeMapping.target.duration
        let end = segments.last?.timeMapping.target.end ?? .zero
        if start > end {
            segments.append(AVCompositionTrackSegment(timeRange: CMTimeRange(start: end, end: start)))
        }
        segments = split(segments, at: start).map { existing in
            let range = existing.timeMapping.target
            return range.start >= start ? existing.moved(to: range.start + duration) : existing
        }
        segments.append(segment)
        segments.sort { $0.timeMapping.target.start < $1.timeMapping.target.start }
    }
}
