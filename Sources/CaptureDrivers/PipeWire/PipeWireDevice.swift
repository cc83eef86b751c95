import Foundation
import OpenCoreMedia
import Synchronization

/// A camera (`Video/Source`) or microphone (`Audio/Source`) node of the PipeWire graph as a `CaptureBackend`: a
/// webcam through PipeWire's V4L2 plugin, a Raspberry Pi camera through its libcamera plugin, a microphone the
/// desktop's sound server owns, or any program's source node.
///
/// The device object stands for the node's `object.path` (or name) and outlives the node: when the node goes,
/// the device turns disconnected, and when a node with the same identity comes back the same object is connected
/// again, its formats read afresh. Formats are read from the node's output port the first time they are asked for.
///
/// Threading: thread safe (a mutex guards the node, formats and stream); `start` and `stop` are serialized by the
/// caller. The sink runs on PipeWire's loop thread.
package final class PipeWireDevice: CaptureBackend {
    package let identity: DeviceIdentity
    private let connectionSource: @Sendable () -> PipeWireConnection?
    private let cameraAccess: CameraAccess

    private struct State {
        var node: PipeWireNode
        var formats: [DeviceFormat]?
        var isConnected = true
        var stream: PipeWireCaptureStream?
    }

    private let state: Mutex<State>

    /// A device for `node`, reached through the connection `connection` gives (the driver's current one).
    package init(
        node: PipeWireNode, connection: @escaping @Sendable () -> PipeWireConnection?,
        cameraAccess: CameraAccess = .shared
    ) {
        self.cameraAccess = cameraAccess
        let media = node.capturedMedia ?? .video
        identity = DeviceIdentity(
            uniqueID: node.uniqueID, modelID: node.modelID, localizedName: node.localizedName,
            manufacturer: node.manufacturer, kind: media == .video ? .external : .microphone, position: .unspecified,
            media: media, origin: .real)
        connectionSource = connection
        state = Mutex(State(node: node))
    }

    /// The node the device stands for now.
    package var node: PipeWireNode { state.withLock { $0.node } }

    // MARK: CaptureBackend

    /// What the node offers, read once per appearance of the node; empty while it has no output port, or when the
    /// daemon does not answer.
    package var formats: [DeviceFormat] {
        let (node, cached) = state.withLock { ($0.node, $0.formats) }
        if let cached { return cached }
        guard let connection = connectionSource(), let params = try? connection.formats(ofNode: node.id) else {
            return []
        }
        let formats =
            node.capturedMedia == .audio
            ? PipeWireFormats.audioFormats(from: params, node: node) : PipeWireFormats.videoFormats(from: params)
        guard !formats.isEmpty else { return [] }
        state.withLock { state in
            if state.node.id == node.id { state.formats = formats }
        }
        return formats
    }

    package var controls: (any CameraControlling)? { nil }
    package var clock: CMClock { .hostTimeClock }
    package var isConnected: Bool { state.withLock { $0.isConnected } }
    package var isInUseByAnotherApplication: Bool { false }
    /// PipeWire decides who may see a node: a node this process can list, it may open; unless the camera portal's
    /// permission store denies this app the camera.
    package var isAccessible: Bool { identity.media == .audio || cameraAccess.permission != .denied }
    package var accessAdvice: String? { isAccessible ? nil : CameraAccess.deniedAdvice }

    package func validate(_ configuration: StreamConfiguration) -> ConfigurationValidity {
        if identity.media == .video { return validateCameraConfiguration(configuration) }
        return formats.contains(configuration.format)
            ? .valid : .invalid("\(identity.localizedName) has no format \(configuration.format)")
    }

    /// Connects a stream to the node and waits until the node agreed on the format.
    package func start(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault) {
        let configuration = configurationToStart(configuration, caller: "PipeWireDevice")
        guard isAccessible else { throw .explained(.io(.permissionDenied), advice: CameraAccess.deniedAdvice) }
        let node = try state.withLock { state throws(DeviceFault) -> PipeWireNode in
            guard state.isConnected else { throw DeviceFault.disconnected }
            precondition(state.stream == nil, "\(identity.localizedName): start() while streaming; call stop() first")
            return state.node
        }
        guard let registryConnection = connectionSource(), registryConnection.isAlive else { throw .disconnected }
        // A connection of the stream's own: its loop thread is the device's capture thread, which the session's
        // conversion stage runs on, so a camera's conversions never hold up a microphone's periods.
        // A camera the portal grants is reached through the portal's remote, as a sandboxed app must.
        let portalRemote = identity.media == .video ? cameraAccess.pipeWireRemote() : nil
        let connection: PipeWireConnection
        do {
            connection = try PipeWireConnection(fd: portalRemote, onEvent: { _ in })
        } catch {
            throw .explained(.io(.ioError), advice: "\(identity.localizedName): \(error)")
        }
        let stream = try PipeWireCaptureStream(
            connection: connection, node: node, format: configuration.format,
            frameDuration: configuration.frameDuration, sink: sink)
        try stream.start()
        let stillThere = state.withLock { state in
            if state.isConnected { state.stream = stream }
            return state.isConnected
        }
        if !stillThere {
            stream.stop()
            throw .disconnected
        }
    }

    package func stop() {
        let stream = state.withLock { state in
            defer { state.stream = nil }
            return state.stream
        }
        stream?.stop()
    }

    // MARK: The driver's registry events

    /// The node went away (unplugged, its program ended, the daemon stopped): a running stream ends with
    /// `.disconnected`, as an unplugged V4L2 camera's does. True when the device was connected.
    @discardableResult
    func nodeRemoved() -> Bool {
        let (changed, stream) = state.withLock { state in
            defer {
                state.isConnected = false
                state.stream = nil
                state.formats = nil
            }
            return (state.isConnected, state.stream)
        }
        // The stream tells its sink and stops itself, on PipeWire's thread.
        stream?.fail(.disconnected)
        return changed
    }

    /// A node with this device's identity appeared: the device stands for it now. True when it was disconnected.
    @discardableResult
    func nodeAppeared(_ node: PipeWireNode) -> Bool {
        state.withLock { state in
            let wasDisconnected = !state.isConnected
            if wasDisconnected || state.node.id != node.id { state.formats = nil }
            state.node = node
            state.isConnected = true
            return wasDisconnected
        }
    }
}
