import CaptureDrivers
import Foundation
import Synchronization

extension AVCaptureDevice {
    /// Every device present, real ones first (`OPENAV_DEVICES` decides which are shown).
    @available(*, deprecated, message: "Use AVCaptureDevice.DiscoverySession instead.")
    public class func devices() -> [AVCaptureDevice] { DeviceDirectory.current.devices() }

    /// Every device that produces `mediaType`.
    @available(*, deprecated, message: "Use AVCaptureDevice.DiscoverySession instead.")
    public class func devices(for mediaType: AVMediaType) -> [AVCaptureDevice] {
        DeviceDirectory.current.devices().filter { $0.hasMediaType(mediaType) }
    }

    /// The default device for a media type: a real one when there is one, otherwise the virtual one (the virtual
    /// back camera for video, the virtual microphone for audio). Nil only when `OPENAV_DEVICES=real` finds none.
    public class func `default`(for mediaType: AVMediaType) -> AVCaptureDevice? {
        let candidates = DeviceDirectory.current.devices().filter { $0.hasMediaType(mediaType) }
        return candidates.first { $0.backend.identity.origin == .real } ?? candidates.first
    }

    /// The default device of a type, media type and position (`.unspecified` matches any position).
    public class func `default`(
        _ deviceType: DeviceType, for mediaType: AVMediaType?, position: Position
    ) -> AVCaptureDevice? {
        DiscoverySession(deviceTypes: [deviceType], mediaType: mediaType, position: position).devices.first
    }

    /// Finds devices by type, media type and position, in the order of `deviceTypes`.
    ///
    /// `devices` is key-value observable, as Apple's: `session.observe(\.devices, options: [.new]) { … }` is told
    /// when a matching device is connected or disconnected.
    ///
    /// Threading: thread safe; `devices` is read anew from the driver registry on each access (the registry of the
    /// device set current where the session was made, see OpenAVCaptureTesting's `VirtualDeviceSet`). Change
    /// notifications arrive on the thread that posted the device's connection notification.
    open class DiscoverySession: NSObject, KeyValueObservable, @unchecked Sendable {
        private let deviceTypes: [DeviceType]
        private let mediaType: AVMediaType?
        private let position: Position
        /// Where the devices come from: the directory current when the session was made (a test's device set, or
        /// the process's), kept so notifications on other threads read the same one.
        private let directory = DeviceDirectory.current
        public let keyValueObservers = KeyValueObserverRegistry()
        /// The devices last reported to observers.
        private let reported = Mutex<[AVCaptureDevice]>([])
        /// The connection notification observers; set in `init`, read in `deinit` only.
        private var tokens: [any NSObjectProtocol] = []

        /// A session for devices of `deviceTypes` that produce `mediaType` (nil: any) at `position`
        /// (`.unspecified`: any).
        public init(deviceTypes: [DeviceType], mediaType: AVMediaType?, position: Position) {
            self.deviceTypes = deviceTypes
            self.mediaType = mediaType
            self.position = position
            super.init()
            let initial = devices
            reported.withLock { $0 = initial }
            tokens = [Notification.Name.AVCaptureDeviceWasConnected, .AVCaptureDeviceWasDisconnected].map { name in
                NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { [weak self] _ in
                    self?.devicesMayHaveChanged()
                }
            }
        }

        deinit {
            for token in tokens { NotificationCenter.default.removeObserver(token) }
        }

        /// Tells observers of `devices` when the list differs from the one they last saw.
        private func devicesMayHaveChanged() {
            let now = devices
            let before = reported.withLock { devices in
                defer { devices = now }
                return devices
            }
            guard !before.elementsEqual(now, by: ===) else { return }
            keyValueObservers.notifyChange(\DiscoverySession.devices, of: self, from: before, to: now)
        }

        /// The matching devices present now: by the order of `deviceTypes`, then discovery order.
        public var devices: [AVCaptureDevice] {
            let present = directory.devices()
            return deviceTypes.flatMap { type in
                present.filter { device in
                    device.deviceType == type && (mediaType.map(device.hasMediaType) ?? true)
                        && (position == .unspecified || device.position == position)
                }
            }
        }
    }
}

extension AVCaptureDevice {
    /// Whether the app may use devices of a media type. On Linux access means the device can be opened: virtual
    /// devices always can; real devices of the type whose nodes this user cannot open, with none that it can,
    /// make the status `.denied` (`authorizationAdvice(for:)` says which group to join).
    ///
    /// Where the desktop has a camera portal (always in a Flatpak sandbox), the camera's status is the portal's:
    /// the permission store's decision for this app, `.notDetermined` until one is made.
    public class func authorizationStatus(for mediaType: AVMediaType) -> AVAuthorizationStatus {
        if mediaType == .video, let permission = CameraAccess.shared.permission {
            switch permission {
            case .granted: return .authorized
            case .denied: return .denied
            case .notDetermined: return .notDetermined
            }
        }
        let devices = DeviceDirectory.current.devices().filter { $0.hasMediaType(mediaType) }
        let real = devices.filter { $0.backend.identity.origin == .real }
        if real.contains(where: { $0.backend.isAccessible }) { return .authorized }
        if !real.isEmpty || !deniedDevices(for: mediaType).isEmpty { return .denied }
        return devices.isEmpty || devices.contains { $0.backend.isAccessible } ? .authorized : .denied
    }

    /// Why `authorizationStatus(for:)` is `.denied`: what to do for each device this user may not open (the group
    /// to join). Empty when nothing is denied. Ours: Apple asks the user instead.
    public class func authorizationAdvice(for mediaType: AVMediaType) -> [String] {
        let devices = DeviceDirectory.current.devices().filter { $0.hasMediaType(mediaType) && !$0.backend.isAccessible }
        return devices.compactMap(\.backend.accessAdvice) + deniedDevices(for: mediaType).map(\.advice)
    }

    private class func deniedDevices(for mediaType: AVMediaType) -> [InaccessibleDevice] {
        DeviceDirectory.current.registry.inaccessibleDevices().filter { device in
            switch device.media {
            case .video: mediaType == .video
            case .audio: mediaType == .audio
            }
        }
    }

    /// Asks for access. For the camera where the desktop has a camera portal, the portal asks the user (its
    /// dialog) unless the app's answer is stored; elsewhere nobody is asked: the answer is whether the device can be
    /// opened. The handler runs on an arbitrary queue, as Apple's.
    public class func requestAccess(for mediaType: AVMediaType, completionHandler handler: @escaping @Sendable (Bool) -> Void) {
        DispatchQueue.global().async { handler(decideAccess(for: mediaType)) }
    }

    /// Asks for access, as `requestAccess(for:completionHandler:)` does.
    public class func requestAccess(for mediaType: AVMediaType) async -> Bool {
        await withCheckedContinuation { continuation in
            requestAccess(for: mediaType) { continuation.resume(returning: $0) }
        }
    }

    /// The portal's answer for the camera where there is a portal, else whether the devices can be opened. Blocks
    /// while the portal's dialog is up.
    private class func decideAccess(for mediaType: AVMediaType) -> Bool {
        if mediaType == .video, let answer = CameraAccess.shared.requestAccess() { return answer }
        return authorizationStatus(for: mediaType) == .authorized
    }

    /// Whether the device can stream in a session preset's format (see `AVCaptureSession.Preset`).
    public func supportsSessionPreset(_ preset: AVCaptureSessionPreset) -> Bool {
        preset.format(in: self) != nil
    }
}

/// Lets `AVCaptureDevice(uniqueID:)` return the one shared object for a device, as Apple's does: only an
/// initializer in a protocol extension may assign `self`. Not for direct use.
public protocol _AVCaptureDeviceSharedInstance {}

extension AVCaptureDevice: _AVCaptureDeviceSharedInstance {}

extension _AVCaptureDeviceSharedInstance {
    /// The device with a unique identifier (the same object discovery returns), or nil when it is not present.
    ///
    /// Ours: `file:PATH` is the movie at PATH played in real time as a camera (its first video track), and
    /// `file:PATH#audio` its sound as a microphone; nil when the file cannot be read or lacks the track
    /// (`AVCaptureDevice.movieFileDevice(uniqueID:)` says why). A relative PATH resolves against the working
    /// directory. Whatever `OPENAV_DEVICES` says, since the caller named the file.
    public init?(uniqueID deviceUniqueID: String) {
        let shared =
            DeviceDirectory.current.devices().first { $0.uniqueID == deviceUniqueID }
            ?? (try? MovieFileDevices.backend(forUniqueID: deviceUniqueID))?.map(DeviceDirectory.shared.device(for:))
        guard let device = shared as? Self else { return nil }
        self = device
    }
}
