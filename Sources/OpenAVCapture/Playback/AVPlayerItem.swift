// AVPlayerItem: an asset as a player plays it: its status, duration, time, outputs and time-pitch algorithm.

import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// The key of the ``AVError`` in ``AVPlayerItem/failedToPlayToEndTimeNotification``'s user info.
public let AVPlayerItemFailedToPlayToEndTimeErrorKey = "AVPlayerItemFailedToPlayToEndTimeErrorKey"

/// An asset's presentation state as an ``AVPlayer`` plays it.
///
/// The item becomes `.readyToPlay` (or `.failed`, with ``error``) when a player takes it: its asset is read then,
/// synchronously (Apple's loads asynchronously; observers of ``status`` see the same change). ``duration`` is
/// `.indefinite` until then. When playback reaches the end, ``didPlayToEndTimeNotification`` is posted once, with
/// the item as its object.
///
/// Threading: thread safe (`@unchecked Sendable`): a mutex guards the state. ``status`` is key-value observable.
open class AVPlayerItem: NSObject, KeyValueObservable, @unchecked Sendable {
    /// Whether the item can be played; Apple's raw values.
    ///
    /// Threading: a value; `Sendable`.
    public enum Status: Int, Sendable {
        case unknown = 0
        case readyToPlay = 1
        case failed = 2
    }

    /// Posted (object: the item) when the item has played to its end.
    public static let didPlayToEndTimeNotification = NSNotification.Name("AVPlayerItemDidPlayToEndTimeNotification")
    /// Posted (object: the item; user info: ``AVPlayerItemFailedToPlayToEndTimeErrorKey``) when playback fails.
    public static let failedToPlayToEndTimeNotification = NSNotification.Name(
        "AVPlayerItemFailedToPlayToEndTimeNotification")

    private struct State {
        var status: Status = .unknown
        var error: AVError?
        var duration: CMTime = .indefinite
        var presentationSize: CGSize = .zero
        var algorithm: AVAudioTimePitchAlgorithm = .timeDomain
        var outputs: [AVPlayerItemOutput] = []
        var lastFrame: CMSampleBuffer?
        var skippedFrames = 0
    }

    /// The asset played.
    public let asset: AVAsset
    /// The item's key-value observers (``status``).
    public let keyValueObservers = KeyValueObserverRegistry()
    private let state = Mutex(State())
    weak var player: AVPlayer?

    /// An item playing `asset`.
    public init(asset: AVAsset) {
        self.asset = asset
        super.init()
    }

    /// An item playing `asset`; the keys are accepted for Apple's signature (everything is loaded when played).
    public convenience init(asset: AVAsset, automaticallyLoadedAssetKeys: [String]?) {
        self.init(asset: asset)
    }

    /// An item playing the movie or sound file at `url`.
    public convenience init(url: URL) {
        self.init(asset: AVURLAsset(url: url))
    }

    /// Whether the item can be played. Key-value observable.
    public var status: Status { state.withLock { $0.status } }
    /// Why the item failed, when ``status`` is `.failed`.
    public var error: (any Error)? { state.withLock { $0.error } }
    /// The item's duration; `.indefinite` until it is ready to play.
    public var duration: CMTime { state.withLock { $0.duration } }
    /// The size the video is shown at (the video track's natural size); zero without video or before ready.
    public var presentationSize: CGSize { state.withLock { $0.presentationSize } }

    /// How sound is stretched at rates other than 1: `.spectral` and `.timeDomain` keep the pitch (both are
    /// libavfilter's `atempo` here), `.varispeed` moves it with the rate. `.timeDomain` by default. A change takes
    /// effect at the next play, rate change or seek.
    public var audioTimePitchAlgorithm: AVAudioTimePitchAlgorithm {
        get { state.withLock { $0.algorithm } }
        set { state.withLock { $0.algorithm = newValue } }
    }

    /// Fast forward plays at any rate above 1 (sound stretched up to 100×).
    public var canPlayFastForward: Bool { true }
    /// Slow forward plays at any rate between 0 and 1.
    public var canPlaySlowForward: Bool { true }
    /// Reverse play is not supported here.
    public var canPlayReverse: Bool { false }
    /// Reverse play is not supported here.
    public var canPlayFastReverse: Bool { false }
    /// Reverse play is not supported here.
    public var canPlaySlowReverse: Bool { false }

    /// The item's current time: its player's, or zero when no player has it.
    public func currentTime() -> CMTime { player?.currentTime() ?? .zero }

    /// Seeks the item's player (see ``AVPlayer/seek(to:completionHandler:)``); `false` at once when no player has it.
    public func seek(to time: CMTime, completionHandler: (@Sendable (Bool) -> Void)?) {
        guard let player else {
            completionHandler?(false)
            return
        }
        player.seek(to: time, completionHandler: completionHandler ?? { _ in })
    }

    /// The outputs that receive the item's video.
    public var outputs: [AVPlayerItemOutput] { state.withLock { $0.outputs } }

    /// Adds an output; it gets the frame on screen at once, and every frame shown after.
    public func add(_ output: AVPlayerItemOutput) {
        let frame = state.withLock { state -> CMSampleBuffer? in
            if !state.outputs.contains(where: { $0 === output }) { state.outputs.append(output) }
            return state.lastFrame
        }
        if let frame { output.present(frame) }
    }

    /// Removes an output.
    public func remove(_ output: AVPlayerItemOutput) {
        state.withLock { $0.outputs.removeAll { $0 === output } }
    }

    // MARK: For the player

    /// The duration once ready; nil before.
    var durationIfReady: CMTime? {
        state.withLock { $0.status == .readyToPlay ? $0.duration : nil }
    }

    /// The pixel format frames are decoded to: what the first video output asks, else NV12 (what windows draw).
    var videoPixelFormat: OSType {
        let outputs = outputs.compactMap { $0 as? AVPlayerItemVideoOutput }
        return outputs.compactMap(\.pixelFormat).first ?? kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
    }

    /// Reads the asset: ready to play, or failed with the reason.
    func prepare() {
        guard status == .unknown else { return }
        var result: Result<(CMTime, CGSize), AVError>
        do {
            if asset.path != nil { _ = try asset.loadedContents() }
            let size = asset.tracks(withMediaType: .video).first?.naturalSize ?? .zero
            if asset.tracks.isEmpty {
                result = .failure(AVError(.fileFormatNotRecognized, "the asset has no tracks to play"))
            } else {
                result = .success((asset.duration, size))
            }
        } catch let error as AVError {
            result = .failure(error)
        } catch {
            result = .failure(AVError(.unknown, "\(error)"))
        }
        let old = status
        state.withLock { state in
            switch result {
            case .success(let (duration, size)):
                state.status = .readyToPlay
                state.duration = duration
                state.presentationSize = size
            case .failure(let error):
                state.status = .failed
                state.error = error
            }
        }
        keyValueObservers.notifyChange(\AVPlayerItem.status, of: self, from: old, to: status)
    }

    func markFailed(_ error: AVError) {
        let old = status
        state.withLock { state in
            state.status = .failed
            state.error = error
        }
        keyValueObservers.notifyChange(\AVPlayerItem.status, of: self, from: old, to: Status.failed)
    }

    /// A frame reached the screen: every output gets it.
    func present(_ frame: CMSampleBuffer) {
        let outputs = state.withLock { state in
            state.lastFrame = frame
            return state.outputs
        }
        for output in outputs { output.present(frame) }
    }

    func countSkippedFrame() { state.withLock { $0.skippedFrames += 1 } }

    /// Frames not shown because the next was due already (the machine was behind).
    var skippedFrames: Int { state.withLock { $0.skippedFrames } }
}

/// What takes an item's samples as it plays. Use ``AVPlayerItemVideoOutput``.
///
/// Threading: thread safe (`@unchecked Sendable`).
open class AVPlayerItemOutput: NSObject, @unchecked Sendable {
    /// Whether the player's layers should not show the video (kept; our layers show it regardless).
    public var suppressesPlayerRendering = false

    override init() { super.init() }

    /// A frame shown; subclasses keep it.
    func present(_ frame: CMSampleBuffer) {}
}
