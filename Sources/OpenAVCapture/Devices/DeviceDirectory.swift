import CaptureDrivers
import Foundation
import Synchronization

/// The one `AVCaptureDevice` object per device, made from the driver registry and kept for the process's life,
/// and the bridge from the registry's connection events to Apple's notifications.
///
/// Threading: thread safe (a mutex guards the table); notifications are posted on the thread that reported
/// the change.
package final class DeviceDirectory: Sendable {
    /// The directory of `DeviceRegistry.shared`. The virtual webcam gets its MediaCodecs compressors first, so every
    /// device this lists can stream each of its formats.
    package static let shared: DeviceDirectory = {
        VirtualWebcamCompressors.installedOnSharedWebcam
        return DeviceDirectory(registry: .shared)
    }()

    /// The directory a task made current (`withCurrent`), if any: a test's own set of virtual devices.
    @TaskLocal private static var taskDirectory: DeviceDirectory?

    /// The directory discovery answers from: the task's own (see `withCurrent`), or `shared`. Code that never
    /// opts in always gets `shared`.
    package static var current: DeviceDirectory { taskDirectory ?? shared }

    package let registry: DeviceRegistry
    private let devicesByID = Mutex<[String: AVCaptureDevice]>([:])
    /// Keeps the registry's listener from ending before the directory (a directory of a device set is not for the
    /// process's life).
    private let listenerToken: Mutex<Int?> = Mutex(nil)

    package init(registry: DeviceRegistry) {
        self.registry = registry
        let token = registry.addListener { [weak self] event in self?.handle(event) }
        listenerToken.withLock { $0 = token }
    }

    /// A directory of `driver`'s virtual devices alone, reporting to `registry` (which the driver's devices report
    /// to); the webcam gets the MediaCodecs compressors `shared`'s has.
    package convenience init(virtualDevices driver: VirtualDeviceDriver, registry: DeviceRegistry) {
        driver.usbWebcam.installFrameCompressors(VirtualWebcamCompressors.factory)
        self.init(registry: registry)
    }

    deinit {
        if let token = listenerToken.withLock({ $0 }) { registry.removeListener(token) }
    }

    /// Runs `body` with this directory current for the task and the tasks it creates: discovery
    /// (`AVCaptureDevice.default`, `DiscoverySession`, `devices(for:)`) answers from it, and sessions made there
    /// keep it.
    package func withCurrent<Result>(_ body: () throws -> Result) rethrows -> Result {
        try Self.$taskDirectory.withValue(self, operation: body)
    }

    /// The same for an async `body`.
    package func withCurrent<Result>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> Result
    ) async rethrows -> Result {
        try await Self.$taskDirectory.withValue(self, operation: body, isolation: isolation)
    }

    /// The devices present now, in discovery order (real first, then virtual).
    package func devices() -> [AVCaptureDevice] {
        registry.devices().map(device(for:))
    }

    /// The device object for a backend: the same object every time.
    package func device(for backend: any CaptureBackend) -> AVCaptureDevice {
        devicesByID.withLock { table in
            if let existing = table[backend.identity.uniqueID], existing.backend === backend { return existing }
            let device = AVCaptureDevice(backend: backend)
            table[backend.identity.uniqueID] = device
            return device
        }
    }

    private func handle(_ event: ConnectionEvent) {
        switch event {
        case .connected(let backend):
            let device = device(for: backend)
            device.connectionDidChange(isConnected: true)
            NotificationCenter.default.post(name: .AVCaptureDeviceWasConnected, object: device)
        case .disconnected(let backend):
            let device = device(for: backend)
            device.connectionDidChange(isConnected: false)
            NotificationCenter.default.post(name: .AVCaptureDeviceWasDisconnected, object: device)
        case .availabilityChanged:
            // `isInUseByAnotherApplication` reads the backend directly; sessions listen for this themselves.
            break
        }
    }
}

extension NSNotification.Name {
    /// Apple's notification of a subject-area change; never posted here (see
    /// `AVCaptureDevice.isSubjectAreaChangeMonitoringEnabled`).
    public static let AVCaptureDeviceSubjectAreaDidChange = NSNotification.Name(
        "AVCaptureDeviceSubjectAreaDidChangeNotification")
    /// Posted when a device appears; the object is the `AVCaptureDevice`.
    public static let AVCaptureDeviceWasConnected = NSNotification.Name("AVCaptureDeviceWasConnectedNotification")
    /// Posted when a device goes away; the object is the `AVCaptureDevice`, whose `isConnected` is now false.
    public static let AVCaptureDeviceWasDisconnected = NSNotification.Name(
        "AVCaptureDeviceWasDisconnectedNotification")
}

extension AVCaptureDevice {
    /// Apple posts this when a device's subject area changes (see `isSubjectAreaChangeMonitoringEnabled`); never
    /// posted here.
    public static let subjectAreaDidChangeNotification = NSNotification.Name.AVCaptureDeviceSubjectAreaDidChange
    /// Posted when a device appears (Apple's newer spelling of `.AVCaptureDeviceWasConnected`).
    public static let wasConnectedNotification = NSNotification.Name.AVCaptureDeviceWasConnected
    /// Posted when a device goes away (Apple's newer spelling of `.AVCaptureDeviceWasDisconnected`).
    public static let wasDisconnectedNotification = NSNotification.Name.AVCaptureDeviceWasDisconnected
}
