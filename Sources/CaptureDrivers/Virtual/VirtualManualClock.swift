import Foundation
import OpenCoreMedia

/// A clock a test moves by hand: virtual devices paced by it deliver an item only once the clock has reached the
/// item's time, and ``advance(by:timeout:)`` returns when every one of them has delivered everything due by then.
///
/// So a test steps time instead of waiting for it: `advance(by: 1 s)` makes a 30 fps camera deliver exactly the
/// frames of the next second, and when it returns the sinks have had them all, however loaded the machine is.
///
/// Time is host time on the devices' time lines (their items are stamped as a live device's would be). The clock
/// starts where the first device to join starts (its first item is due at once) and moves only when advanced; a
/// device that starts later begins at its own start time, which the clock reaches at a later advance. Devices on
/// one clock also keep together as free-running ones do (`VirtualLockstep`): none runs more than 50 ms ahead of
/// the slowest within one advance.
///
/// Threading: thread safe. `advance` is for the test's thread; `reserve` for the thread starting a device;
/// `begin`, `waitForTurn` and `leave` for the capture threads of the devices it paces, each for its own participant. Identity is the clock: two values are equal only
/// when they are the same clock.
package final class VirtualManualClock: @unchecked Sendable, Hashable {
    /// One device taking part; the token `reserve` gives and the other calls take.
    package struct Participant: Hashable, Sendable {
        fileprivate let id: Int
    }

    // `@unchecked Sendable`: the condition's lock guards every field below it.
    private let condition = NSCondition()
    /// The time the clock has reached (host nanoseconds); nil until the first device joins.
    private var now: Int64?
    /// Every advance so far, in nanoseconds.
    private var advanced: Int64 = 0
    /// Each participant's next item's time (everything before it is delivered), nil while it is starting.
    private var positions: [Int: Int64?] = [:]
    /// Each begun participant's place in the lockstep.
    private var lockstepTokens: [Int: VirtualLockstep.Participant] = [:]
    private var nextID = 0
    /// The lockstep the clock's own devices share (not the process-wide one of free-running devices).
    private let lockstep = VirtualLockstep()

    package init() {}

    /// How far the clock has been advanced, in nanoseconds.
    package var elapsedNanoseconds: Int64 {
        condition.lock()
        defer { condition.unlock() }
        return advanced
    }

    /// Moves the clock on by `nanoseconds` and waits until every device on it has delivered every item due by the
    /// new time (its sink returned) or has stopped. A device that is starting (reserved, not yet begun) is waited
    /// for too. Returns false when that takes longer than `timeout` seconds of host time (a sink that never
    /// returns, a device that cannot get buffers).
    @discardableResult
    package func advance(byNanoseconds nanoseconds: Int64, timeout: Double = 60) -> Bool {
        precondition(nanoseconds >= 0, "a clock cannot go back: advance(by:) takes a duration of 0 or more")
        condition.lock()
        defer { condition.unlock() }
        advanced += nanoseconds
        // Before any device began, the advance moves the first device's start on (see `begin`).
        if let current = now { now = current + nanoseconds }
        condition.broadcast()
        let deadline = Date(timeIntervalSinceNow: timeout)
        while hasItemsDue {
            guard condition.wait(until: deadline) else { return !hasItemsDue }
        }
        return true
    }

    /// Whether a device is starting, or has an item due by the clock's time still to deliver. Under the lock.
    private var hasItemsDue: Bool {
        positions.values.contains { position in
            guard let position, let now else { return true }
            return position <= now
        }
    }

    /// Takes part: called where the device starts, before its capture thread runs, so an advance made as soon as
    /// the start returns waits for the device's first items. `begin` says where its items start.
    package func reserve() -> Participant {
        condition.lock()
        defer { condition.unlock() }
        nextID += 1
        positions[nextID] = .some(nil)
        return Participant(id: nextID)
    }

    /// The device's first item is due at host time `position`. The first device to begin starts the clock there,
    /// moved on by what was advanced before.
    package func begin(_ participant: Participant, at position: Int64) {
        let token = lockstep.join(at: position)
        condition.lock()
        defer { condition.unlock() }
        guard positions[participant.id] != nil else { return lockstep.leave(token) }
        if now == nil { now = position + advanced }
        positions[participant.id] = position
        lockstepTokens[participant.id] = token
        condition.broadcast()
    }

    /// Records that `participant` has delivered everything before `position`, then waits until the clock's other
    /// devices are within the lockstep window of it and the clock has reached `position`. Returns false, early,
    /// when `isInterrupted` says so (checked every 5 ms while waiting).
    ///
    /// The position is recorded first, so an advance does not wait for a device whose next item lies past it while
    /// that device waits in the lockstep. The lockstep comes before the clock: a device waiting for the clock has
    /// told the lockstep its next item's time, which is past the clock's, so no device due by then waits for it.
    package func waitForTurn(_ participant: Participant, at position: Int64, isInterrupted: () -> Bool) -> Bool {
        condition.lock()
        guard positions[participant.id] != nil else {
            // Left already (the device is stopping): nothing more is delivered.
            condition.unlock()
            return false
        }
        positions[participant.id] = position
        let token = lockstepTokens[participant.id]
        condition.broadcast()
        condition.unlock()
        if let token, !lockstep.advance(token, to: position, isInterrupted: isInterrupted) { return false }
        condition.lock()
        defer { condition.unlock() }
        while let current = now, position > current {
            if isInterrupted() { return false }
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.005))
        }
        return true
    }

    /// Ends `participant`'s part: the clock no longer waits for it. Calling it again does nothing.
    package func leave(_ participant: Participant) {
        condition.lock()
        positions[participant.id] = nil
        let token = lockstepTokens.removeValue(forKey: participant.id)
        condition.broadcast()
        condition.unlock()
        if let token { lockstep.leave(token) }
    }

    package static func == (lhs: VirtualManualClock, rhs: VirtualManualClock) -> Bool { lhs === rhs }
    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
