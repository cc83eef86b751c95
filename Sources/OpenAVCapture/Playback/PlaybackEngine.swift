// PlaybackEngine: the player's clock, its time observers and its end, shared with the video and audio threads.

import Foundation
import OpenCoreMedia

/// What plays an ``AVPlayer``'s item: one lock (a condition) guarding the clock and the requests, and three threads
/// that wait on it: the clock thread (periodic time observers, the item's end), the video thread and the audio
/// thread (``PlaybackPipelines``), which decode from the item's time and hand samples out when the clock reaches
/// them.
///
/// Requests are generations: a seek or a new item bumps the video generation (the video thread starts again from
/// the clock's time and shows that frame at once: the preroll); every discontinuity of the clock (play, pause, a
/// rate change, a seek done) bumps the audio generation (the audio thread throws away what the device holds and
/// starts again, stretched for the new rate). A seek holds the clock still until its frame is shown, so a seek is
/// exact and the clock never runs ahead of the picture it starts from.
///
/// Threading: thread safe (`@unchecked Sendable`): everything mutable is guarded by `condition`; callbacks (time
/// observers on their queues, notifications, key-value observers, seek completions) run after the lock is released.
final class PlaybackEngine: @unchecked Sendable {
    /// A periodic time observer: its block, queue and next tick on the item's timeline.
    final class TimeObserver: @unchecked Sendable {
        let interval: CMTime
        let queue: DispatchQueue
        let block: @Sendable (CMTime) -> Void
        var nextTick: CMTime = .invalid
        init(interval: CMTime, queue: DispatchQueue, block: @escaping @Sendable (CMTime) -> Void) {
            (self.interval, self.queue, self.block) = (interval, queue, block)
        }

        /// The first multiple of the interval after `time`.
        func tick(after time: CMTime) -> CMTime {
            let count = Int64((CMTimeGetSeconds(time) / CMTimeGetSeconds(interval)).rounded(.down)) + 1
            return CMTime(value: interval.value * count, timescale: interval.timescale)
        }
    }

    struct State {
        var item: AVPlayerItem?
        var clock = PlaybackClock()
        /// The rate asked for (``AVPlayer/rate``); the clock runs at it unless seeking or at the end.
        var rate: Float = 0
        var seeking = false
        var seekCompletions: [@Sendable (Bool) -> Void] = []
        var videoGeneration = 0
        var audioGeneration = 0
        var observers: [TimeObserver] = []
        /// Observers are called at once with this time (where a jump, a start or a stop happened), then resume
        /// their ticks.
        var observersDue: CMTime?
        var endReported = false
        var stopped = false
        var layers: [WeakLayer] = []
        var volume: Float = 1
        var isMuted = false
        var audioDevice: String?
    }

    struct WeakLayer { weak var layer: AVPlayerLayer? }

    let condition = NSCondition()
    /// Guarded by ``condition``.
    var state = State()
    /// Called after a change of rate or time-control status (for key-value observers), off the lock.
    var onStatusChange: (@Sendable () -> Void)?
    private var threadsStarted = false

    /// Runs `body` holding the lock, then whatever `after` collected, without it.
    func locked<T>(_ body: (inout State, inout [() -> Void]) -> T) -> T {
        condition.lock()
        var after: [() -> Void] = []
        let result = body(&state, &after)
        condition.broadcast()
        condition.unlock()
        for effect in after { effect() }
        return result
    }

    /// The item's time now, within its duration.
    func currentTime(_ state: State) -> CMTime {
        let time = state.clock.mediaTime(atHost: PlaybackClock.hostNow())
        if let duration = state.item?.durationIfReady, duration.isNumeric, time > duration { return duration }
        return time
    }

    /// Re-anchors the clock at the current time for the current rate (0 while seeking or with no item), and tells
    /// the audio thread and the observers. Call with the lock held.
    func clockChanged(_ state: inout State) {
        let now = PlaybackClock.hostNow()
        let time = currentTime(state)
        let running = state.item != nil && !state.seeking && state.rate > 0
        state.clock.restart(at: time, rate: running ? Double(state.rate) : 0, host: now)
        state.audioGeneration += 1
        state.observersDue = time
    }

    func startThreads(pipelines: PlaybackPipelines) {
        let start = condition.withLock {
            defer { threadsStarted = true }
            return !threadsStarted
        }
        guard start else { return }
        let bodies: [(String, @Sendable () -> Void)] = [
            ("AVPlayer clock", { @Sendable [self] in runClock() }),
            ("AVPlayer video", { @Sendable in pipelines.runVideo() }),
            ("AVPlayer audio", { @Sendable in pipelines.runAudio() }),
        ]
        for (name, body) in bodies {
            let thread = Thread(block: body)
            thread.name = name
            thread.start()
        }
    }

    /// Ends the threads (the player went away).
    func stop() {
        locked { state, _ in state.stopped = true }
    }

    // MARK: The clock thread

    private func runClock() {
        condition.lock()
        defer { condition.unlock() }
        while !state.stopped {
            guard let item = state.item, let duration = item.durationIfReady else {
                condition.wait()
                continue
            }
            if let due = state.observersDue {
                state.observersDue = nil
                for observer in state.observers {
                    fire(observer, at: due)
                    observer.nextTick = observer.tick(after: due)
                }
            }
            let now = currentTime(state)
            guard state.clock.rate > 0 else {
                condition.wait()
                continue
            }
            if duration.isNumeric, now >= duration {
                reachEnd(of: item, at: duration)
                continue
            }
            var deadline = duration
            for observer in state.observers {
                if !observer.nextTick.isNumeric { observer.nextTick = observer.tick(after: now) }
                while observer.nextTick <= now {
                    fire(observer, at: observer.nextTick)
                    observer.nextTick = observer.nextTick + observer.interval
                }
                if observer.nextTick < deadline || !deadline.isNumeric { deadline = observer.nextTick }
            }
            guard let host = state.clock.hostTime(ofMedia: deadline) else { continue }
            let wait = host - PlaybackClock.hostNow()
            if wait > 0 { _ = condition.wait(until: Date(timeIntervalSinceNow: wait)) }
        }
    }

    private func fire(_ observer: TimeObserver, at time: CMTime) {
        let block = observer.block
        observer.queue.async { block(time) }
    }

    /// The item played to its end: the clock stops there, the rate becomes 0 (Apple's `actionAtItemEnd` `.pause`),
    /// observers hear the end time, and the end notification goes out once. Called with the lock held.
    private func reachEnd(of item: AVPlayerItem, at end: CMTime) {
        // The audio thread is not restarted: it writes and drains the last of the sound, whose times are all
        // before the end.
        state.clock.restart(at: end, rate: 0)
        state.rate = 0
        for observer in state.observers {
            fire(observer, at: end)
            observer.nextTick = .invalid
        }
        let report = !state.endReported
        state.endReported = true
        let onStatusChange = onStatusChange
        condition.broadcast()
        condition.unlock()
        onStatusChange?()
        if report {
            NotificationCenter.default.post(name: AVPlayerItem.didPlayToEndTimeNotification, object: item)
        }
        condition.lock()
    }

    // MARK: For the pipelines

    /// A request the video or audio thread works on.
    struct Job {
        var generation: Int
        var item: AVPlayerItem
        var start: CMTime
        var rate: Double
    }

    enum Kind { case video, audio }

    private func generation(_ kind: Kind) -> Int {
        kind == .video ? state.videoGeneration : state.audioGeneration
    }

    /// Waits for a generation after `seen`; nil when the player is gone.
    func nextJob(_ kind: Kind, after seen: Int) -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while !state.stopped {
            if generation(kind) != seen, let item = state.item {
                return Job(
                    generation: generation(kind), item: item, start: currentTime(state), rate: state.clock.rate)
            }
            condition.wait()
        }
        return nil
    }

    func isCurrent(_ kind: Kind, _ generation: Int) -> Bool {
        condition.withLock { !state.stopped && self.generation(kind) == generation }
    }

    /// Waits until the clock reaches `media` less `lead` host seconds; false when the job was replaced meanwhile.
    func waitUntil(_ media: CMTime, lead: Double = 0, _ kind: Kind, _ generation: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !state.stopped, self.generation(kind) == generation {
            if currentTime(state) >= media { return true }
            guard let host = state.clock.hostTime(ofMedia: media) else {
                condition.wait()
                continue
            }
            let wait = host - lead - PlaybackClock.hostNow()
            if wait <= 0 { return true }
            _ = condition.wait(until: Date(timeIntervalSinceNow: wait))
        }
        return false
    }

    /// The clock's time now.
    func now() -> CMTime { condition.withLock { currentTime(state) } }

    /// The video thread showed the first frame of `generation`: a seek waiting for it is done and the clock runs.
    func prerolled(_ generation: Int) {
        locked { state, after in
            guard state.videoGeneration == generation, state.seeking else { return }
            state.seeking = false
            clockChanged(&state)
            let completions = state.seekCompletions
            state.seekCompletions = []
            after.append { for completion in completions { completion(true) } }
            if let onStatusChange { after.append(onStatusChange) }
        }
    }

    /// The layers to show frames in.
    func liveLayers() -> [AVPlayerLayer] {
        condition.withLock {
            state.layers.removeAll { $0.layer == nil }
            return state.layers.compactMap(\.layer)
        }
    }

    /// Playback of `item` failed: the player stops and the item says why.
    func fail(_ item: AVPlayerItem, _ error: AVError) {
        locked { state, after in
            guard state.item === item else { return }
            state.rate = 0
            clockChanged(&state)
            after.append {
                item.markFailed(error)
                NotificationCenter.default.post(
                    name: AVPlayerItem.failedToPlayToEndTimeNotification, object: item,
                    userInfo: [AVPlayerItemFailedToPlayToEndTimeErrorKey: error])
            }
            if let onStatusChange { after.append(onStatusChange) }
        }
    }
}

extension PlaybackEngine {
    /// What sound is multiplied by: the volume, or 0 when muted.
    var gain: Float { condition.withLock { state.isMuted ? 0 : state.volume } }
}
