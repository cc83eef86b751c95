import Dispatch
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// The hand-off from a device's capture thread to an output's delegate queue, without allocating per buffer.
///
/// A fixed ring of slots holds buffers waiting for the delegate; posting one fills a slot and pokes a dispatch
/// source whose handler (set once, on the delegate's queue) drains the ring. Posting never waits and never
/// allocates: `DispatchSource.add(data:)` coalesces pokes, and the slots are allocated up front. At most `limit`
/// items are in flight (waiting or being handled); beyond that `post` refuses and the caller reports a drop, so
/// a slow delegate never slows the device or the other outputs. The hop costs one wake-up of the queue, shared by
/// every item waiting when it runs.
///
/// Threading: thread safe. `post` from any thread; the handler runs on the queue given at creation.
/// `@unchecked Sendable`: dispatch sources are thread safe (Dispatch just does not say so to Swift); the ring is a
/// mutex.
package final class SampleBufferMailbox<Item: Sendable>: @unchecked Sendable {
    private struct Ring {
        var slots: [Item?]
        var head = 0
        var count = 0
        /// Items taken by the handler and not yet done: they count as in flight.
        var handling = 0
        var limit: Int
    }

    /// The ring, in a class of its own so the source's handler can share it.
    private final class Slots: Sendable {
        let ring: Mutex<Ring>
        init(_ ring: Ring) { self.ring = Mutex(ring) }
    }

    private let slots: Slots
    private let source: any DispatchSourceUserDataAdd

    /// A mailbox whose `handler` runs on `queue` for each item, in order.
    ///
    /// - Parameters:
    ///   - capacity: slots allocated now; `limit` may not exceed it.
    ///   - limit: items in flight at most.
    package init(queue: DispatchQueue, capacity: Int, limit: Int, handler: @escaping @Sendable (Item) -> Void) {
        let slots = Slots(Ring(slots: Array(repeating: nil, count: capacity), limit: min(limit, capacity)))
        self.slots = slots
        source = DispatchSource.makeUserDataAddSource(queue: queue)
        source.setEventHandler {
            while true {
                let next: Item? = slots.ring.withLock { ring in
                    guard ring.count > 0 else { return nil }
                    let item = ring.slots[ring.head]
                    ring.slots[ring.head] = nil
                    ring.head = (ring.head + 1) % ring.slots.count
                    ring.count -= 1
                    ring.handling += 1
                    return item
                }
                guard let next else { return }
                handler(next)
                slots.ring.withLock { $0.handling -= 1 }
            }
        }
        source.activate()
    }

    deinit { source.cancel() }

    /// How many items may be in flight (at most the capacity).
    package var limit: Int {
        get { slots.ring.withLock { $0.limit } }
        set { slots.ring.withLock { $0.limit = max(1, min(newValue, $0.slots.count)) } }
    }

    /// Whether nothing is waiting or being handled.
    package var isIdle: Bool { slots.ring.withLock { $0.count == 0 && $0.handling == 0 } }

    /// Queues `item` for the handler unless `limit` items are in flight; returns whether it was queued.
    package func post(_ item: Item) -> Bool {
        let accepted = slots.ring.withLock { ring in
            guard ring.count + ring.handling < ring.limit else { return false }
            ring.slots[(ring.head + ring.count) % ring.slots.count] = item
            ring.count += 1
            return true
        }
        if accepted { source.add(data: 1) }
        return accepted
    }
}
