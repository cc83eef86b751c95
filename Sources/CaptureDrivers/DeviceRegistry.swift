import Foundation
import Synchronization

/// Which devices discovery shows, from the `OPENAV_DEVICES` environment variable.
package enum DeviceSelection: String, Sendable, CaseIterable {
    /// Real devices, then the virtual ones (the default).
    case all
    /// Only hardware (and files standing in for it).
    case real
    /// Only the built-in virtual devices: deterministic, for tests and CI.
    case virtual

    /// `OPENAV_DEVICES` from the environment; unset or unrecognised means `.all` (an unknown value is reported
    /// once on stderr rather than silently ignored).
    package static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        -> DeviceSelection
    {
        guard let raw = environment["OPENAV_DEVICES"], !raw.isEmpty else { return .all }
        if let selection = DeviceSelection(rawValue: raw.lowercased()) { return selection }
        FileHandle.standardError.write(
            Data("OpenAVCapture: OPENAV_DEVICES=\(raw) is not one of all, real, virtual; using all\n".utf8))
        return .all
    }

    package func admits(_ origin: DeviceOrigin) -> Bool {
        switch self {
        case .all: true
        case .real: origin == .real
        case .virtual: origin == .virtual
        }
    }
}

/// Which backends reach real cameras and microphones, from the `OPENAV_BACKEND` environment variable.
package enum BackendPreference: String, Sendable, CaseIterable {
    /// PipeWire's nodes where a daemon runs, standing for the devices it owns; V4L2 and ALSA for the rest (the
    /// default).
    case auto
    /// Only PipeWire's nodes: the raw V4L2 and ALSA devices are not listed.
    case pipewire
    /// Only the raw V4L2 and ALSA devices, as if no PipeWire daemon ran.
    case raw

    /// `OPENAV_BACKEND` from the environment; unset means `.auto`, an unknown value is reported once on stderr.
    package static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        -> BackendPreference
    {
        guard let raw = environment["OPENAV_BACKEND"], !raw.isEmpty else { return .auto }
        if let preference = BackendPreference(rawValue: raw.lowercased()) { return preference }
        FileHandle.standardError.write(
            Data("OpenAVCapture: OPENAV_BACKEND=\(raw) is not one of auto, pipewire, raw; using auto\n".utf8))
        return .auto
    }

    package func admits(_ family: DriverFamily) -> Bool {
        switch (self, family) {
        case (.pipewire, .raw), (.raw, .pipeWire): false
        default: true
        }
    }
}

/// How a driver reaches its devices, for `OPENAV_BACKEND` and for hiding a raw device a PipeWire node stands for.
package enum DriverFamily: Sendable, Hashable {
    /// The kernel's nodes directly: V4L2 and ALSA.
    case raw
    /// Through a PipeWire daemon.
    case pipeWire
    /// Neither: virtual devices, files, screens.
    case other
}

/// A kind of device: enumerates the devices of that kind that exist now.
///
/// Threading: thread safe.
package protocol CaptureDriver: Sendable {
    /// Real hardware (V4L2, ALSA, X11) or the built-in virtual devices.
    var origin: DeviceOrigin { get }
    /// The devices present now. Devices seen before keep their backend object (same `uniqueID`, same instance).
    func discoverDevices() -> [any CaptureBackend]
    /// Devices present that this user may not open (for authorization and its advice).
    func inaccessibleDevices() -> [InaccessibleDevice]
    /// How the driver reaches its devices.
    var family: DriverFamily { get }
    /// Raw devices (`CaptureBackend.rawDeviceKey`) this driver's devices stand for, which other drivers must not
    /// list again.
    var claimedRawDevices: Set<String> { get }
}

extension CaptureDriver {
    /// None: drivers whose devices are always accessible.
    package func inaccessibleDevices() -> [InaccessibleDevice] { [] }
    package var family: DriverFamily { .other }
    package var claimedRawDevices: Set<String> { [] }
}

/// A device came or went, or another process took or released it.
package enum ConnectionEvent: Sendable {
    case connected(any CaptureBackend)
    case disconnected(any CaptureBackend)
    /// `isInUseByAnotherApplication` changed.
    case availabilityChanged(any CaptureBackend)

    package var backend: any CaptureBackend {
        switch self {
        case .connected(let backend), .disconnected(let backend), .availabilityChanged(let backend): backend
        }
    }
}

/// Every driver, filtered by `OPENAV_DEVICES`: the list `AVCaptureDevice` discovery reads, and the place
/// drivers report devices coming and going.
///
/// Threading: thread safe. Connection listeners run on the thread that reported the change.
package final class DeviceRegistry: Sendable {
    package typealias Listener = @Sendable (ConnectionEvent) -> Void

    private let allDrivers: [any CaptureDriver]
    package let selection: DeviceSelection
    package let backendPreference: BackendPreference
    private let listeners = Mutex<[Int: Listener]>([:])
    private let nextToken = Atomic<Int>(0)

    package init(
        drivers: [any CaptureDriver], selection: DeviceSelection, backendPreference: BackendPreference = .auto
    ) {
        self.allDrivers = drivers
        self.selection = selection
        self.backendPreference = backendPreference
    }

    /// The drivers `OPENAV_BACKEND` admits.
    private var drivers: [any CaptureDriver] { allDrivers.filter { backendPreference.admits($0.family) } }

    /// The devices present now: real ones first (PipeWire's nodes before the raw devices they do not stand for),
    /// then virtual ones, each driver's in its own order.
    package func devices() -> [any CaptureBackend] {
        let admitted = drivers.filter { selection.admits($0.origin) }
        let real = admitted.filter { $0.origin == .real }.flatMap { $0.discoverDevices() }
        let virtual = admitted.filter { $0.origin == .virtual }.flatMap { $0.discoverDevices() }
        let claimed = claimedRawDevices(by: admitted)
        return (real + virtual).filter { $0.isConnected && !Self.isClaimed($0, by: claimed) }
    }

    /// The raw devices some admitted driver's devices stand for.
    private func claimedRawDevices(by admitted: [any CaptureDriver]) -> Set<String> {
        admitted.reduce(into: Set<String>()) { $0.formUnion($1.claimedRawDevices) }
    }

    private static func isClaimed(_ backend: any CaptureBackend, by claimed: Set<String>) -> Bool {
        guard let key = backend.rawDeviceKey else { return false }
        return claimed.contains(key)
    }

    /// Real devices present that this user may not open.
    package func inaccessibleDevices() -> [InaccessibleDevice] {
        drivers.filter { selection.admits($0.origin) }.flatMap { $0.inaccessibleDevices() }
    }

    package func addListener(_ listener: @escaping Listener) -> Int {
        let token = nextToken.wrappingAdd(1, ordering: .relaxed).oldValue
        listeners.withLock { $0[token] = listener }
        return token
    }

    package func removeListener(_ token: Int) {
        _ = listeners.withLock { $0.removeValue(forKey: token) }
    }

    /// Drivers call this when a device appears or disappears (hot-plug, a simulated unplug).
    package func report(_ event: ConnectionEvent) {
        guard selection.admits(event.backend.identity.origin) else { return }
        // A raw device a PipeWire node stands for comes and goes as that node (the raw event would be a duplicate).
        if Self.isClaimed(event.backend, by: claimedRawDevices(by: drivers)) { return }
        let current = listeners.withLock { Array($0.values) }
        for listener in current { listener(event) }
    }
}
