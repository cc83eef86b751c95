// QueueBound: a value only one dispatch queue may touch, checked on every access.

import Dispatch

/// A value that only one dispatch queue may touch: every access checks that it runs there.
///
/// Threading: `@unchecked Sendable`; the queue serializes every access (checked with `dispatchPrecondition`).
final class QueueBound<Value>: @unchecked Sendable {
    private var stored: Value
    let queue: DispatchQueue

    init(_ value: Value, on queue: DispatchQueue) {
        self.stored = value
        self.queue = queue
    }

    /// The value; only on ``queue``.
    var value: Value {
        get {
            dispatchPrecondition(condition: .onQueue(queue))
            return stored
        }
        set {
            dispatchPrecondition(condition: .onQueue(queue))
            stored = newValue
        }
    }

    /// Runs `body` with the value; only on ``queue``.
    func with<Result>(_ body: (inout Value) -> Result) -> Result {
        dispatchPrecondition(condition: .onQueue(queue))
        return body(&stored)
    }
}
