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
}

extension CaptureDriver {
    /// None: drivers whose devices are always accessible.
    package func inaccessibleDevices() -> [InaccessibleDevice] { [] }
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

    private let drivers: [any CaptureDriver]
    package let selection: DeviceSelection
    private let listeners = Mutex<[Int: Listener]>([:])
    private let nextToken = Atomic<Int>(0)

    package init(drivers: [any CaptureDriver], selection: DeviceSelection) {
        self.drivers = drivers
        self.selection = selection
    }

    /// The devices present now: real ones first, then virtual ones, each driver's in its own order.
    package func devices() -> [any CaptureBackend] {
        let admitted = drivers.filter { selection.admits($0.origin) }
        let real = admitted.filter { $0.origin == .real }.flatMap { $0.discoverDevices() }
        let virtual = admitted.filter { $0.origin == .virtual }.flatMap { $0.discoverDevices() }
        return (real + virtual).filter(\.isConnected)
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
        let current = listeners.withLock { Array($0.values) }
        for listener in current { listener(event) }
    }
}
