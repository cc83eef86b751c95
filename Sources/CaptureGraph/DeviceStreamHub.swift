import CaptureDrivers
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// Shares one device's stream among everyone who wants it (sessions, test taps), as macOS lets several sessions
/// use one camera: the device streams while anyone subscribes, in the configuration of its latest subscriber (a
/// device has one active format), and every event goes to every subscriber.
///
/// Threading: thread safe. Events are delivered on the device's capture thread, each sink under a lock of its own
/// subscription, not the hub's: a sink's work (decoding, converting, routing to outputs) never holds up another
/// subscriber joining or leaving, nor a look at the hub's state. `unsubscribe` takes that subscription's lock, so
/// when it returns its sink gets nothing more; sinks must not call back into the hub.
package final class DeviceStreamHub: Sendable {
    /// One subscriber's sink, called under its own lock; `isActive` turns false, under that lock, as it leaves.
    private final class Subscription: @unchecked Sendable {
        let token: Int
        let sink: StreamSink
        private let lock = NSLock()
        private var isActive = true

        init(token: Int, sink: @escaping StreamSink) {
            self.token = token
            self.sink = sink
        }

        func deliver(_ event: StreamEvent) {
            lock.lock()
            defer { lock.unlock() }
            if isActive { sink(event) }
        }

        /// Waits for a delivery in progress to end; none starts after.
        func end() {
            lock.lock()
            isActive = false
            lock.unlock()
        }
    }

    private struct State {
        var subscribers: [Subscription] = []
        var configuration: StreamConfiguration?
        var isStreaming = false
        /// The backend was started and not stopped since. A fault ends its stream (`isStreaming` false) but not
        /// the backend's hold on it: a restart after a fault stops it first, as a backend starts only when stopped.
        var backendStarted = false
        var nextToken = 0
    }

    private static let hubs = Mutex<[ObjectIdentifier: DeviceStreamHub]>([:])

    /// The hub of a device: one per backend for the process's life.
    package static func hub(for backend: any CaptureBackend) -> DeviceStreamHub {
        hubs.withLock { hubs in
            if let existing = hubs[ObjectIdentifier(backend)] { return existing }
            let hub = DeviceStreamHub(backend: backend)
            hubs[ObjectIdentifier(backend)] = hub
            return hub
        }
    }

    package let backend: any CaptureBackend
    private let state = Mutex(State())
    /// Serializes starting, stopping and reconfiguring the backend.
    private let control = NSLock()

    private init(backend: any CaptureBackend) { self.backend = backend }

    /// Starts receiving the device's events, starting or reconfiguring the device as needed.
    /// Throws the device's fault (busy, disconnected) when it cannot stream; the subscription then does not exist.
    package func subscribe(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault) -> Int
    {
        control.lock()
        defer { control.unlock() }
        let (token, needsRestart) = state.withLock { state in
            let token = state.nextToken
            state.nextToken += 1
            state.subscribers.append(Subscription(token: token, sink: sink))
            return (token, !state.isStreaming || state.configuration != configuration)
        }
        guard needsRestart else { return token }
        do {
            try restart(with: configuration)
        } catch {
            let failed = state.withLock { state in
                defer { state.subscribers.removeAll { $0.token == token } }
                return state.subscribers.filter { $0.token == token }
            }
            for subscription in failed { subscription.end() }
            throw error
        }
        return token
    }

    /// Stops receiving events; stops the device when nobody is left. When this returns, the sink gets no more
    /// events.
    package func unsubscribe(_ token: Int) {
        control.lock()
        defer { control.unlock() }
        let (leaving, isLast) = state.withLock { state in
            let leaving = state.subscribers.filter { $0.token == token }
            state.subscribers.removeAll { $0.token == token }
            return (leaving, state.subscribers.isEmpty)
        }
        for subscription in leaving { subscription.end() }
        if isLast {
            backend.stop()
            state.withLock {
                $0.isStreaming = false
                $0.backendStarted = false
            }
        }
    }

    /// Starts the device again after a fault ended its stream (it came back), in the last configuration.
    package func resume() throws(DeviceFault) {
        control.lock()
        defer { control.unlock() }
        let (streaming, configuration, hasSubscribers) = state.withLock {
            ($0.isStreaming, $0.configuration, !$0.subscribers.isEmpty)
        }
        guard !streaming, hasSubscribers, let configuration else { return }
        try restart(with: configuration)
    }

    /// Whether the device streams now.
    package var isStreaming: Bool { state.withLock { $0.isStreaming } }

    private func restart(with configuration: StreamConfiguration) throws(DeviceFault) {
        if state.withLock({ $0.backendStarted }) { backend.stop() }
        state.withLock {
            $0.isStreaming = false
            $0.backendStarted = false
            $0.configuration = configuration
        }
        try backend.start(configuration) { [weak self] event in self?.deliver(event) }
        state.withLock {
            $0.isStreaming = true
            $0.backendStarted = true
        }
    }

    /// Calls every sink, each under its subscription's lock (see `Subscription`), outside the hub's: a frame's
    /// decoding and conversion in one session's sink never block the hub.
    private func deliver(_ event: StreamEvent) {
        let subscribers = state.withLock { state in
            if case .fault = event { state.isStreaming = false }
            return state.subscribers
        }
        for subscription in subscribers { subscription.deliver(event) }
    }
}
