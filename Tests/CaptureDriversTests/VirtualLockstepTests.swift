// The virtual clock free-running devices share: none runs more than the window ahead of the slowest, the slowest
// never waits, and a stop ends a wait.

import CaptureDrivers
import Foundation
import Synchronization
import Testing

@Suite("VirtualLockstep, the clock free-running virtual devices share")
struct VirtualLockstepTests {
    @Test("A fast participant stays within the window of a slow one, and runs free once the slow one leaves")
    func theFastFollowsTheSlow() {
        let lockstep = VirtualLockstep()
        let millisecond: Int64 = 1_000_000
        // What each participant has said it reached, and the furthest the fast one got ahead of the slow one.
        struct Progress {
            var slow: Int64 = 0
            var largestLead: Int64 = .min
            /// The furthest position the fast one's advance has returned at.
            var fastReached: Int64 = .min
            var fastDone = false
        }
        let progress = Mutex(Progress())
        let slow = lockstep.join(at: 0)
        let fast = lockstep.join(at: 0)
        let fastThread = Thread {
            // 1 ms items up to 2 s of device time; the slow one takes 10 ms items, each once the fast one is held.
            for position in stride(from: Int64(0), through: 2_000 * millisecond, by: Int(millisecond)) {
                #expect(lockstep.advance(fast, to: position, isInterrupted: { false }))
                progress.withLock {
                    $0.largestLead = max($0.largestLead, position - $0.slow)
                    $0.fastReached = position
                }
            }
            lockstep.leave(fast)
            progress.withLock { $0.fastDone = true }
        }
        fastThread.start()
        for position in stride(from: Int64(0), through: 1_000 * millisecond, by: Int(10 * millisecond)) {
            progress.withLock { $0.slow = position }
            #expect(lockstep.advance(slow, to: position, isInterrupted: { false }))
            // The slow participant's next item waits until the fast one has raced as far ahead as the lockstep lets
            // it (its advance to `position + window` returned; the next one waits): no host time is assumed.
            let limit = position + VirtualLockstep.window
            #expect(
                eventually { progress.withLock { $0.fastReached } >= limit }, "the fast one stopped short of \(limit)")
        }
        // The slow one has reached 1 s; the fast one waits at 1.05 s until it leaves.
        #expect(!progress.withLock { $0.fastDone })
        progress.withLock { $0.slow = .max / 2 }
        lockstep.leave(slow)
        _ = eventually(timeout: 30) { progress.withLock({ $0.fastDone }) }
        let (lead, done) = progress.withLock { ($0.largestLead, $0.fastDone) }
        #expect(done, "the fast participant never finished once alone")
        #expect(lead <= VirtualLockstep.window, "the fast participant got \(lead) ns ahead")
        #expect(lead == VirtualLockstep.window, "the fast participant never used the whole window: \(lead)")
    }

    @Test("The slowest never waits; a waiting participant stops waiting when it is interrupted and woken")
    func aWaitEndsWhenInterrupted() {
        let lockstep = VirtualLockstep()
        let behind = lockstep.join(at: 0)
        let ahead = lockstep.join(at: 0)
        #expect(lockstep.advance(behind, to: 0, isInterrupted: { true }), "the slowest waited")
        // (times asked, interrupted, the waiter's answer once it has one)
        let state = Mutex((asked: 0, interrupted: false, advanced: Bool?.none))
        // One second ahead of a participant that does not move: only the interruption ends the wait.
        let waiter = Thread {
            let advanced = lockstep.advance(ahead, to: 1_000_000_000) {
                state.withLock { state in
                    state.asked += 1
                    return state.interrupted
                }
            }
            state.withLock { $0.advanced = advanced }
        }
        waiter.start()
        // Asked once, under the lockstep's lock: the wake below comes once the waiter waits.
        #expect(eventually { state.withLock { $0.asked } >= 1 })
        #expect(state.withLock { $0.advanced } == nil, "the waiter did not wait")
        state.withLock { $0.interrupted = true }
        lockstep.wakeWaiters()
        #expect(eventually { state.withLock { $0.advanced } != nil }, "a wake did not end the wait")
        #expect(state.withLock { $0.advanced } == false)
        lockstep.leave(behind)
        #expect(lockstep.advance(ahead, to: 1_000_000_000, isInterrupted: { true }), "alone, it still waited")
    }
}
