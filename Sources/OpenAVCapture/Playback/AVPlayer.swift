// AVPlayer: plays an item at a rate: play, pause, seek, the current time, periodic time observers, sound and video.

import Foundation
import OpenCoreMedia

/// Plays an ``AVPlayerItem``: its video to ``AVPlayerLayer``s and the item's ``AVPlayerItemVideoOutput``s, its sound
/// to an ALSA device, at ``rate`` (0.5 is half speed, 2 double; sound stretched by the item's
/// ``AVPlayerItem/audioTimePitchAlgorithm``), on the host clock.
///
/// Without a layer or an output the video is still decoded and clocked, and without a sound device the sound is
/// decoded, stretched and dropped: the player runs headless (tests, servers). ``audioOutputDeviceUniqueID`` names
/// the ALSA PCM (`default` when nil); ``audioOutputUnavailableReason`` says why nothing is heard.
///
/// Seeks are exact whatever the tolerance (a tolerance allows a seek to land anywhere within it; exact is within
/// every tolerance): the clock holds still until the frame at the sought time is shown, then the completion handler
/// runs with `true` (`false` when another seek replaced it). Negative rates (reverse play) are not supported and
/// act as 0. At the end the player pauses (``actionAtItemEnd`` `.pause`), the time stays at the item's duration
/// and ``AVPlayerItem/didPlayToEndTimeNotification`` is posted once.
///
/// Periodic time observers are called on their queue at every multiple of their interval of the item's time while
/// it plays, and at once with the time when it jumps, starts or stops (Apple's rule); at the end with the
/// duration.
///
/// Threading: thread safe (`@unchecked Sendable`): the state is guarded by the playback engine's lock. The player
/// runs three threads of its own (clock, video, audio) while it has an item. ``rate``, ``timeControlStatus``,
/// ``status`` and ``currentItem`` are key-value observable; their changes are delivered on the thread that made
/// them (the player's clock thread at the end).
open class AVPlayer: NSObject, KeyValueObservable, @unchecked Sendable {
    /// Whether the player can play; Apple's raw values.
    ///
    /// Threading: a value; `Sendable`.
    public enum Status: Int, Sendable {
        case unknown = 0
        case readyToPlay = 1
        case failed = 2
    }

    /// Whether time is advancing; Apple's raw values.
    ///
    /// Threading: a value; `Sendable`.
    public enum TimeControlStatus: Int, Sendable {
        case paused = 0
        case waitingToPlayAtSpecifiedRate = 1
        case playing = 2
    }

    /// What happens at the item's end. Ours pauses whichever is set (Apple's `AVPlayer` default, `.pause`).
    ///
    /// Threading: a value; `Sendable`.
    public enum ActionAtItemEnd: Int, Sendable {
        case advance = 0
        case pause = 1
        case none = 2
    }

    /// The player's key-value observers (``rate``, ``timeControlStatus``, ``status``, ``currentItem``).
    public let keyValueObservers = KeyValueObserverRegistry()
    let engine = PlaybackEngine()
    private let audio = PlayerAudioOutput()
    private let pipelines: PlaybackPipelines
    private var lastPublished: (rate: Float, status: TimeControlStatus) = (0, .paused)
    private let publishLock = NSLock()

    /// A player with no item.
    public override init() {
        pipelines = PlaybackPipelines(engine: engine, audio: audio)
        super.init()
        engine.onStatusChange = { [weak self] in self?.publishStatus() }
    }

    /// A player of the file at `url`.
    public convenience init(url: URL) {
        self.init(playerItem: AVPlayerItem(url: url))
    }

    /// A player of `item`.
    public convenience init(playerItem item: AVPlayerItem?) {
        self.init()
        replaceCurrentItem(with: item)
    }

    deinit {
        engine.stop()
    }

    /// The item played.
    public var currentItem: AVPlayerItem? { engine.locked { state, _ in state.item } }

    /// Plays `item` instead, from its start, paused or at the rate set.
    public func replaceCurrentItem(with item: AVPlayerItem?) {
        let old = currentItem
        guard old !== item else { return }
        let oldStatus = status
        item?.player = self
        item?.prepare()
        let ready = item?.status == .readyToPlay
        engine.locked { state, _ in
            state.item = ready ? item : nil
            state.clock.restart(at: .zero, rate: 0)
            state.endReported = false
            state.videoGeneration += 1
            state.seeking = ready
            clockAndCompletionsChanged(&state)
        }
        if ready { engine.startThreads(pipelines: pipelines) }
        keyValueObservers.notifyChange(\AVPlayer.currentItem, of: self, from: old, to: item)
        if status != oldStatus {
            keyValueObservers.notifyChange(\AVPlayer.status, of: self, from: oldStatus, to: status)
        }
        publishStatus()
    }

    /// `.readyToPlay` once it has an item that is; `.failed` when the item failed.
    public var status: Status {
        switch currentItem?.status ?? .unknown {
        case .readyToPlay: .readyToPlay
        case .failed: .failed
        case .unknown: .unknown
        }
    }

    /// Why the player failed (its item's error).
    public var error: (any Error)? { currentItem?.error }

    /// The playback rate: 0 paused, 1 normal, 0.5 half speed, 2 double. Setting a rate above 0 plays. Key-value
    /// observable; becomes 0 at the end.
    public var rate: Float {
        get { engine.locked { state, _ in state.rate } }
        set {
            engine.locked { state, _ in
                state.rate = max(0, newValue.isFinite ? newValue : 0)
                engine.clockChanged(&state)
            }
            publishStatus()
        }
    }

    /// The rate ``play()`` plays at (1 by default).
    public var defaultRate: Float = 1

    /// Whether time is advancing (`.playing`), waiting for a seek's frame (`.waitingToPlayAtSpecifiedRate`), or
    /// not (`.paused`). Key-value observable.
    public var timeControlStatus: TimeControlStatus {
        engine.locked { state, _ in Self.timeControlStatus(state) }
    }

    /// Why the player waits, when ``timeControlStatus`` is `.waitingToPlayAtSpecifiedRate` (a seek's frame).
    public var reasonForWaitingToPlay: String? {
        timeControlStatus == .waitingToPlayAtSpecifiedRate ? "AVPlayerWaitingToMinimizeStallsReason" : nil
    }

    private static func timeControlStatus(_ state: PlaybackEngine.State) -> TimeControlStatus {
        guard state.rate > 0, state.item != nil else { return .paused }
        return state.seeking ? .waitingToPlayAtSpecifiedRate : .playing
    }

    /// What happens at the item's end; ours pauses (see ``ActionAtItemEnd``).
    public var actionAtItemEnd: ActionAtItemEnd = .pause

    /// The sound's volume, 0 … 1.
    public var volume: Float {
        get { engine.locked { state, _ in state.volume } }
        set { engine.locked { state, _ in state.volume = max(0, min(1, newValue)) } }
    }

    /// Whether the sound is silenced.
    public var isMuted: Bool {
        get { engine.locked { state, _ in state.isMuted } }
        set { engine.locked { state, _ in state.isMuted = newValue } }
    }

    /// The ALSA PCM the sound plays on (`default`, `hw:CARD=PCH,DEV=0`, `file:FILE=/tmp/out.raw,FORMAT=raw` …);
    /// nil is `default`. Apple's macOS property names a Core Audio device; ours names an ALSA PCM.
    public var audioOutputDeviceUniqueID: String? {
        get { audio.device }
        set {
            audio.device = newValue
            engine.locked { state, _ in engine.clockChanged(&state) }
        }
    }

    /// Ours: why the sound is not heard (no ALSA device, or it cannot play the item's format), once the player has
    /// tried to open it; nil while sound plays to a device.
    public var audioOutputUnavailableReason: String? { audio.unavailableReason }

    /// Plays at ``defaultRate``.
    public func play() { rate = defaultRate }

    /// Pauses (rate 0).
    public func pause() { rate = 0 }

    /// The current item's time.
    public func currentTime() -> CMTime { engine.locked { state, _ in engine.currentTime(state) } }

    // MARK: Seeking

    /// Moves to `time` (clamped to the item), exactly.
    public func seek(to time: CMTime) { seek(to: time, toleranceBefore: .zero, toleranceAfter: .zero) { _ in } }

    /// Moves to `time`; `completionHandler` runs with `true` once the frame there is shown, `false` when another
    /// seek replaced this one.
    public func seek(to time: CMTime, completionHandler: @escaping @Sendable (Bool) -> Void) {
        seek(to: time, toleranceBefore: .zero, toleranceAfter: .zero, completionHandler: completionHandler)
    }

    /// Moves to `time`, within the tolerances (ours is always exact).
    public func seek(to time: CMTime, toleranceBefore: CMTime, toleranceAfter: CMTime) {
        seek(to: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter) { _ in }
    }

    /// Moves to `time` within the tolerances (ours is always exact); `completionHandler` as
    /// ``seek(to:completionHandler:)``.
    public func seek(
        to time: CMTime, toleranceBefore: CMTime, toleranceAfter: CMTime,
        completionHandler: @escaping @Sendable (Bool) -> Void
    ) {
        precondition(
            time.isValid && toleranceBefore.isValid && toleranceAfter.isValid && toleranceBefore >= .zero
                && toleranceAfter >= .zero,
            "*** -[AVPlayer seekToTime:toleranceBefore:toleranceAfter:] the time must be valid and the tolerances "
                + "valid and not negative")
        let accepted = engine.locked { state, after -> Bool in
            guard let item = state.item, let duration = item.durationIfReady else { return false }
            var target = time.isNumeric ? time : (time == .negativeInfinity ? .zero : duration)
            if target < .zero { target = .zero }
            if duration.isNumeric, target > duration { target = duration }
            let replaced = state.seekCompletions
            state.seekCompletions = [completionHandler]
            after.append { for completion in replaced { completion(false) } }
            state.seeking = true
            state.clock.restart(at: target, rate: 0)
            state.endReported = false
            state.videoGeneration += 1
            clockAndCompletionsChanged(&state)
            return true
        }
        if !accepted { completionHandler(false) }
        publishStatus()
    }

    /// Moves to `time`; true once the frame there is shown, false when another seek replaced this one.
    public func seek(to time: CMTime) async -> Bool {
        await withCheckedContinuation { continuation in
            seek(to: time) { continuation.resume(returning: $0) }
        }
    }

    /// Moves to `time` within the tolerances (exact here); as ``seek(to:)``.
    public func seek(to time: CMTime, toleranceBefore: CMTime, toleranceAfter: CMTime) async -> Bool {
        await withCheckedContinuation { continuation in
            seek(to: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter) {
                continuation.resume(returning: $0)
            }
        }
    }

    private func clockAndCompletionsChanged(_ state: inout PlaybackEngine.State) {
        engine.clockChanged(&state)
    }

    // MARK: Time observers

    /// Calls `block` on `queue` (the main queue when nil) every `interval` of the item's time while it plays, and
    /// when time jumps, starts or stops. Keep the returned token to remove the observer.
    public func addPeriodicTimeObserver(
        forInterval interval: CMTime, queue: DispatchQueue?, using block: @escaping @Sendable (CMTime) -> Void
    ) -> Any {
        precondition(
            interval.isNumeric && interval > .zero,
            "*** -[AVPlayer addPeriodicTimeObserverForInterval:queue:usingBlock:] the interval must be a valid, "
                + "positive time")
        let observer = PlaybackEngine.TimeObserver(interval: interval, queue: queue ?? .main, block: block)
        engine.locked { state, _ in
            state.observers.append(observer)
            state.observersDue = engine.currentTime(state)
        }
        return observer
    }

    /// Stops an observer that ``addPeriodicTimeObserver(forInterval:queue:using:)`` returned. Traps for anything
    /// else (Apple raises).
    public func removeTimeObserver(_ observer: Any) {
        guard let observer = observer as? PlaybackEngine.TimeObserver else {
            preconditionFailure("*** -[AVPlayer removeTimeObserver:] the observer was not returned by this player")
        }
        engine.locked { state, _ in state.observers.removeAll { $0 === observer } }
    }

    // MARK: Layers and status

    func attach(_ layer: AVPlayerLayer) {
        engine.locked { state, _ in
            state.layers.append(.init(layer: layer))
            // The layer gets the frame on screen: the video thread shows it again from the current time.
            state.videoGeneration += 1
            state.seeking = state.item != nil
            engine.clockChanged(&state)
        }
        publishStatus()
    }

    func detach(_ layer: AVPlayerLayer) {
        engine.locked { state, _ in state.layers.removeAll { $0.layer === layer || $0.layer == nil } }
    }

    /// Tells key-value observers of ``rate`` and ``timeControlStatus`` what changed since last told.
    private func publishStatus() {
        let now = engine.locked { state, _ in (state.rate, Self.timeControlStatus(state)) }
        let before = publishLock.withLock {
            defer { lastPublished = now }
            return lastPublished
        }
        if before.rate != now.0 {
            keyValueObservers.notifyChange(\AVPlayer.rate, of: self, from: before.rate, to: now.0)
        }
        if before.status != now.1 {
            keyValueObservers.notifyChange(\AVPlayer.timeControlStatus, of: self, from: before.status, to: now.1)
        }
    }
}
