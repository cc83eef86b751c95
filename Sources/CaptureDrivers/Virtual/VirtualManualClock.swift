import Foundation
import OpenCoreMedia

/// A clock a test moves by hand: virtual devices paced by it deliver an item only once the clock has reached the
/// item's time, and ``advance(by:timeout:)`` returns when every one of them has delivered everything due by then.
///
/// So a test steps time instead of waiting for it: `advance(by: 1 s)` makes a 30 fps camera deliver exactly the
/// frames of the next second, and when it returns the sinks have had them all, however loaded the machine is.
///
/// The clock's time is the sum of its advances. A device delivers its first item as it starts, and each later item
/// when the clock has moved on from the start by the item's distance from the first. Items keep the timestamps a
/// live device gives them (host time from the device's start). Devices on one clock also keep together as
/// free-running ones do (`VirtualLockstep`): none runs more than 50 ms ahead of the slowest within one advance.
///
/// Threading: thread safe. `advance` is for the test's thread; `reserve` for the thread starting a device;
/// `begin`, `waitForTurn` and `leave` for the capture threads of the devices it paces, each for its own
/// participant. Identity is the clock: two values are equal only when they are the same clock.
package final class VirtualManualClock: @unchecked Sendable, Hashable {
    /// One device taking part; the token `reserve` gives and the other calls take.
    package struct Participant: Hashable, Sendable {
        fileprivate let id: Int
    }

    // `@unchecked Sendable`: the condition's lock guards every field below it.
    private let condition = NSCondition()
    /// The clock's time: every advance so far, exactly (a thirtieth of a second is not a whole nanosecond).
    private var exact = CMTime.zero
    /// The clock's time in nanoseconds, rounded up: an item is due when its time in nanoseconds (which devices
    /// round up too) is at most this, so thirty advances of 1/30 s give exactly thirty frames at 30 fps.
    private var now: Int64 = 0
    /// Where each participant is.
    private enum Member {
        /// Reserved, its thread not yet begun: its first item goes at this clock time (when it was started).
        case starting(at: Int64)
        /// Begun: its item due at host time `h` is due at clock time `h − anchor`; `next` is its next item's clock
        /// time (everything before it is delivered); `token` its place in the lockstep.
        case running(anchor: Int64, next: Int64, token: VirtualLockstep.Participant)
    }
    private var members: [Int: Member] = [:]
    private var nextID = 0
    /// The lockstep the clock's own devices share (not the process-wide one of free-running devices).
    private let lockstep = VirtualLockstep()

    package init() {}

    /// How far the clock has been advanced, in nanoseconds (rounded up).
    package var elapsedNanoseconds: Int64 {
        condition.lock()
        defer { condition.unlock() }
        return now
    }

    /// How many devices are on the clock now (starting or streaming).
    package var deviceCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return members.count
    }

    /// How far the clock has been advanced, exactly.
    package var elapsed: CMTime {
        condition.lock()
        defer { condition.unlock() }
        return exact
    }

    /// `advance(by:timeout:)` by a whole number of nanoseconds.
    @discardableResult
    package func advance(byNanoseconds nanoseconds: Int64, timeout: Double = 60) -> Bool {
        advance(by: CMTime(value: nanoseconds, timescale: 1_000_000_000), timeout: timeout)
    }

    /// Moves the clock on by `nanoseconds` and waits until every device on it has delivered every item due by the
    /// new time (its sink returned) or has stopped. A device that is starting (reserved, not yet begun) is waited
    /// for too. Returns false when that takes longer than `timeout` seconds of host time (a sink that never
    /// returns, a device that cannot get buffers).
    @discardableResult
    package func advance(by duration: CMTime, timeout: Double = 60) -> Bool {
        precondition(
            duration.isNumeric && duration >= .zero,
            "a clock cannot go back: advance(by:) takes a duration of 0 or more")
        condition.lock()
        defer { condition.unlock() }
        exact = exact + duration
        now = exact.convertScale(1_000_000_000, method: .roundTowardPositiveInfinity).value
        condition.broadcast()
        let deadline = Date(timeIntervalSinceNow: timeout)
        while hasItemsDue {
            guard condition.wait(until: deadline) else { return !hasItemsDue }
        }
        return true
    }

    /// Whether a device is starting, or has an item due by the clock's time still to deliver. Under the lock.
    private var hasItemsDue: Bool {
        members.values.contains { member in
            switch member {
            case .starting: true
            case .running(_, let next, _): next <= now
            }
        }
    }

    /// Takes part: called where the device starts, before its capture thread runs, so an advance made as soon as
    /// the start returns waits for the device's first items. `begin` says where its items start.
    package func reserve() -> Participant {
        condition.lock()
        defer { condition.unlock() }
        nextID += 1
        members[nextID] = .starting(at: now)
        return Participant(id: nextID)
    }

    /// The device's first item is due at host time `position`: on the clock, that is when the device started (it
    /// was reserved), so a device delivers its first item as it starts, and its later items follow the clock from
    /// there, including advances made while its thread was starting.
    package func begin(_ participant: Participant, at position: Int64) {
        condition.lock()
        defer { condition.unlock() }
        guard case .starting(let start) = members[participant.id] else { return }
        members[participant.id] = .running(anchor: position - start, next: start, token: lockstep.join(at: start))
        condition.broadcast()
    }

    /// Records that `participant` has delivered everything before `position`, then waits until the clock's other
    /// devices are within the lockstep window of it and the clock has reached `position`. Returns false, early,
    /// when `isInterrupted` says so: it is asked before each wait and after each wake-up, so whatever makes it true
    /// must then call ``wakeWaiters()``.
    ///
    /// The position is recorded first, so an advance does not wait for a device whose next item lies past it while
    /// that device waits in the lockstep. The lockstep comes before the clock: a device waiting for the clock has
    /// told the lockstep its next item's time, which is past the clock's, so no device due by then waits for it.
    package func waitForTurn(_ participant: Participant, at position: Int64, isInterrupted: () -> Bool) -> Bool {
        condition.lock()
        guard case .running(let anchor, _, let token) = members[participant.id] else {
            // Left already (the device is stopping), or never begun: nothing more is delivered.
            condition.unlock()
            return false
        }
        let due = position - anchor
        members[participant.id] = .running(anchor: anchor, next: due, token: token)
        condition.broadcast()
        condition.unlock()
        guard lockstep.advance(token, to: due, isInterrupted: isInterrupted) else { return false }
        condition.lock()
        defer { condition.unlock() }
        while due > now {
            if isInterrupted() { return false }
            condition.wait()
        }
        return true
    }

    /// Wakes every device waiting in ``waitForTurn(_:at:isInterrupted:)``, on the clock or in its lockstep, to ask
    /// its `isInterrupted` again: a capture thread's stop or fault calls it.
    package func wakeWaiters() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
        lockstep.wakeWaiters()
    }

    /// Ends `participant`'s part: the clock no longer waits for it. Calling it again does nothing.
    package func leave(_ participant: Participant) {
        condition.lock()
        let member = members.removeValue(forKey: participant.id)
        condition.broadcast()
        condition.unlock()
        if case .running(_, _, let token) = member { lockstep.leave(token) }
    }

    package static func == (lhs: VirtualManualClock, rhs: VirtualManualClock) -> Bool { lhs === rhs }
    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
