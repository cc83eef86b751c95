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

    package let registry: DeviceRegistry
    private let devicesByID = Mutex<[String: AVCaptureDevice]>([:])

    package init(registry: DeviceRegistry) {
        self.registry = registry
        _ = registry.addListener { [weak self] event in self?.handle(event) }
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
