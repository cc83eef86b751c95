// AVVideoComposition and AVMutableVideoComposition: how an export renders video (frame rate and size).

import Foundation
import OpenCoreMedia
import Synchronization

/// How video is rendered when an asset is exported: ``frameDuration`` (one frame every so long: a constant frame
/// rate) and ``renderSize`` (the picture size). An export with a video composition re-encodes at that rate and
/// size: each output frame shows the source frame on screen at its time.
///
/// Not offered: instructions and layer instructions (opacity, transforms and cross-fades between tracks) and custom
/// compositors; the first enabled video track is rendered, scaled to fill ``renderSize``.
///
/// Threading: thread safe (`@unchecked Sendable`): the properties are guarded by a mutex.
open class AVVideoComposition: NSObject, @unchecked Sendable {
    struct Properties {
        var frameDuration = CMTime.invalid
        var renderSize = CGSize.zero
        var renderScale: Float = 1
        var sourceTrackIDForFrameTiming = kCMPersistentTrackID_Invalid
    }

    let properties: Mutex<Properties>

    init(properties: Properties) {
        self.properties = Mutex(properties)
        super.init()
    }

    /// A composition for `asset`: its first video track's frame rate and display size (its natural size turned by
    /// its preferred transform), as Apple's.
    public convenience init(propertiesOf asset: AVAsset) {
        self.init(properties: Self.properties(of: asset))
    }

    /// Apple's asynchronous form of ``init(propertiesOf:)``.
    public static func videoComposition(withPropertiesOf asset: AVAsset) async throws -> AVVideoComposition {
        _ = try await asset.load(.tracks)
        return AVVideoComposition(propertiesOf: asset)
    }

    static func properties(of asset: AVAsset) -> Properties {
        var properties = Properties()
        guard let track = asset.tracks(withMediaType: .video).first else { return properties }
        let rate = track.nominalFrameRate > 0 ? Double(track.nominalFrameRate) : 30
        // Apple takes the track's minimum frame duration; a rate close to a whole number is that number's frame.
        let whole = rate.rounded()
        properties.frameDuration =
            abs(rate - whole) < 0.01
            ? CMTime(value: 1, timescale: Int32(whole)) : CMTime(seconds: 1 / rate, preferredTimescale: 600_000)
        let transform = track.preferredTransform
        let size = track.naturalSize
        let turned = abs(transform.b) > abs(transform.a)
        properties.renderSize = turned ? CGSize(width: size.height, height: size.width) : size
        properties.sourceTrackIDForFrameTiming = track.trackID
        return properties
    }

    /// How long each frame lasts: 1/30 s for 30 fps.
    public var frameDuration: CMTime { properties.withLock { $0.frameDuration } }
    /// The size of the pictures rendered.
    public var renderSize: CGSize { properties.withLock { $0.renderSize } }
    /// A scale applied to ``renderSize`` (1 by default).
    public var renderScale: Float { properties.withLock { $0.renderScale } }
    /// The track whose frame timing the output follows when ``frameDuration`` is invalid.
    public var sourceTrackIDForFrameTiming: CMPersistentTrackID {
        properties.withLock { $0.sourceTrackIDForFrameTiming }
    }
}

/// A video composition you can change.
///
/// Threading: thread safe, as ``AVVideoComposition``.
open class AVMutableVideoComposition: AVVideoComposition, @unchecked Sendable {
    /// An empty composition: set ``frameDuration`` and ``renderSize``.
    public init() {
        super.init(properties: Properties())
    }

    /// A composition for `asset`'s first video track (see ``AVVideoComposition/init(propertiesOf:)``).
    public convenience init(propertiesOf asset: AVAsset) {
        self.init()
        let properties = Self.properties(of: asset)
        self.properties.withLock { $0 = properties }
    }

    public override var frameDuration: CMTime {
        get { properties.withLock { $0.frameDuration } }
        set { properties.withLock { $0.frameDuration = newValue } }
    }
    public override var renderSize: CGSize {
        get { properties.withLock { $0.renderSize } }
        set { properties.withLock { $0.renderSize = newValue } }
    }
    public override var renderScale: Float {
        get { properties.withLock { $0.renderScale } }
        set { properties.withLock { $0.renderScale = newValue } }
    }
    public override var sourceTrackIDForFrameTiming: CMPersistentTrackID {
        get { properties.withLock { $0.sourceTrackIDForFrameTiming } }
        set { properties.withLock { $0.sourceTrackIDForFrameTiming = newValue } }
    }
}
