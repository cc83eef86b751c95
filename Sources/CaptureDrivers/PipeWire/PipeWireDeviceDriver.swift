import Dispatch
import Foundation
import Synchronization

/// The cameras and microphones of a PipeWire daemon: its `Video/Source` and `Audio/Source` nodes.
///
/// Connects at the first discovery when a daemon's socket exists (PIPEWIRE_REMOTE, PIPEWIRE_RUNTIME_DIR or
/// XDG_RUNTIME_DIR say where), and again at a later discovery after the daemon went away. Where no daemon runs
/// (servers, containers, the kernel-test VM) it lists nothing and costs nothing. Nodes that come and go while
/// connected are reported to the registry (hot-plug), from a queue of the driver's own: the registry's listeners
/// may then read formats, which asks the daemon, which PipeWire's own thread must not wait for.
///
/// Threading: thread safe; a mutex guards the connection and the table of devices.
package final class PipeWireDeviceDriver: CaptureDriver {
    /// The driver `DeviceRegistry.shared` lists.
    package static let shared = PipeWireDeviceDriver()

    /// How long a node that appeared may take to show an output port with formats before it is announced anyway
    /// (discovery will list it once it has formats).
    static let formatWaitNanoseconds: Int64 = 2_000_000_000

    private struct State {
        var connection: PipeWireConnection?
        var devices: [String: PipeWireDevice] = [:]
    }

    private let state = Mutex(State())
    private let events = DispatchQueue(label: "OpenAVCapture PipeWire devices")
    private let registry: DeviceRegistry?
    private let environment: @Sendable () -> [String: String]

    /// A driver reporting hot-plug to `registry` (nil: `DeviceRegistry.shared`), reading where the daemon is from
    /// `environment` each time it connects.
    package init(
        registry: DeviceRegistry? = nil,
        environment: @escaping @Sendable () -> [String: String] = { ProcessInfo.processInfo.environment }
    ) {
        self.registry = registry
        self.environment = environment
    }

    package var origin: DeviceOrigin { .real }
    package var family: DriverFamily { .pipeWire }

    /// The camera and microphone nodes present now that offer formats.
    package func discoverDevices() -> [any CaptureBackend] {
        guard let connection = connect() else { return [] }
        try? connection.roundtrip()
        let present = connection.nodes.filter { $0.capturedMedia != nil }
        let devices = state.withLock { state in present.map { device(for: $0, in: &state) } }
        return devices.filter { !$0.formats.isEmpty }
    }

    /// The raw devices the daemon's nodes read (`v4l2:/dev/video0`, `alsa:card:1`): the registry hides them from
    /// the raw backends, so one camera is one entry.
    package var claimedRawDevices: Set<String> {
        guard let connection = state.withLock({ $0.connection }) else { return [] }
        return Set(connection.nodes.compactMap(\.rawDeviceKey))
    }

    /// Whether a daemon's socket is there to connect to.
    package static func daemonSocketExists(environment: [String: String]) -> Bool {
        let remote = environment["PIPEWIRE_REMOTE"].flatMap { $0.isEmpty ? nil : $0 } ?? "pipewire-0"
        if remote.hasPrefix("/") { return FileManager.default.fileExists(atPath: remote) }
        let directories = ["PIPEWIRE_RUNTIME_DIR", "XDG_RUNTIME_DIR"].compactMap { environment[$0] }
        return directories.contains { FileManager.default.fileExists(atPath: "\($0)/\(remote)") }
    }

    // MARK: Connecting

    /// The live connection, made now if there is none and a daemon's socket exists.
    private func connect() -> PipeWireConnection? {
        state.withLock { state in
            if let connection = state.connection, connection.isAlive { return connection }
            state.connection = nil
            // A sandbox has no daemon socket: there the camera portal's remote, once it grants the camera, is the way.
            let remote: Int32?
            if Self.daemonSocketExists(environment: environment()) {
                remote = nil
            } else if let portalRemote = CameraAccess.shared.pipeWireRemote() {
                remote = portalRemote
            } else {
                return nil
            }
            // Events queue behind this lock, so the nodes listed at connection are not announced as arrivals.
            guard
                let connection = try? PipeWireConnection(
                    fd: remote, onEvent: { [weak self] event in self?.enqueue(event) })
            else { return nil }
            state.connection = connection
            for node in connection.nodes where node.capturedMedia != nil { _ = device(for: node, in: &state) }
            return connection
        }
    }

    /// The device for `node`: the one with its identity, standing for this node now, or a new one.
    private func device(for node: PipeWireNode, in state: inout State) -> PipeWireDevice {
        if let existing = state.devices[node.uniqueID] {
            existing.nodeAppeared(node)
            return existing
        }
        // A new camera: QUERYCAP for its name where WirePlumber has none (an open and an ioctl, microseconds).
        let device = PipeWireDevice(
            node: Self.namedByItsCard(node), connection: { [weak self] in self?.state.withLock { $0.connection } })
        state.devices[node.uniqueID] = device
        return device
    }

    // MARK: Registry events (PipeWire's loop thread hands them to `events`)

    private func enqueue(_ event: PipeWireConnection.Event) {
        events.async { [self] in handle(event) }
    }

    private func handle(_ event: PipeWireConnection.Event) {
        switch event {
        case .nodeAdded(let node):
            guard node.capturedMedia != nil else { return }
            let (device, isNews) = state.withLock { state -> (PipeWireDevice, Bool) in
                let known = state.devices[node.uniqueID]
                let wasConnected = known?.isConnected ?? false
                return (self.device(for: node, in: &state), !wasConnected)
            }
            guard isNews else { return }
            waitForFormats(device)
            report(.connected(device))
        case .nodeRemoved(let node):
            let device = state.withLock { $0.devices[node.uniqueID] }
            guard let device, device.node.id == node.id, device.nodeRemoved() else { return }
            report(.disconnected(device))
        case .connectionLost:
            let devices = state.withLock { state in
                state.connection = nil
                return Array(state.devices.values)
            }
            for device in devices where device.nodeRemoved() { report(.disconnected(device)) }
        }
    }

    /// `node`, with the card name its V4L2 driver reports (QUERYCAP, as the raw backend names cameras) where
    /// WirePlumber had no name from udev and says "Unknown device": see ``PipeWireNode/localizedName``. Where the
    /// device node cannot be opened (a sandbox), the node keeps WirePlumber's name.
    private static func namedByItsCard(_ node: PipeWireNode) -> PipeWireNode {
        guard node.hasPlaceholderName, node.properties["api.v4l2.cap.card"] == nil, let path = node.v4l2Path,
            let card = try? V4L2Node(path: path, system: .live).capability().card
        else { return node }
        var named = node
        named.properties["api.v4l2.cap.card"] = card
        return named
    }

    /// A node's ports follow the node itself in the registry: wait (bounded) until its formats can be read.
    private func waitForFormats(_ device: PipeWireDevice) {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(Self.formatWaitNanoseconds)
        while device.formats.isEmpty, device.isConnected, DispatchTime.now().uptimeNanoseconds < deadline {
            // Real time must pass: the daemon adds the node's ports in its own time.
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    private func report(_ event: ConnectionEvent) {
        (registry ?? DeviceRegistry.shared).report(event)
    }
}
