// AVAsyncProperty and asynchronous loading: `try await asset.load(.duration, .tracks)`, Apple's API since 2021.

import Foundation
import OpenCoreMedia

/// A property of an asset or a track that is loaded asynchronously with
/// ``AVAsynchronousKeyValueLoading/load(_:)``: `try await asset.load(.duration)`.
///
/// The properties are Apple's static members (`.duration`, `.tracks`, `.metadata`, `.naturalSize`, …), each
/// declared where `Root` is the class that has it. Loading reads the file once (the first load of any property
/// opens and probes it with libavformat); later loads return what was read.
///
/// Threading: immutable; `@unchecked Sendable` (its reader is a pure function of the root).
public final class AVAsyncProperty<Root, Value>: @unchecked Sendable {
    /// The property's name, as in error messages (`duration`, `tracks`).
    let name: String
    /// Reads the value from a loaded root; throws why the root cannot be loaded.
    let read: (Root) throws -> Value

    init(_ name: String, read: @escaping (Root) throws -> Value) {
        self.name = name
        self.read = read
    }
}

/// Types whose properties load asynchronously (``AVAsset``, ``AVAssetTrack``).
///
/// Threading: conforming types are `Sendable`; `load` reads the file on a task of its own, never on the caller's
/// executor.
public protocol AVAsynchronousKeyValueLoading: Sendable {}

extension AVAsynchronousKeyValueLoading {
    /// Loads one property or several at once (`try await asset.load(.duration, .tracks)` gives a tuple).
    ///
    /// - Throws: an ``AVError`` saying why the file cannot be read (`.fileFormatNotRecognized` for a missing file
    ///   or one FFmpeg does not read as media).
    public func load<each Value>(
        _ properties: repeat AVAsyncProperty<Self, each Value>
    ) async throws -> (
        repeat each Value
    ) {
        let root = self
        let box = try await Task.detached { () throws -> UncheckedBox<(repeat each Value)> in
            UncheckedBox(value: (repeat try (each properties).read(root)))
        }.value
        return box.value
    }
}

/// Carries a value that is not `Sendable` out of the loading task: the values are the root's own immutable
/// properties (times, arrays of tracks and metadata items), handed over once.
private struct UncheckedBox<Value>: @unchecked Sendable {
    var value: Value
}

extension AVAsset: AVAsynchronousKeyValueLoading {
    /// The tracks of one media type, loaded asynchronously.
    public func loadTracks(withMediaType mediaType: AVMediaType) async throws -> [AVAssetTrack] {
        try await load(.tracks).filter { $0.mediaType == mediaType }
    }

    /// The track with `trackID`, loaded asynchronously; `nil` when there is none.
    public func loadTrack(withTrackID trackID: CMPersistentTrackID) async throws -> AVAssetTrack? {
        try await load(.tracks).first { $0.trackID == trackID }
    }
}

extension AVAssetTrack: AVAsynchronousKeyValueLoading {}

extension AVAsyncProperty where Root: AVAsset, Value == CMTime {
    /// ``AVAsset/duration``.
    public static var duration: AVAsyncProperty<Root, CMTime> {
        .init("duration") { root in
            _ = try root.loadedContents()
            return root.duration
        }
    }
}

extension AVAsyncProperty where Root: AVAsset, Value == [AVAssetTrack] {
    /// ``AVAsset/tracks``.
    public static var tracks: AVAsyncProperty<Root, [AVAssetTrack]> {
        .init("tracks") { root in
            _ = try root.loadedContents()
            return root.tracks
        }
    }
}

extension AVAsyncProperty where Root: AVAsset, Value == [AVMetadataItem] {
    /// ``AVAsset/metadata``.
    public static var metadata: AVAsyncProperty<Root, [AVMetadataItem]> {
        .init("metadata") { try $0.loadedContents().metadata }
    }
    /// ``AVAsset/commonMetadata``.
    public static var commonMetadata: AVAsyncProperty<Root, [AVMetadataItem]> {
        .init("commonMetadata") { root in
            _ = try root.loadedContents()
            return root.commonMetadata
        }
    }
}

extension AVAsyncProperty where Root: AVAsset, Value == Bool {
    /// ``AVAsset/isPlayable``.
    public static var isPlayable: AVAsyncProperty<Root, Bool> {
        .init("isPlayable") { root in
            _ = try root.loadedContents()
            return root.isPlayable
        }
    }
    /// ``AVAsset/isReadable``: false, not an error, for a file that cannot be read.
    public static var isReadable: AVAsyncProperty<Root, Bool> { .init("isReadable") { $0.isReadable } }
}

extension AVAsyncProperty where Root: AVAssetTrack, Value == CGSize {
    /// ``AVAssetTrack/naturalSize``.
    public static var naturalSize: AVAsyncProperty<Root, CGSize> { .init("naturalSize") { $0.naturalSize } }
}

extension AVAsyncProperty where Root: AVAssetTrack, Value == Float {
    /// ``AVAssetTrack/nominalFrameRate``.
    public static var nominalFrameRate: AVAsyncProperty<Root, Float> {
        .init("nominalFrameRate") { $0.nominalFrameRate }
    }
    /// ``AVAssetTrack/estimatedDataRate``.
    public static var estimatedDataRate: AVAsyncProperty<Root, Float> {
        .init("estimatedDataRate") { $0.estimatedDataRate }
    }
}

extension AVAsyncProperty where Root: AVAssetTrack, Value == CMTimeRange {
    /// ``AVAssetTrack/timeRange``.
    public static var timeRange: AVAsyncProperty<Root, CMTimeRange> { .init("timeRange") { $0.timeRange } }
}

extension AVAsyncProperty where Root: AVAssetTrack, Value == CGAffineTransform {
    /// ``AVAssetTrack/preferredTransform``.
    public static var preferredTransform: AVAsyncProperty<Root, CGAffineTransform> {
        .init("preferredTransform") { $0.preferredTransform }
    }
}

extension AVAsyncProperty where Root: AVAssetTrack, Value == [CMFormatDescription] {
    /// ``AVAssetTrack/formatDescriptions``, typed as Apple's async property is.
    public static var formatDescriptions: AVAsyncProperty<Root, [CMFormatDescription]> {
        .init("formatDescriptions") { $0.formatDescriptions.compactMap { $0 as? CMFormatDescription } }
    }
}

extension AVAsyncProperty where Root: AVAssetTrack, Value == AVMediaType {
    /// ``AVAssetTrack/mediaType``.
    public static var mediaType: AVAsyncProperty<Root, AVMediaType> { .init("mediaType") { $0.mediaType } }
}
