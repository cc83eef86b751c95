import CaptureDrivers
import CaptureGraph
import Foundation
import Synchronization

/// Coordinates the flow of media from inputs (cameras, microphones) to outputs (data outputs, files, previews).
///
/// As Apple's: add inputs and outputs (checking `canAdd…` first: adding what it refuses traps), bracket changes
/// with `beginConfiguration()`/`commitConfiguration()` (nestable; the outermost commit applies everything at
/// once, so a running session switches cameras without a gap), then `startRunning()`, which blocks until the
/// devices stream; `stopRunning()` blocks until they have stopped. Run both off the main thread, on a serial
/// queue of yours, as Apple advises.
///
/// States: idle → running ⇄ interrupted → idle (`stopRunning`). A device taken by another process, or
/// unplugged, interrupts a running session (`.AVCaptureSessionWasInterrupted`; unplugging also posts
/// `.AVCaptureSessionRuntimeError` with `AVError.deviceWasDisconnected`); when it is back the session streams
/// again by itself and posts `.AVCaptureSessionInterruptionEnded`. `isRunning` and `isInterrupted` are
/// observable with Apple's KVO call shape.
///
/// Threading: thread safe. Configuration and start/stop are serialized by the session's lock; media flows on
/// each device's capture thread, which hands buffers to outputs without waiting. Notifications are posted on
/// the thread that caused them (yours for start/stop, an internal queue for interruptions).
open class AVCaptureSession: NSObject, KeyValueObservable, @unchecked Sendable {
    public typealias Preset = AVCaptureSessionPreset

    /// The session's explicit states (DESIGN.md): each entry point checks the one it needs.
    package enum State: Sendable, Equatable {
        case idle
        case running
        case interrupted
        case stopping
    }

    /// The routes of the device with backend `key` (where its buffers go), made on first use.
    func routeTable(for key: ObjectIdentifier) -> RouteTable {
        routeTables.withLock { tables in
            if let table = tables[key] { return table }
            let table = RouteTable()
            tables[key] = table
            return table
        }
    }

    /// A device streaming for this session.
    struct ActiveStream {
        let input: AVCaptureInput
        /// The input's device (a camera, a microphone, a screen).
        let device: AVCaptureDevice
        var configuration: StreamConfiguration
        var isInterrupted: Bool
        /// The subscription to the device's hub; nil while the device could not be started.
        var token: Int?

        var hub: DeviceStreamHub { .hub(for: device.backend) }

        func end() {
            if let token { hub.unsubscribe(token) }
        }
    }

    public let keyValueObservers = KeyValueObserverRegistry()
    /// Serializes configuration and start/stop. Recursive: KVO handlers of the devices we configure may call back.
    let lock = NSRecursiveLock()
    /// Guarded by `lock`.
    var inputList: [AVCaptureInput] = []
    var outputList: [AVCaptureOutput] = []
    var connectionList: [AVCaptureConnection] = []
    var preset: Preset = .high
    var configurationDepth = 0
    /// The threads with a `beginConfiguration()` not yet committed, and how many each. Apple's rule against
    /// starting or stopping inside a configuration is about the caller's own: another thread's open configuration is
    /// not this caller's misuse (the depth itself is the session's, as Apple's is).
    var openConfigurations: [UInt: Int] = [:]
    var streams: [ObjectIdentifier: ActiveStream] = [:]
    var deviceObservations: [ObjectIdentifier: [NSKeyValueObservation]] = [:]
    var registryToken: Int?
    /// The devices' directory current when the session was made (a test's device set, or the process's): the
    /// registry whose connection events end interruptions, kept for the event queue, which has no task.
    let deviceDirectory = DeviceDirectory.current
    /// Read by capture threads on every buffer; replaced whole on every change.
    /// Each device's routes, in a slot its capture thread's sink holds, so a frame costs no table lookup.
    let routeTables = Mutex<[ObjectIdentifier: RouteTable]>([:])
    let stateStorage = Mutex<State>(.idle)
    /// Runs reactions to device events (faults, reconnection, format changes) off the capture threads.
    let eventQueue = DispatchQueue(label: "OpenAVCapture.AVCaptureSession.events")
    /// The session's controls (`addControl`) and their delegate.
    let controlStorage = SessionControls()

    public override init() { super.init() }

    deinit {
        if let registryToken { deviceDirectory.registry.removeListener(registryToken) }
        for stream in streams.values { stream.end() }
    }

    package var state: State { stateStorage.withLock { $0 } }

    // MARK: Inputs

    /// The inputs, in the order added.
    open var inputs: [AVCaptureInput] { locked { inputList } }

    /// Whether `input` can be added: not already in a session, its device not already used by another input of
    /// this session, not a second camera (as on iOS: several cameras at once take an `AVCaptureMultiCamSession`),
    /// and able to honour the session's preset.
    open func canAddInput(_ input: AVCaptureInput) -> Bool {
        locked {
            guard !inputList.contains(where: { $0 === input }), input.sessionReference.withLock({ $0.session }) == nil
            else { return false }
            guard let device = input.streamedDevice else { return true }
            if inputList.contains(where: { $0.streamedDevice === device }) { return false }
            if !takesSeveralCameras, device.isCamera, inputList.contains(where: { $0.streamedDevice?.isCamera == true }) {
                return false
            }
            guard input is AVCaptureDeviceInput else { return true }
            return device.hasMediaType(.audio) || preset == .inputPriority || device.supportsSessionPreset(preset)
        }
    }

    /// Adds an input and connects its ports to every output that takes their media and has no such connection.
    /// Traps when `canAddInput(_:)` says no, as Apple's raises.
    open func addInput(_ input: AVCaptureInput) {
        changeConfiguration {
            insert(input)
            for output in outputList { connectAutomatically(output) }
        }
    }

    /// Adds an input without connecting it; connect its ports with `addConnection(_:)`.
    open func addInputWithNoConnections(_ input: AVCaptureInput) {
        changeConfiguration { insert(input) }
    }

    private func insert(_ input: AVCaptureInput) {
        precondition(
            canAddInput(input),
            "AVCaptureSession: cannot add \(input); check canAddInput(_:) first (Apple raises"
                + " NSInvalidArgumentException)")
        inputList.append(input)
        input.sessionReference.withLock { $0 = WeakSession(self) }
        if let deviceInput = input as? AVCaptureDeviceInput {
            applyPreset(to: deviceInput.device)
            watch(deviceInput)
        }
    }

    /// Removes an input and its connections.
    open func removeInput(_ input: AVCaptureInput) {
        changeConfiguration {
            guard let index = inputList.firstIndex(where: { $0 === input }) else { return }
            inputList.remove(at: index)
            input.sessionReference.withLock { $0 = WeakSession() }
            connectionList.removeAll { connection in
                let uses = connection.inputPorts.contains { $0.input === input }
                if uses { detach(connection) }
                return uses
            }
            if let deviceInput = input as? AVCaptureDeviceInput { unwatch(deviceInput) }
        }
    }

    // MARK: Outputs

    /// The outputs, in the order added.
    open var outputs: [AVCaptureOutput] { locked { outputList } }

    /// Whether `output` can be added: not already in a session.
    open func canAddOutput(_ output: AVCaptureOutput) -> Bool {
        locked { !outputList.contains { $0 === output } && output.session == nil && output.canJoin(inputs: inputList) }
    }

    /// Adds an output and connects it to the first port of each media type it takes.
    /// Traps when `canAddOutput(_:)` says no.
    open func addOutput(_ output: AVCaptureOutput) {
        changeConfiguration {
            insert(output)
            connectAutomatically(output)
        }
    }

    /// Adds an output without connecting it.
    open func addOutputWithNoConnections(_ output: AVCaptureOutput) {
        changeConfiguration { insert(output) }
    }

    private func insert(_ output: AVCaptureOutput) {
        precondition(
            canAddOutput(output),
            "AVCaptureSession: cannot add \(output); check canAddOutput(_:) first (Apple raises"
                + " NSInvalidArgumentException)")
        outputList.append(output)
        output.sessionReference.withLock { $0 = WeakSession(self) }
    }

    /// Removes an output and its connections.
    open func removeOutput(_ output: AVCaptureOutput) {
        changeConfiguration {
            guard let index = outputList.firstIndex(where: { $0 === output }) else { return }
            if state == .running || state == .interrupted { output.sessionWillStopRunning() }
            outputList.remove(at: index)
            output.sessionReference.withLock { $0 = WeakSession() }
            connectionList.removeAll { connection in
                let uses = connection.output === output
                if uses { detach(connection) }
                return uses
            }
            output.setConnections([])
            if state == .running || state == .interrupted { output.sessionDidStopRunning() }
        }
    }

    // MARK: Connections

    /// Every connection, in the order formed.
    open var connections: [AVCaptureConnection] { locked { connectionList } }

    /// Whether `connection` can be added: its inputs and output (or preview layer) belong to this session, and
    /// the output has no other connection of that media type.
    open func canAddConnection(_ connection: AVCaptureConnection) -> Bool {
        locked {
            guard !connectionList.contains(where: { $0 === connection }) else { return false }
            let inputsPresent = connection.inputPorts.allSatisfy { port in inputList.contains { $0 === port.input } }
            guard inputsPresent, let mediaType = connection.mediaType else { return false }
            if let output = connection.output {
                guard outputList.contains(where: { $0 === output }), output.accepts(mediaType) else { return false }
                return output.acceptsMultipleConnectionsPerMediaType
                    || !output.connections.contains { $0.mediaType == mediaType }
            }
            if let layer = connection.videoPreviewLayer { return layer.session === self && mediaType == .video }
            return false
        }
    }

    /// Adds a connection made with `AVCaptureConnection(inputPorts:output:)`. Traps when `canAddConnection(_:)`
    /// says no.
    open func addConnection(_ connection: AVCaptureConnection) {
        changeConfiguration {
            precondition(
                canAddConnection(connection),
                "AVCaptureSession: cannot add \(connection); check canAddConnection(_:) first (Apple raises"
                    + " NSInvalidArgumentException)")
            attach(connection)
        }
    }

    /// Removes a connection.
    open func removeConnection(_ connection: AVCaptureConnection) {
        changeConfiguration {
            guard let index = connectionList.firstIndex(where: { $0 === connection }) else { return }
            connectionList.remove(at: index)
            detach(connection)
        }
    }

    /// Connects `output` to the first port of each media type it takes that it is not yet connected to.
    private func connectAutomatically(_ output: AVCaptureOutput) {
        for input in inputList {
            for port in input.ports where output.accepts(port.mediaType) {
                let taken = connectionList.contains { $0.output === output && $0.mediaType == port.mediaType }
                if taken && !output.acceptsMultipleConnectionsPerMediaType { continue }
                if connectionList.contains(where: { $0.output === output && $0.inputPorts.contains { $0 === port } }) {
                    continue
                }
                // The session's own rules decide too (a multi-camera session's one output of a kind per camera).
                let connection = AVCaptureConnection(inputPorts: [port], output: output)
                if canAddConnection(connection) { attach(connection) }
            }
        }
    }

    /// Connects a new preview layer to the first video port (called by the layer).
    package func connectPreviewLayer(_ layer: AVCaptureVideoPreviewLayer) -> AVCaptureConnection? {
        var made: AVCaptureConnection?
        changeConfiguration {
            guard let port = inputList.flatMap(\.ports).first(where: { $0.mediaType == .video }) else { return }
            let connection = AVCaptureConnection(inputPort: port, videoPreviewLayer: layer)
            guard canAddConnection(connection) else { return }
            attach(connection)
            made = connection
        }
        return made
    }

    private func attach(_ connection: AVCaptureConnection) {
        connectionList.append(connection)
        connection.setAttached(true)
        if let output = connection.output { output.setConnections(output.connections + [connection]) }
    }

    private func detach(_ connection: AVCaptureConnection) {
        connection.setAttached(false)
        if let output = connection.output { output.setConnections(output.connections.filter { $0 !== connection }) }
    }

    // MARK: Presets

    /// The quality level or size the session streams video at (`.high` by default). Setting a preset a device
    /// cannot honour traps; check `canSetSessionPreset(_:)` first. Setting a device's `activeFormat` directly
    /// switches this to `.inputPriority`. How each preset picks a device format: see `AVCaptureSessionPreset`.
    open var sessionPreset: Preset {
        get { locked { preset } }
        set {
            changeConfiguration {
                precondition(
                    canSetSessionPreset(newValue),
                    "AVCaptureSession: preset \(newValue.rawValue) is not supported by the session's inputs; check"
                        + " canSetSessionPreset(_:) first (Apple raises NSInvalidArgumentException)")
                let old = preset
                preset = newValue
                for case let input as AVCaptureDeviceInput in inputList { applyPreset(to: input.device) }
                if old != newValue {
                    keyValueObservers.notifyChange(\AVCaptureSession.sessionPreset, of: self, from: old, to: newValue)
                }
            }
        }
    }

    /// Whether every video device of the session can honour `preset`.
    open func canSetSessionPreset(_ preset: Preset) -> Bool {
        locked {
            inputList.allSatisfy { input in
                guard let device = (input as? AVCaptureDeviceInput)?.device, device.hasMediaType(.video) else {
                    return true
                }
                return device.supportsSessionPreset(preset)
            }
        }
    }

    private func applyPreset(to device: AVCaptureDevice) {
        guard preset != .inputPriority, device.hasMediaType(.video), let format = preset.format(in: device) else {
            return
        }
        device.applySessionFormat(format)
    }

    /// An input changed what it streams (a screen input's crop, scale or frame duration): the ports take the new
    /// format and a running session restarts the input's stream, at once (or at the outermost commit).
    package func inputConfigurationDidChange() {
        changeConfiguration {}
    }

    /// The user set a device's format directly: Apple's sessions switch to `.inputPriority`.
    func deviceFormatWasSetByUser() {
        changeConfiguration {
            let old = preset
            preset = .inputPriority
            if old != .inputPriority {
                keyValueObservers.notifyChange(\AVCaptureSession.sessionPreset, of: self, from: old, to: .inputPriority)
            }
        }
    }

    // MARK: Configuration

    /// Starts a batch of changes; they take effect together at the outermost `commitConfiguration()`.
    open func beginConfiguration() {
        lock.lock()
        configurationDepth += 1
        openConfigurations[Self.callingThread, default: 0] += 1
        lock.unlock()
    }

    /// Ends a batch of changes; the outermost commit validates and applies them at once (starting, stopping and
    /// reconfiguring devices of a running session).
    ///
    /// A commit without a matching `beginConfiguration()` applies the configuration as it stands and logs once:
    /// Apple documents no exception for it (AVCaptureSession.h, `-commitConfiguration`) and real apps do it
    /// (QRCodeReader.swift commits in every `init` without beginning).
    open func commitConfiguration() {
        lock.lock()
        defer { lock.unlock() }
        guard configurationDepth > 0 else {
            ToleratedMisuse.report(
                "AVCaptureSession.commitConfiguration",
                "AVCaptureSession: commitConfiguration() without beginConfiguration(); the configuration is applied"
                    + " as it stands")
            applyConfiguration()
            return
        }
        configurationDepth -= 1
        closeConfiguration()
        if configurationDepth == 0 { applyConfiguration() }
    }

    /// The calling thread's key in `openConfigurations`.
    private static var callingThread: UInt { UInt(pthread_self()) }

    /// Takes one open configuration off the calling thread's count (or, committed from another thread than the
    /// one that began it, off some other thread's); none is open anywhere once the depth is 0. With the lock held.
    private func closeConfiguration() {
        if configurationDepth == 0 {
            openConfigurations.removeAll()
            return
        }
        let key = openConfigurations[Self.callingThread] != nil ? Self.callingThread : openConfigurations.keys.first
        guard let key, let count = openConfigurations[key] else { return }
        openConfigurations[key] = count > 1 ? count - 1 : nil
    }

    /// Traps inside an open `beginConfiguration()`: AVCaptureSession.h, `-beginConfiguration`: "you must call
    /// -commitConfiguration before invoking -startRunning or -stopRunning, otherwise an NSGenericException is
    /// thrown". Only the calling thread's own open configuration counts. Called with the lock held.
    private func requireNoOpenConfiguration(_ method: String) {
        precondition(
            openConfigurations[Self.callingThread] == nil,
            "AVCaptureSession: \(method) between beginConfiguration() and commitConfiguration(); commit first (Apple"
                + " raises NSGenericException)")
    }

    /// Runs a change under the lock, applying it at once unless inside begin/commit.
    func changeConfiguration(_ change: () -> Void) {
        lock.lock()
        defer { lock.unlock() }
        configurationDepth += 1
        change()
        configurationDepth -= 1
        if configurationDepth == 0 { applyConfiguration() }
    }

    func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    /// Makes the running devices and the routes match the graph. Called under the lock at depth 0.
    private func applyConfiguration() {
        for input in inputList {
            for port in input.allPorts {
                if let format = input.activeFormatDescription { port.setFormatDescription(format) }
            }
        }
        publishRoutes()
        guard state == .running || state == .interrupted else { return }
        if let refusal = refusalToRun() {
            halt(for: refusal)
            return
        }
        reconcileStreams()
    }

    /// Rebuilds the capture threads' routing tables from the connections.
    private func publishRoutes() {
        var routes: [ObjectIdentifier: [any CaptureSink]] = [:]
        for connection in connectionList {
            for port in connection.inputPorts {
                guard let device = port.input.streamedDevice else { continue }
                routes[ObjectIdentifier(device.backend), default: []].append(
                    ConnectionSink(connection: connection, output: connection.output))
            }
        }
        // Every device with routes gets its table now, so a router made afterwards finds its routes in it.
        for key in routes.keys { _ = routeTable(for: key) }
        for (key, table) in routeTables.withLock({ $0 }) { table.replace(with: routes[key] ?? []) }
    }

    // MARK: Running

    /// Whether the session is running (also while interrupted). Observable.
    open var isRunning: Bool {
        let current = state
        return current == .running || current == .interrupted
    }

    /// Whether a device of the running session is unavailable for now. Observable.
    open var isInterrupted: Bool { state == .interrupted }

    /// The clock every buffer of the session is stamped on: the host clock (CLOCK_MONOTONIC).
    open var synchronizationClock: CMClock? { .hostTimeClock }

    /// Apple's older name for `synchronizationClock`.
    open var masterClock: CMClock? { synchronizationClock }

    /// Kept for source compatibility; wide colour capture is not configured on Linux.
    open var automaticallyConfiguresCaptureDeviceForWideColor: Bool = true
    /// Kept for source compatibility; Linux has no application audio session.
    open var usesApplicationAudioSession: Bool = true
    /// Kept for source compatibility; Linux has no application audio session.
    open var automaticallyConfiguresApplicationAudioSession: Bool = true

    /// Starts the devices and the flow of media; returns when every device streams (or failed). A device that
    /// is busy interrupts the session; a device that is gone posts `.AVCaptureSessionRuntimeError`.
    open func startRunning() {
        let failure = locked { () -> AVError? in
            requireNoOpenConfiguration("startRunning()")
            guard state == .idle else { return nil }
            if let refusal = refusalToRun() { return refusal }
            setState(.running)
            for output in outputList { output.sessionDidStartRunning() }
            return reconcileStreams()
        }
        if let failure {
            post(AVCaptureSession.runtimeErrorNotification, [AVCaptureSessionErrorKey: failure])
        }
        if isRunning {
            post(AVCaptureSession.didStartRunningNotification, [:])
        }
    }

    /// Stops the devices; returns when every capture thread has delivered its last buffer.
    open func stopRunning() {
        let stopped = locked { () -> Bool in
            requireNoOpenConfiguration("stopRunning()")
            guard state == .running || state == .interrupted else { return false }
            endStreaming()
            return true
        }
        if stopped { post(AVCaptureSession.didStopRunningNotification, [:]) }
    }

    /// Starts running and throws what would otherwise be posted as a runtime error (ours, beyond Apple).
    open func start() async throws {
        let failure = locked { () -> AVError? in
            requireNoOpenConfiguration("start()")
            guard state == .idle else { return nil }
            if let refusal = refusalToRun() { return refusal }
            setState(.running)
            for output in outputList { output.sessionDidStartRunning() }
            guard let failure = reconcileStreams() else { return nil }
            for stream in streams.values { stream.end() }
            streams.removeAll()
            setState(.idle)
            return failure
        }
        if let failure { throw failure }
        post(AVCaptureSession.didStartRunningNotification, [:])
    }

    func setState(_ new: State) {
        let (wasRunning, wasInterrupted) = (isRunning, isInterrupted)
        stateStorage.withLock { $0 = new }
        if wasRunning != isRunning {
            keyValueObservers.notifyChange(\AVCaptureSession.isRunning, of: self, from: wasRunning, to: isRunning)
        }
        if wasInterrupted != isInterrupted {
            keyValueObservers.notifyChange(
                \AVCaptureSession.isInterrupted, of: self, from: wasInterrupted, to: isInterrupted)
        }
    }

    // MARK: What a multi-camera session changes (overridden by AVCaptureMultiCamSession)

    /// Whether the session streams several cameras at once. A plain session takes one, as Apple's does on iOS.
    package var takesSeveralCameras: Bool { false }

    /// Why the session cannot run as configured (a multi-camera session's cost over budget), or nil. Asked under
    /// the lock at start and at every commit of a running session.
    package func refusalToRun() -> AVError? { nil }

    /// Whether the session streams `input`'s device: when one of its ports is enabled. Under the lock.
    package func streams(_ input: AVCaptureInput) -> Bool { input.ports.contains(where: \.isEnabled) }

    /// A connection or a port was enabled or disabled: a multi-camera session starts or stops the camera.
    package func enablementDidChange() {}

    /// Starts, restarts and stops device streams so that every device input of the graph streams its device's
    /// current configuration. New streams start before the old ones end, so a camera switch has no gap.
    /// Returns the first error that kept a device from starting (other than being busy, which interrupts).
    @discardableResult
    private func reconcileStreams() -> AVError? {
        var wanted: [ObjectIdentifier: (input: AVCaptureInput, device: AVCaptureDevice)] = [:]
        for input in inputList where streams(input) {
            guard let device = input.streamedDevice else { continue }
            wanted[ObjectIdentifier(device.backend)] = (input, device)
        }
        var retiring: [ActiveStream] = []
        for (key, stream) in streams {
            let configuration = stream.input.streamConfiguration
            if wanted[key]?.input !== stream.input || (configuration != stream.configuration && !stream.isInterrupted) {
                retiring.append(stream)
                streams[key] = nil
            }
        }
        var failure: AVError?
        for (key, (input, device)) in wanted where streams[key] == nil {
            let configuration = input.streamConfiguration
            var stream = ActiveStream(input: input, device: device, configuration: configuration, isInterrupted: false)
            do {
                stream.token = try stream.hub.subscribe(configuration, sink: sink(for: device.backend))
            } catch {
                stream.isInterrupted = true
                if error.kind == .busy {
                    interrupt(
                        for: device,
                        reason: device.hasMediaType(.video)
                            ? .videoDeviceInUseByAnotherClient : .audioDeviceInUseByAnotherClient)
                } else {
                    failure = failure ?? error.avError(for: device)
                    interrupt(for: device, reason: nil)
                }
            }
            streams[key] = stream
        }
        for stream in retiring { stream.end() }
        return failure
    }
}
