import Dispatch
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// The bounded hand-off from a device's capture thread to an output's delegate queue.
///
/// At most `limit` deliveries are in flight (queued or running on the delegate queue); beyond that `submit`
/// refuses and the caller reports a drop. This is what keeps a slow delegate from slowing the device or the
/// other outputs: the capture thread never waits.
///
/// Threading: thread safe; `submit` is lock-free (one atomic compare-exchange loop).
package final class SampleBufferDelivery: Sendable {
    private let inFlight = Atomic<Int>(0)
    private let limitStorage: Atomic<Int>

    package init(limit: Int) { limitStorage = Atomic(limit) }

    /// How many deliveries may be in flight.
    package var limit: Int {
        get { limitStorage.load(ordering: .relaxed) }
        set { limitStorage.store(max(1, newValue), ordering: .relaxed) }
    }

    /// Deliveries queued or running now.
    package var pending: Int { inFlight.load(ordering: .relaxed) }

    /// Runs `work` on `queue` unless `limit` deliveries are already in flight; returns whether it was queued.
    package func submit(on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) -> Bool {
        var current = inFlight.load(ordering: .relaxed)
        while true {
            guard current < limit else { return false }
            let (exchanged, original) = inFlight.compareExchange(
                expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = original
        }
        queue.async {
            work()
            self.inFlight.subtract(1, ordering: .releasing)
        }
        return true
    }

    /// Runs `work` on `queue` whatever is in flight (drop notices, end-of-stream callbacks).
    package func submitAlways(on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }
}

/// A user's object carried to their queue. `@unchecked Sendable`: Apple's delegates are not `Sendable` either;
/// we only call them on the queue the user gave, as Apple does.
package struct UncheckedSendable<Value>: @unchecked Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}
