import Dispatch
import Foundation
import OpenCoreMedia
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// How a virtual device paces its stream.
///
/// Value type; safe from any thread.
package enum VirtualClockMode: Sendable, Hashable {
    /// Each frame or audio period is delivered when the host clock reaches its time: a live device (the default).
    case realTime
    /// Frames or periods are delivered as fast as the sink takes them, their timestamps still one frame (period)
    /// apart, so device time runs ahead of host time: for benchmarks and fast tests. Free-running devices keep
    /// together on the clock they share (`VirtualLockstep`): none gets more than 50 ms ahead of the slowest.
    case freeRunning
    /// Items are delivered when a test's clock reaches their time (`VirtualManualClock.advance(byNanoseconds:)`):
    /// tests step time instead of waiting for it.
    case manual(VirtualManualClock)

    /// The manual clock, if the stream is paced by one.
    package var manualClock: VirtualManualClock? {
        if case .manual(let clock) = self { clock } else { nil }
    }

    /// Whether the device's time is not the host's: free-running or on a manual clock.
    package var isDetachedFromHostClock: Bool {
        if case .realTime = self { false } else { true }
    }
}

/// The one thread a running virtual device streams on, and the requests other threads make of it (stop, fault,
/// stall).
///
/// The thread sleeps on the host clock to absolute deadlines, so a stream never drifts, on a `HostClockAlarm` that a
/// stop or a fault rings, so it wakes once per item and at once when asked to end.
///
/// Threading: thread safe. `run`, `sleep(untilHostNanoseconds:)` and the `take…` methods are for the capture thread
/// itself; the `request…` methods and `join` are for any other thread.
final class VirtualCaptureThread: Sendable {
    private struct Requests {
        var stop = false
        var fault: DeviceFault?
        var stallSeconds: Double?
        var threadID: pthread_t?
        var isFinished = false
    }

    /// The thread's name, as `top -H` and debuggers show it.
    let name: String
    /// The manual clock the stream is paced by and its place on it, taken before the thread starts and given up
    /// when the body returns, whatever it did.
    let manualTurn: (clock: VirtualManualClock, participant: VirtualManualClock.Participant)?
    /// The lockstep a free-running stream keeps: its device's (one per device set).
    let lockstep: VirtualLockstep
    private let requests = Mutex(Requests())
    /// Rung by a stop or a fault, so a sleeping thread wakes for it at once.
    private let alarm = HostClockAlarm()
    /// Signalled once when the body has returned; every waiter signals it again, so any number of joins pass.
    private let finished = DispatchSemaphore(value: 0)

    init(name: String, pacedBy clock: VirtualManualClock? = nil, lockstep: VirtualLockstep = .shared) {
        self.name = name
        self.lockstep = lockstep
        manualTurn = clock.map { ($0, $0.reserve()) }
    }

    /// Starts the thread running `body`.
    func start(_ body: @escaping @Sendable (VirtualCaptureThread) -> Void) {
        let thread = Thread { [self] in
            requests.withLock { $0.threadID = pthread_self() }
            body(self)
            if let manualTurn { manualTurn.clock.leave(manualTurn.participant) }
            requests.withLock { $0.isFinished = true }
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    // MARK: Requests from other threads

    /// Asks the thread to end without a further event.
    func requestStop() {
        requests.withLock { $0.stop = true }
        wakeWaits()
    }

    /// Wakes the capture thread wherever it waits (its sleep, the lockstep, its manual clock) to see a request.
    private func wakeWaits() {
        alarm.ring()
        lockstep.wakeWaiters()
        manualTurn?.clock.wakeWaiters()
    }

    /// Asks the thread to send `fault` and end (unless a stop was asked first).
    func requestFault(_ fault: DeviceFault) {
        requests.withLock { requests in
            if !requests.stop && requests.fault == nil { requests.fault = fault }
        }
        wakeWaits()
    }

    /// Asks the thread to deliver nothing for `seconds` of host time.
    func requestStall(seconds: Double) {
        requests.withLock { $0.stallSeconds = max(0, seconds) + ($0.stallSeconds ?? 0) }
    }

    /// Whether the body has returned.
    var isFinished: Bool { requests.withLock { $0.isFinished } }

    /// Whether the caller is this capture thread (a sink or a completion handler calling back into its device).
    var isCurrent: Bool {
        requests.withLock { requests in requests.threadID.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Waits until the body has returned. Returns at once when called on the capture thread itself, which cannot
    /// wait for itself: it ends when the sink or handler that called returns.
    func join() {
        guard !isCurrent else { return }
        finished.wait()
        finished.signal()
    }

    // MARK: The capture thread's side

    /// Whether a stop or a fault has been asked for.
    var isInterrupted: Bool { requests.withLock { $0.stop || $0.fault != nil } }

    /// The fault to send as the last event, if one was asked for.
    func takeFault() -> DeviceFault? {
        requests.withLock { requests in
            defer { requests.fault = nil }
            return requests.stop ? nil : requests.fault
        }
    }

    /// A stall asked for, in seconds, if any.
    func takeStall() -> Double? {
        requests.withLock { requests in
            defer { requests.stallSeconds = nil }
            return requests.stallSeconds
        }
    }

    /// Sleeps until the host clock reaches `deadline` (nanoseconds of `CLOCK_MONOTONIC`). Returns false, early,
    /// when a stop or a fault is asked for.
    func sleep(untilHostNanoseconds deadline: Int64) -> Bool {
        while !isInterrupted {
            if CMClock.hostNanosecondsNow() >= deadline { return true }
            // Rung only by a stop or a fault, which the loop's condition then sees.
            _ = alarm.sleep(untilHostNanoseconds: deadline)
        }
        return false
    }
}

/// How one stream is paced: the schedule of its items (frames or audio periods) and what to do with each.
///
/// Item `index` is due at host time `due(index)`. In real time the thread waits for each item's due time; if it
/// falls more than `lateTolerance` behind (a starved machine), it drops the items it missed as `.frameWasLate` and
/// goes on with the newest, so latency never accumulates. A stall asked for delivers nothing for that long, then
/// drops every item that fell due meanwhile as `.discontinuity`. Sequence numbers count every item from 0, dropped
/// or not, so `sequence == index − firstIndex` always.
///
/// Not `Sendable`: built and used on the capture thread.
struct VirtualStreamPacer {
    var firstIndex: Int64
    var clockMode: VirtualClockMode
    /// The nominal time between items, in nanoseconds (rounded up): the free-running stall's unit.
    var itemNanoseconds: Int64
    /// When item `index` is due, in host nanoseconds (real time).
    var due: (Int64) -> Int64
    /// Produces item `index` with its sequence number.
    var deliver: (_ index: Int64, _ sequence: UInt64) -> Void
    /// Reports item `index` as dropped.
    var drop: (_ index: Int64, _ sequence: UInt64, _ reason: DropReason) -> Void

    /// How far behind real time the thread may fall before it skips items: four items or 100 ms, the larger.
    var lateTolerance: Int64 { max(4 * itemNanoseconds, 100_000_000) }

    /// Runs until a stop or a fault is asked for; returns the fault to report, or nil after a stop.
    func run(on thread: VirtualCaptureThread) -> DeviceFault? {
        var index = firstIndex
        func sequence(_ index: Int64) -> UInt64 { UInt64(index - firstIndex) }
        /// Drops, as a discontinuity, the items a stall of `nanoseconds` spans on the device's own time line.
        func dropItems(spanning nanoseconds: Int64) {
            for _ in 0..<((nanoseconds + itemNanoseconds - 1) / itemNanoseconds) {
                drop(index, sequence(index), .discontinuity)
                index += 1
            }
        }
        // Free-running devices keep together on the virtual clock they share (see `VirtualLockstep`).
        let lockstep = clockMode == .freeRunning ? thread.lockstep : nil
        let participant = lockstep?.join(at: due(firstIndex))
        defer { if let lockstep, let participant { lockstep.leave(participant) } }
        // A manual clock paces its devices itself (and keeps them in a lockstep of their own); the thread took its
        // place on it before it started.
        let manual = thread.manualTurn
        if let manual { manual.clock.begin(manual.participant, at: due(firstIndex)) }
        streaming: while !thread.isInterrupted {
            switch clockMode {
            case .realTime:
                guard thread.sleep(untilHostNanoseconds: due(index)) else { break streaming }
                if let stall = thread.takeStall() {
                    let end = CMClock.hostNanosecondsNow() + Int64(stall * 1e9)
                    guard thread.sleep(untilHostNanoseconds: end) else { break streaming }
                    while due(index) < end {
                        drop(index, sequence(index), .discontinuity)
                        index += 1
                    }
                    continue
                }
                let now = CMClock.hostNanosecondsNow()
                if now - due(index) > lateTolerance {
                    while due(index + 1) <= now {
                        drop(index, sequence(index), .frameWasLate)
                        index += 1
                    }
                }
            case .manual:
                if let stall = thread.takeStall() {
                    // Device time is the clock's: the stall spans the items of that much of it, and no host time.
                    dropItems(spanning: Int64(stall * 1e9))
                    continue
                }
            case .freeRunning:
                if let stall = thread.takeStall() {
                    let stallNanoseconds = Int64(stall * 1e9)
                    guard thread.sleep(untilHostNanoseconds: CMClock.hostNanosecondsNow() + stallNanoseconds) else {
                        break streaming
                    }
                    // Device time runs ahead of host time here, so "the items that fell due" are those the stall
                    // spans on the device's own time line.
                    dropItems(spanning: stallNanoseconds)
                    continue
                }
            }
            if let lockstep, let participant,
                !lockstep.advance(participant, to: due(index), isInterrupted: { thread.isInterrupted })
            {
                break streaming
            }
            if let manual,
                !manual.clock.waitForTurn(manual.participant, at: due(index), isInterrupted: { thread.isInterrupted })
            {
                break streaming
            }
            if thread.isInterrupted { break streaming }
            deliver(index, sequence(index))
            index += 1
        }
        return thread.takeFault()
    }
}

/// What both virtual devices share: whether they are connected, busy or streaming, their clock mode, and the
/// capture thread while they stream.
///
/// Threading: thread safe; one mutex guards the state. Nothing is called out while it is held (threads are joined
/// and observers told after it is released), so a sink, an observer or a registry listener may call back into the
/// device.
package final class VirtualDeviceLifecycle: Sendable {
    private struct State {
        var isConnected = true
        var isBusy = false
        var clockMode = VirtualClockMode.realTime
        var thread: VirtualCaptureThread?
        var lockstep = VirtualLockstep.shared
    }

    private let state = Mutex(State())

    var isConnected: Bool { state.withLock { $0.isConnected } }
    var isBusy: Bool { state.withLock { $0.isBusy } }

    var clockMode: VirtualClockMode {
        get { state.withLock { $0.clockMode } }
        set { state.withLock { $0.clockMode = newValue } }
    }

    /// The lockstep the device keeps when free-running: `VirtualLockstep.shared`, or its device set's, so devices of
    /// different sets never wait for each other. Takes effect at the next `start`.
    package var lockstep: VirtualLockstep {
        get { state.withLock { $0.lockstep } }
        set { state.withLock { $0.lockstep = newValue } }
    }

    /// Whether a capture thread is running (started and not yet ended by a stop or a fault).
    var isStreaming: Bool { state.withLock { $0.thread.map { !$0.isFinished } ?? false } }

    /// Makes the capture thread, runs `prepare`, then starts the thread with `body`. Throws when unplugged or busy;
    /// traps when already streaming (the caller serializes start and stop).
    /// A stream paced by a manual clock (`pacedBy`) takes its place on it here, so an advance made as soon as the
    /// start returns waits for its first items.
    func start(
        name: String,
        pacedBy clock: VirtualManualClock? = nil,
        prepare: () -> Void,
        body: @escaping @Sendable (VirtualCaptureThread) -> Void
    ) throws(DeviceFault) {
        let thread = try state.withLock { state throws(DeviceFault) -> VirtualCaptureThread in
            guard state.isConnected else { throw DeviceFault.disconnected }
            guard !state.isBusy else { throw DeviceFault.busy }
            precondition(
                state.thread.map(\.isFinished) ?? true, "\(name): start() while streaming; call stop() first")
            let thread = VirtualCaptureThread(name: name, pacedBy: clock, lockstep: state.lockstep)
            state.thread = thread
            return thread
        }
        prepare()
        thread.start(body)
    }

    /// Stops the capture thread, if any, and waits for its last event.
    func stop() {
        let thread = state.withLock { state in
            defer { state.thread = nil }
            return state.thread
        }
        thread?.requestStop()
        thread?.join()
    }

    /// Marks the device gone; a streaming device sends `.fault(.disconnected)` and stops. Returns whether anything
    /// changed.
    func unplug() -> Bool {
        let (changed, thread) = state.withLock { state in
            defer { state.isConnected = false }
            return (state.isConnected, state.thread)
        }
        thread?.requestFault(.disconnected)
        thread?.join()
        return changed
    }

    /// Marks the device present again. Returns whether anything changed.
    func replug() -> Bool {
        state.withLock { state in
            defer { state.isConnected = true }
            return !state.isConnected
        }
    }

    /// Marks the device taken (or released) by another process; a streaming device sends `.fault(.busy)` and
    /// stops. Returns whether anything changed.
    func setBusy(_ busy: Bool) -> Bool {
        let (changed, thread) = state.withLock { state in
            defer { state.isBusy = busy }
            return (state.isBusy != busy, busy ? state.thread : nil)
        }
        thread?.requestFault(.busy)
        thread?.join()
        return changed
    }

    /// Asks a streaming device to deliver nothing for `seconds`; does nothing when it is not streaming.
    func stall(seconds: Double) {
        state.withLock { $0.thread }?.requestStall(seconds: seconds)
    }
}
