import Foundation
import OpenCoreMedia

/// The one clock free-running virtual devices share: a virtual session clock that runs as fast as the slowest of
/// them, so a free-running camera and microphone stay together however far ahead of the host clock they get.
///
/// Free-running devices deliver their items as fast as their sinks take them. Alone, each runs at its own speed: a
/// microphone would produce an hour of sound in seconds while the camera's encoder is still at its first minutes,
/// and a recording of both would have to hold (or drop) everything in between. In lockstep, before delivering an
/// item due at device time `t`, a device waits until every other free-running device has got to `t − window`
/// (delivered everything due before it). The device furthest behind never waits (every other is at or past its
/// own time), so the devices cannot deadlock: the slowest sets the pace and the others follow within ``window``.
/// Real-time devices do not take part; their clock is the host's.
///
/// Threading: thread safe. `join`, `advance` and `leave` are called by the capture threads of free-running devices,
/// each for its own participant.
package final class VirtualLockstep: @unchecked Sendable {
    /// The clock every free-running virtual device of the process's driver shares (a test's device set has its own:
    /// `VirtualDeviceDriver.makeSet()`).
    package static let shared = VirtualLockstep()

    /// How far a device may run ahead of the slowest: 50 ms of device time, more than a microphone's period and
    /// less than two frames at 30 fps.
    package static let window: Int64 = 50_000_000

    /// One device taking part; the token `join` gives and `advance` and `leave` take.
    package struct Participant: Hashable, Sendable {
        fileprivate let id: Int
    }

    // `@unchecked Sendable`: the condition's lock guards both fields.
    private let condition = NSCondition()
    private var positions: [Int: Int64] = [:]
    private var nextID = 0

    package init() {}

    /// Takes part from device time `position` (host nanoseconds on the device's time line: its first item's due
    /// time).
    package func join(at position: Int64) -> Participant {
        condition.lock()
        defer { condition.unlock() }
        nextID += 1
        positions[nextID] = position
        condition.broadcast()
        return Participant(id: nextID)
    }

    /// Records that `participant` has delivered everything due before `position`, then waits until every other
    /// participant is within ``window`` of it. Returns false, early, when `isInterrupted` says so: it is asked
    /// before each wait and after each wake-up, so whatever makes it true must then call ``wakeWaiters()``.
    package func advance(_ participant: Participant, to position: Int64, isInterrupted: () -> Bool) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        positions[participant.id] = position
        condition.broadcast()
        while let slowest = positions.values.min(), slowest < position - Self.window {
            if isInterrupted() { return false }
            condition.wait()
        }
        return true
    }

    /// Wakes every participant waiting in ``advance(_:to:isInterrupted:)`` to ask its `isInterrupted` again: a
    /// capture thread's stop or fault calls it, so a waiting device ends at once instead of polling for it.
    package func wakeWaiters() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Ends `participant`'s part: the others no longer wait for it.
    package func leave(_ participant: Participant) {
        condition.lock()
        defer { condition.unlock() }
        positions[participant.id] = nil
        condition.broadcast()
    }
}
