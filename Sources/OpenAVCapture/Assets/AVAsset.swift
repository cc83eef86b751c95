// AVAsset: a media file's duration, tracks and metadata, read with libavformat.

import Foundation
import MediaCodecs
import OpenCoreMedia
import Synchronization

/// A track's identifier in its file (`tkhd` track ID order, from 1).
public typealias CMPersistentTrackID = Int32

/// A timed media resource: its duration, tracks and metadata.
///
/// Create one with ``AVURLAsset/init(url:options:)``. Properties are read synchronously, Apple's deprecated
/// synchronous API: the first access opens and probes the file (`Demuxer`), later ones use what it read. A file
/// that cannot be read has duration `.invalid`, no tracks and no metadata; ``isReadable`` says so.
///
/// Threading: thread safe (`@unchecked Sendable`): immutable once loaded, loading happens once under a lock.
open class AVAsset: NSObject, @unchecked Sendable {
    struct Contents: Sendable {
        var duration: CMTime = .invalid
        var tracks: [AVAssetTrack] = []
        var metadata: [AVMetadataItem] = []
        var isReadable = false
        /// Why the file could not be read (for the async `load`, which throws it); nil when it was.
        var failure: AVError?
    }

    private let loaded = Mutex<Contents?>(nil)
    /// The file; nil for a composition, whose contents are its tracks' edits.
    let path: String?

    init(path: String) {
        self.path = path
        super.init()
    }

    /// An asset with no file of its own (``AVComposition``).
    override init() {
        self.path = nil
        super.init()
    }

    var contents: Contents {
        loaded.withLock { loaded in
            if let loaded { return loaded }
            guard let path else { return Contents() }
            let contents = Self.load(path: path)
            for track in contents.tracks { track.asset = self }
            loaded = contents
            return contents
        }
    }

    /// The contents, or the error that says why the file cannot be read (a composition overrides it).
    func loadedContents() throws -> Contents {
        let contents = contents
        if let failure = contents.failure { throw failure }
        return contents
    }

    /// How long the asset lasts; `.invalid` when the file cannot be read.
    public var duration: CMTime { contents.duration }
    /// The tracks, in file order.
    public var tracks: [AVAssetTrack] { contents.tracks }
    /// The tracks of one media type.
    public func tracks(withMediaType mediaType: AVMediaType) -> [AVAssetTrack] {
        tracks.filter { $0.mediaType == mediaType }
    }
    /// The track with `trackID`, or `nil`.
    public func track(withTrackID trackID: CMPersistentTrackID) -> AVAssetTrack? {
        tracks.first { $0.trackID == trackID }
    }
    /// The file's metadata items, in their own key spaces (QuickTime metadata, user data).
    public var metadata: [AVMetadataItem] { contents.metadata }
    /// The metadata items that have a common key, in the common key space (`common/title`, `common/location`, …).
    public var commonMetadata: [AVMetadataItem] {
        metadata.compactMap { item in
            guard let common = item.commonKey else { return nil }
            let copy = AVMutableMetadataItem()
            copy.keySpace = .common
            copy.key = NSString(string: common.rawValue)
            copy.value = item.value
            copy.dataType = item.dataType
            return copy
        }
    }
    /// Whether the file could be opened and probed.
    public var isReadable: Bool { contents.isReadable }
    /// Whether the asset can be played: readable, with at least one audio or video track.
    public var isPlayable: Bool { isReadable && tracks.contains { $0.mediaType == .video || $0.mediaType == .audio } }

    private static func load(path: String) -> Contents {
        let demuxer: Demuxer
        do {
            demuxer = try Demuxer(path: path)
        } catch {
            var contents = Contents()
            contents.failure =
                FileManager.default.fileExists(atPath: path)
                ? AVError(
                    .fileFormatNotRecognized, "\(path) is not a media file FFmpeg can read (\(error.message))",
                    suggestion: "Give a movie or sound file.")
                : AVError(.fileFormatNotRecognized, "\(path) does not exist", suggestion: "Check the URL.")
            return contents
        }
        var contents = Contents()
        contents.isReadable = true
        contents.duration = demuxer.duration
        contents.tracks = demuxer.streams.map { AVAssetTrack(stream: $0, fileDuration: demuxer.duration, path: path) }
        if !contents.duration.isNumeric {
            contents.duration = contents.tracks.map(\.timeRange.duration).filter(\.isNumeric).max() ?? .invalid
        }
        contents.metadata = MetadataKeyMapping.items(fromTags: demuxer.metadata)
        return contents
    }
}

/// An asset at a URL: a local file.
///
/// Threading: thread safe, as ``AVAsset``.
open class AVURLAsset: AVAsset, @unchecked Sendable {
    /// The file.
    public let url: URL

    /// The asset at `url`. Nothing is read until a property is used. `options` are accepted and not used: timing
    /// is always exact here, which is what ``AVURLAssetPreferPreciseDurationAndTimingKey`` asks Apple's for.
    public init(url: URL, options: [String: Any]? = nil) {
        self.url = url
        super.init(path: url.path)
    }
}
