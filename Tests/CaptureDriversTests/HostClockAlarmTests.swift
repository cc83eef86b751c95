// The sleep a paced capture thread takes between items: it ends at its deadline on the host clock, or at once when
// another thread rings (a stop, a fault).

import CaptureDrivers
import Foundation
import OpenCoreMedia
import Synchronization
import Testing

@Suite("HostClockAlarm, a capture thread's sleep")
struct HostClockAlarmTests {
    @Test("A deadline already past ends the sleep at once, not rung")
    func pastDeadline() {
        let alarm = HostClockAlarm()
        #expect(!alarm.sleep(untilHostNanoseconds: CMClock.hostNanosecondsNow() - 1))
        #expect(!alarm.sleep(untilHostNanoseconds: 0))
        #expect(!alarm.sleep(untilHostNanoseconds: -1_500_000_000), "a deadline before the clock's start")
    }

    @Test("A ring wakes a sleeper whose deadline is an hour away, and every later sleep returns at once")
    func ringWakesTheSleeper() {
        let alarm = HostClockAlarm()
        let hour: Int64 = 3_600_000_000_000
        let woke = WokeFlag()
        let asleep = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            asleep.signal()
            woke.value.store(
                alarm.sleep(untilHostNanoseconds: CMClock.hostNanosecondsNow() + hour), ordering: .relaxed)
            done.signal()
        }
        thread.start()
        asleep.wait()
        // Rung before or after the thread is inside its wait: either way it must not sleep the hour.
        alarm.ring()
        done.wait()
        let didWake = woke.value.load(ordering: .relaxed)
        #expect(didWake)
        #expect(alarm.sleep(untilHostNanoseconds: CMClock.hostNanosecondsNow() + hour))
    }
}

/// What the sleeping thread's sleep returned, shared with the test.
private final class WokeFlag: Sendable {
    let value = Atomic<Bool>(false)
}
