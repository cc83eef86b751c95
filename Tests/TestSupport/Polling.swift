import Foundation

// The one way the tests wait for something another thread or process does in real time (a device's capture
// thread, an encoder's queue, a daemon, a kernel driver, a server): poll a condition, bounded. Time must really pass
// there, so these sleep between checks; everything the tests can step instead, they step.

/// Polls `condition` every `interval` seconds until it holds or `timeout` seconds pass; whether it held (checked
/// once more at the deadline). The timeout only bounds a failure: a condition that holds returns at once.
public func waitUntil(timeout: TimeInterval = 20, every interval: TimeInterval = 0.01, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: interval)
    }
    return condition()
}

/// The same for async tests: suspends between checks instead of blocking a thread of the cooperative pool.
public func waitUntil(
    timeout: TimeInterval = 20, every interval: TimeInterval = 0.01, _ condition: () -> Bool
) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .seconds(interval))
    }
    return condition()
}

/// The same, throwing a failure that names `what` when the time runs out.
public func waitUntil(_ what: String, timeout: TimeInterval = 10, _ condition: () -> Bool) throws {
    guard waitUntil(timeout: timeout, condition) else { throw TimedOut(description: "timed out waiting until \(what)") }
}

/// A wait that ran out of time.
public struct TimedOut: Error, CustomStringConvertible {
    public let description: String
}
