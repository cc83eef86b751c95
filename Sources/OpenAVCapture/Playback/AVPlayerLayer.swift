// AVPlayerLayer: where a player's video is shown, as a model renderers read (the preview layer's twin).

import Foundation
import OpenCoreMedia
import Synchronization

/// Shows an ``AVPlayer``'s video: on Linux a model (a ``CALayer`` with the player, the gravity and the newest
/// frame) that a renderer draws, as the preview layer is: OpenAVCaptureUI's `PlayerWindow` draws it with SDL, so
/// an app that only records or plays headless links no window system.
///
/// Threading: thread safe (`@unchecked Sendable`); a mutex guards the properties (the geometry is `CALayer`'s).
open class AVPlayerLayer: CALayer, @unchecked Sendable {
    private struct State {
        var player: AVPlayer?
        var gravity: AVLayerVideoGravity = .resizeAspect
        var newest: CMSampleBuffer?
        var shown: CMSampleBuffer?
        var onFrame: (@Sendable () -> Void)?
        var pixelBufferAttributes: [String: any Sendable]?
    }

    private let state = Mutex(State())

    /// A layer showing `player`'s video.
    public convenience init(player: AVPlayer?) {
        self.init()
        self.player = player
    }

    /// A layer with no player yet.
    public override init() { super.init() }

    /// A copy of another player layer's settings (Apple's presentation-layer initializer).
    public override init(layer: Any) {
        super.init(layer: layer)
        if let other = layer as? AVPlayerLayer {
            let gravity = other.videoGravity
            state.withLock { $0.gravity = gravity }
        }
    }

    /// The player whose video the layer shows (held strongly, as Apple's).
    public var player: AVPlayer? {
        get { state.withLock { $0.player } }
        set {
            let old = state.withLock { state in
                defer { state.player = newValue }
                return state.player
            }
            old?.detach(self)
            newValue?.attach(self)
        }
    }

    /// How the video fills the layer's bounds (`.resizeAspect` by default).
    public var videoGravity: AVLayerVideoGravity {
        get { state.withLock { $0.gravity } }
        set { state.withLock { $0.gravity = newValue } }
    }

    /// Whether a frame is ready to be shown.
    public var isReadyForDisplay: Bool { state.withLock { $0.newest != nil || $0.shown != nil } }

    /// Where the video is drawn in the layer's bounds, by the gravity and the frame's size.
    public var videoRect: CGRect { geometry(of: state.withLock { $0.newest ?? $0.shown }).videoRect }

    /// The pixel buffer attributes asked of the frames (kept; windows draw what the player decodes).
    public var pixelBufferAttributes: [String: any Sendable]? {
        get { state.withLock { $0.pixelBufferAttributes } }
        set { state.withLock { $0.pixelBufferAttributes = newValue } }
    }

    // MARK: For renderers

    /// The geometry a renderer draws `frame` with: the layer's bounds, the frame's size, the gravity.
    package func geometry(of frame: CMSampleBuffer?) -> PreviewGeometry {
        let size = frame?.imageBuffer.map { CGSize(width: $0.width, height: $0.height) } ?? .zero
        return PreviewGeometry(
            layerBounds: bounds, videoDimensions: size, videoGravity: videoGravity, rotation: .degrees0,
            isVideoMirrored: false)
    }

    /// Called (on the player's video thread) when a frame arrives; the renderer then takes it with
    /// ``takeNewest()``.
    package func setFrameHandler(_ handler: (@Sendable () -> Void)?) { state.withLock { $0.onFrame = handler } }

    /// The newest frame not yet taken; nil when none came since the last call. Frames not taken are replaced.
    package func takeNewest() -> CMSampleBuffer? {
        state.withLock { state in
            guard let newest = state.newest else { return nil }
            state.shown = newest
            state.newest = nil
            return newest
        }
    }

    func present(_ frame: CMSampleBuffer) {
        let handler = state.withLock { state in
            state.newest = frame
            return state.onFrame
        }
        handler?()
    }
}
