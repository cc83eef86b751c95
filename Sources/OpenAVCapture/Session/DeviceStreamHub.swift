import CaptureDrivers
import Foundation
import Synchronization

/// Shares one device's stream among everyone who wants it (sessions, test taps), as macOS lets several sessions
/// use one camera: the device streams while anyone subscribes, in the configuration of its latest subscriber (a
/// device has one active format), and every event goes to every subscriber.
///
/// Threading: thread safe. Events are delivered on the device's capture thread while the hub's delivery lock is
/// held, so when `unsubscribe` returns its sink gets nothing more; sinks must not call back into the hub.
package final class DeviceStreamHub: Sendable {
    private struct State {
        var subscribers: [(token: Int, sink: StreamSink)] = []
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
            state.subscribers.append((token, sink))
            return (token, !state.isStreaming || state.configuration != configuration)
        }
        guard needsRestart else { return token }
        do {
            try restart(with: configuration)
        } catch {
            state.withLock { $0.subscribers.removeAll { $0.token == token } }
            throw error
        }
        return token
    }

    /// Stops receiving events; stops the device when nobody is left. When this returns, the sink gets no more
    /// events.
    package func unsubscribe(_ token: Int) {
        control.lock()
        defer { control.unlock() }
        let isLast = state.withLock { state in
            state.subscribers.removeAll { $0.token == token }
            return state.subscribers.isEmpty
        }
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

    /// Calls every sink under the state lock: `unsubscribe` takes the same lock, so once it has removed a sink
    /// no delivery to it is in progress or can start. Sinks only hand buffers on; they never call the hub.
    private func deliver(_ event: StreamEvent) {
        state.withLock { state in
            if case .fault = event { state.isStreaming = false }
            for subscriber in state.subscribers { subscriber.sink(event) }
        }
    }
}
