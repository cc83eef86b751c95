import Synchronization

/// A value behind a mutex, as a class: closures and other objects can hold it where a `Mutex` (not copyable) cannot
/// be captured, such as an encoder reading its output's settings when its first picture comes.
///
/// Threading: thread safe.
final class LockedState<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try mutex.withLock { try body(&$0) }
    }
}
