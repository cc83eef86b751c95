#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A sleep until an absolute host-clock deadline that another thread can cut short: a condition variable on
/// `CLOCK_MONOTONIC` (the host clock, `CMClock.hostNanosecondsNow()`), so a paced capture thread wakes once per item,
/// at its time, and still at once when it is stopped.
///
/// Sleeping in short slices instead (as a loop of `clock_nanosleep` checking a flag would) costs a wake-up and a
/// context switch per slice: with 5 ms slices, a file played as a camera and a microphone woke about 780 times a
/// second for 77 items.
///
/// Threading: thread safe. `sleep(untilHostNanoseconds:)` is for the one sleeping thread, `ring()` for any other.
/// Once rung, the alarm stays rung: every later sleep returns at once.
package final class HostClockAlarm: @unchecked Sendable {
    // `@unchecked Sendable`: `isRung` is read and written only with `mutex` held.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var isRung = false

    package init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Wakes the sleeper now, and every later sleep at once.
    package func ring() {
        pthread_mutex_lock(mutex)
        isRung = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Sleeps until `deadline` (nanoseconds of `CLOCK_MONOTONIC`) or until the alarm rings. Returns whether it rang.
    package func sleep(untilHostNanoseconds deadline: Int64) -> Bool {
        let clamped = max(0, deadline)
        var time = timespec(tv_sec: Int(clamped / 1_000_000_000), tv_nsec: Int(clamped % 1_000_000_000))
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !isRung {
            // 0 is a ring or a spurious wake-up, after which the loop looks again; anything else (ETIMEDOUT, or
            // an error, which would otherwise repeat at once) ends the sleep.
            guard pthread_cond_timedwait(condition, mutex, &time) == 0 else { return false }
        }
        return true
    }
}
