import CPipeWire
import Foundation
import Synchronization
import SystemPackage

/// Why talking to PipeWire failed.
package enum PipeWireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No daemon answers at the remote (none runs, or this process may not reach its socket).
    case noDaemon(Errno)
    /// The daemon went away (it stopped or crashed).
    case connectionLost
    /// The daemon did not answer in time.
    case timedOut
    /// Something else, with PipeWire's errno.
    case failed(Errno)

    init(code: Int32) {
        switch -code {
        case ETIMEDOUT: self = .timedOut
        case EPIPE: self = .connectionLost
        default: self = .failed(Errno(rawValue: -code))
        }
    }

    package var description: String {
        switch self {
        case .noDaemon(let errno): "no PipeWire daemon answers (\(errno))"
        case .connectionLost: "the PipeWire daemon went away"
        case .timedOut: "the PipeWire daemon did not answer in time"
        case .failed(let errno): "PipeWire failed: \(errno)"
        }
    }
}

/// A connection to a PipeWire daemon (`CPipeWire_Connection`: a `pw_thread_loop`, the core and the registry), and
/// the nodes the registry lists, kept up to date as they come and go.
///
/// Threading: thread safe. `onEvent` runs on PipeWire's loop thread with the loop's lock held: it must hand work
/// elsewhere and return (any call into the connection that waits for the daemon would wait for itself).
package final class PipeWireConnection: @unchecked Sendable {
    /// What the registry said.
    package enum Event: Sendable {
        case nodeAdded(PipeWireNode)
        case nodeRemoved(PipeWireNode)
        /// The daemon went away; every node is gone with it.
        case connectionLost
    }

    /// How long a call waits for the daemon before it gives up.
    package static let timeoutMilliseconds: Int32 = 5000

    /// The C connection; closed in `deinit`. `@unchecked Sendable`: the shim serializes every use on its loop lock.
    let handle: OpaquePointer
    private let table: NodeTable

    /// Connects through `fd` (a portal's PipeWire remote) when given, else to the daemon PIPEWIRE_REMOTE,
    /// PIPEWIRE_RUNTIME_DIR or XDG_RUNTIME_DIR point to. The nodes that exist are known when it returns.
    package init(fd: Int32? = nil, onEvent: @escaping @Sendable (Event) -> Void) throws(PipeWireError) {
        let table = NodeTable(onEvent: onEvent)
        var callbacks = CPipeWire_RegistryCallbacks()
        callbacks.context = Unmanaged.passUnretained(table).toOpaque()
        callbacks.node_added = { context, id, properties, count in
            guard let context, let properties else { return }
            var values: [String: String] = [:]
            for index in 0..<Int(count) {
                let property = properties[index]
                guard let key = property.key, let value = property.value else { continue }
                values[String(cString: key)] = String(cString: value)
            }
            Unmanaged<NodeTable>.fromOpaque(context).takeUnretainedValue().add(PipeWireNode(id: id, properties: values))
        }
        callbacks.node_removed = { context, id in
            guard let context else { return }
            Unmanaged<NodeTable>.fromOpaque(context).takeUnretainedValue().remove(id)
        }
        callbacks.connection_lost = { context, _, _ in
            guard let context else { return }
            Unmanaged<NodeTable>.fromOpaque(context).takeUnretainedValue().loseConnection()
        }
        var error: Int32 = 0
        guard let handle = CPipeWire_connection_open(fd ?? -1, nil, callbacks, Self.timeoutMilliseconds, &error) else {
            throw error == -ETIMEDOUT ? .timedOut : .noDaemon(Errno(rawValue: -error))
        }
        self.handle = handle
        self.table = table
    }

    deinit {
        CPipeWire_connection_close(handle)
    }

    /// The nodes the registry lists now.
    package var nodes: [PipeWireNode] { table.nodes }

    /// Whether the daemon still answers.
    package var isAlive: Bool { CPipeWire_connection_is_alive(handle) }

    /// Waits until the daemon has handled everything sent before (so the registry is current).
    package func roundtrip() throws(PipeWireError) {
        let result = CPipeWire_connection_roundtrip(handle, Self.timeoutMilliseconds)
        if result < 0 { throw PipeWireError(code: result) }
    }

    /// Runs `body` on PipeWire's loop thread, in order with the stream callbacks (at once when already there).
    package func onLoopThread(_ body: @escaping @Sendable () -> Void) {
        let task = Unmanaged.passRetained(LoopTask(body)).toOpaque()
        let queued = CPipeWire_connection_invoke(handle, { context in
            guard let context else { return }
            Unmanaged<LoopTask>.fromOpaque(context).takeRetainedValue().body()
        }, task)
        if queued < 0 {
            // The loop could not take it (out of memory): run it here rather than lose it.
            Unmanaged<LoopTask>.fromOpaque(task).takeRetainedValue().body()
        }
    }

    /// What the node's output port offers (its EnumFormat params), flattened by the shim. Empty when the node has no
    /// output port yet.
    package func formats(ofNode id: UInt32) throws(PipeWireError) -> [CPipeWire_Format] {
        var formats = [CPipeWire_Format](repeating: CPipeWire_Format(), count: 64)
        let count = formats.withUnsafeMutableBufferPointer {
            CPipeWire_enum_formats(handle, id, $0.baseAddress, Int32($0.count), Self.timeoutMilliseconds)
        }
        if count == -ENOENT { return [] }
        if count < 0 { throw PipeWireError(code: count) }
        return Array(formats.prefix(Int(count)))
    }
}

/// A closure on its way to the loop thread.
private final class LoopTask: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// The registry's nodes, written by the shim's callbacks on the loop thread and read from anywhere.
///
/// Threading: thread safe (a mutex); `onEvent` is called outside it.
private final class NodeTable: Sendable {
    private let state = Mutex<[UInt32: PipeWireNode]>([:])
    private let onEvent: @Sendable (PipeWireConnection.Event) -> Void

    init(onEvent: @escaping @Sendable (PipeWireConnection.Event) -> Void) {
        self.onEvent = onEvent
    }

    var nodes: [PipeWireNode] { state.withLock { $0.values.sorted { $0.id < $1.id } } }

    func add(_ node: PipeWireNode) {
        state.withLock { $0[node.id] = node }
        onEvent(.nodeAdded(node))
    }

    func remove(_ id: UInt32) {
        guard let node = state.withLock({ $0.removeValue(forKey: id) }) else { return }
        onEvent(.nodeRemoved(node))
    }

    func loseConnection() {
        state.withLock { $0.removeAll() }
        onEvent(.connectionLost)
    }
}
