// AVComposition and AVMutableComposition: an asset made of edits of other assets' tracks.

import Foundation
import OpenCoreMedia
import Synchronization

/// The ID that asks a composition to choose a track's ID (Apple's `kCMPersistentTrackID_Invalid`).
public let kCMPersistentTrackID_Invalid: CMPersistentTrackID = 0

/// An asset whose tracks are edits of other assets' tracks (``AVCompositionTrack``). Read it with
/// ``AVAssetReader``, export it with ``AVAssetExportSession``.
///
/// Differences from Apple's: ``tracks`` is typed `[AVAssetTrack]` (Swift cannot narrow an overridden property's
/// type as Objective-C does); cast the elements to ``AVCompositionTrack``.
///
/// Threading: thread safe (`@unchecked Sendable`): its track list is guarded by a mutex, each track guards its
/// edits.
open class AVComposition: AVAsset, @unchecked Sendable {
    struct Layout {
        var tracks: [AVMutableCompositionTrack] = []
        var naturalSize: CGSize?
    }

    let layout = Mutex(Layout())

    override init() {
        super.init()
    }

    /// The composition's tracks, in the order they were added.
    public override var tracks: [AVAssetTrack] { layout.withLock { $0.tracks } }
    /// The end of the longest track.
    public override var duration: CMTime {
        tracks.map { $0.timeRange.end }.max() ?? .zero
    }
    /// Compositions have no metadata of their own.
    public override var metadata: [AVMetadataItem] { [] }
    /// Always true: the media are the source files'.
    public override var isReadable: Bool { true }
    /// The size pictures are composed at: the first video track's until set.
    public var naturalSize: CGSize {
        layout.withLock { $0.naturalSize } ?? tracks(withMediaType: .video).first?.naturalSize ?? .zero
    }

    override func loadedContents() throws -> Contents {
        var contents = Contents()
        contents.isReadable = true
        contents.duration = duration
        contents.tracks = tracks
        return contents
    }
}

/// A composition you edit: add tracks, insert ranges of assets, empty ranges, remove and scale ranges.
///
/// The composition-wide edits act on every track, so video and sound stay together: inserting an asset puts each
/// of its video and audio tracks into the composition's first track of that type (added when missing) and inserts
/// an empty range into the other tracks; scaling a range scales it in every track.
///
/// Threading: thread safe, as ``AVComposition``.
open class AVMutableComposition: AVComposition, @unchecked Sendable {
    /// An empty composition.
    public override init() {
        super.init()
    }

    /// Apple's initializer with options for the assets it opens; the options change nothing here.
    public convenience init(urlAssetInitializationOptions: [String: Any]? = nil) {
        self.init()
    }

    /// The size pictures are composed at.
    public override var naturalSize: CGSize {
        get { super.naturalSize }
        set { layout.withLock { $0.naturalSize = newValue } }
    }

    /// Adds an empty track of `mediaType`; `preferredTrackID` `kCMPersistentTrackID_Invalid` chooses the next free
    /// ID. Nil when the ID is taken.
    public func addMutableTrack(
        withMediaType mediaType: AVMediaType, preferredTrackID: CMPersistentTrackID
    ) -> AVMutableCompositionTrack? {
        layout.withLock { layout in
            let used = Set(layout.tracks.map(\.trackID))
            var trackID = preferredTrackID
            if trackID == kCMPersistentTrackID_Invalid {
                trackID = (used.max() ?? 0) + 1
            } else if used.contains(trackID) {
                return nil
            }
            let track = AVMutableCompositionTrack(trackID: trackID, mediaType: mediaType)
            layout.tracks.append(track)
            track.asset = self
            return track
        }
    }

    /// Removes `track` from the composition.
    public func removeTrack(_ track: AVCompositionTrack) {
        layout.withLock { $0.tracks.removeAll { $0 === track } }
    }

    /// The composition's first track of `track`'s media type, or nil.
    public func mutableTrack(compatibleWith track: AVAssetTrack) -> AVMutableCompositionTrack? {
        layout.withLock { $0.tracks.first { $0.mediaType == track.mediaType } }
    }

    /// The mutable track with `trackID`, or nil.
    public func mutableTrack(withTrackID trackID: CMPersistentTrackID) -> AVMutableCompositionTrack? {
        layout.withLock { $0.tracks.first { $0.trackID == trackID } }
    }

    var mutableTracks: [AVMutableCompositionTrack] { layout.withLock { $0.tracks } }

    /// Inserts `timeRange` of every video and audio track of `asset` at `startTime` (Apple's synchronous form).
    ///
    /// - Throws: the ``AVError`` that says why the asset cannot be read, or why a range cannot be inserted.
    public func insertTimeRange(_ timeRange: CMTimeRange, of asset: AVAsset, at startTime: CMTime) throws {
        try insertAllTracks(timeRange, of: asset, at: startTime)
    }

    /// Inserts `timeRange` of `asset` at `startTime` (Apple's asynchronous form, which loads the asset first).
    public func insertTimeRange(_ timeRange: CMTimeRange, of asset: AVAsset, at startTime: CMTime) async throws {
        _ = try await asset.load(.tracks)
        try insertAllTracks(timeRange, of: asset, at: startTime)
    }

    private func insertAllTracks(_ timeRange: CMTimeRange, of asset: AVAsset, at startTime: CMTime) throws {
        _ = try asset.loadedContents()
        var filled: [AVMutableCompositionTrack] = []
        var ordinal: [AVMediaType: Int] = [:]
        for source in asset.tracks where source.mediaType == .video || source.mediaType == .audio {
            // The n-th track of a type goes to the n-th composition track of that type.
            let index = ordinal[source.mediaType, default: 0]
            ordinal[source.mediaType] = index + 1
            let candidates = mutableTracks.filter { $0.mediaType == source.mediaType }
            let track =
                index < candidates.count
                ? candidates[index]
                : addMutableTrack(withMediaType: source.mediaType, preferredTrackID: kCMPersistentTrackID_Invalid)
            guard let track else { continue }
            let range = timeRange.intersection(source.timeRange)
            guard range.isValid, range.duration > .zero else { continue }
            try track.insertTimeRange(range, of: source, at: startTime)
            if range.duration < timeRange.duration {
                // A track shorter than the range: the rest of its share is empty, so later media stay in step.
                track.insertEmptyTimeRange(
                    CMTimeRange(start: startTime + range.duration, duration: timeRange.duration - range.duration))
            }
            filled.append(track)
        }
        for track in mutableTracks where !filled.contains(where: { $0 === track }) && !track.segments.isEmpty {
            track.insertEmptyTimeRange(CMTimeRange(start: startTime, duration: timeRange.duration))
        }
    }

    /// Inserts an empty range into every track.
    public func insertEmptyTimeRange(_ timeRange: CMTimeRange) {
        for track in mutableTracks { track.insertEmptyTimeRange(timeRange) }
    }

    /// Removes `timeRange` from every track.
    public func removeTimeRange(_ timeRange: CMTimeRange) {
        for track in mutableTracks { track.removeTimeRange(timeRange) }
    }

    /// Scales `timeRange` of every track to `duration`.
    public func scaleTimeRange(_ timeRange: CMTimeRange, toDuration duration: CMTime) {
        for track in mutableTracks { track.scaleTimeRange(timeRange, toDuration: duration) }
    }
}
