import CaptureDrivers
import Foundation
import Synchronization

/// A camera or microphone: identity, formats, and the controls of focus, exposure, white balance, flash,
/// torch and zoom.
///
/// Get devices through discovery (`default(for:)`, `DiscoverySession`, `devices()`); the same device is the
/// same object every time. Change a control between `lockForConfiguration()` and `unlockForConfiguration()`;
/// a setter called without the lock, or with a mode the device does not support, traps with a message naming
/// the rule (Apple raises an exception in both cases). `OPENAV_DEVICES` (`all`, `real`, `virtual`) chooses
/// which devices discovery shows.
///
/// Observable with Apple's KVO call shape (`device.observe(\.isAdjustingExposure, options: [.new])`):
/// `isAdjustingFocus`, `isAdjustingExposure`, `isAdjustingWhiteBalance`, `videoZoomFactor`,
/// `isRampingVideoZoom`, `isConnected`, `focusMode`, `exposureMode`, `whiteBalanceMode`, `torchMode`,
/// `isTorchActive`, `flashMode`, `activeFormat`, `activeVideoMinFrameDuration`, `activeVideoMaxFrameDuration`,
/// `lensPosition`, `exposureDuration`, `iso`, `exposureTargetBias`, `exposureTargetOffset`,
/// `deviceWhiteBalanceGains`. Observers are told only of real changes, on the thread that made them (yours
/// for setters, the device's capture thread as auto-exposure converges).
///
/// Threading: thread safe. Properties may be read from any thread; configuration state is guarded by a mutex.
open class AVCaptureDevice: NSObject, KeyValueObservable, @unchecked Sendable {
    /// What one process holds of a device's configuration.
    private struct Configuration {
        var activeFormatIndex: Int
        var activeVideoMinFrameDuration: CMTime
        var activeVideoMaxFrameDuration: CMTime
        var lockCount = 0
        var isConnected = true
        var monitorsSubjectAreaChange = false
    }

    package let backend: any CaptureBackend
    /// The device's formats, made once: `formats` returns the same objects every time.
    public let formats: [Format]
    private let configuration: Mutex<Configuration>
    /// The observers of this device's observable properties (the storage behind `observe(_:options:changeHandler:)`).
    public let keyValueObservers = KeyValueObserverRegistry()
    /// The token of our observer on the camera's control store, removed when the device goes away.
    private let controlObserverToken = Mutex<Int?>(nil)

    package init(backend: any CaptureBackend) {
        self.backend = backend
        let capabilities = backend.controls?.capabilities
        // Screens are not cameras: a multi-camera session runs cameras (V4L2, PipeWire, virtual, movie files).
        let isCamera = !(backend is any ScreenDevice)
        let formats = backend.formats.map { Format($0, capabilities: capabilities, isCamera: isCamera) }
        self.formats = formats
        let initialIndex = Self.initialFormatIndex(in: formats)
        let initial = backend.defaultConfiguration(for: backend.formats[initialIndex])
        self.configuration = Mutex(
            Configuration(
                activeFormatIndex: initialIndex, activeVideoMinFrameDuration: initial.frameDuration,
                activeVideoMaxFrameDuration: formats[initialIndex].video.map { _ in initial.frameDuration } ?? .invalid))
        super.init()
        // The observer holds the device weakly: the backend (and its store) outlives any one device object.
        if let controls = backend.controls {
            let token = controls.addStateObserver { [weak self] old, new in
                self?.controlStateDidChange(from: old, to: new)
            }
            controlObserverToken.withLock { $0 = token }
        }
    }

    /// Whether the app wants `subjectAreaDidChangeNotification` (Apple posts it when the scene changes enough to
    /// refocus). Kept, and settable under `lockForConfiguration()`; the notification is never posted here: no camera
    /// on Linux reports subject-area changes and we run no scene-change detector.
    public var isSubjectAreaChangeMonitoringEnabled: Bool {
        get { configuration.withLock { $0.monitorsSubjectAreaChange } }
        set {
            requireLock("isSubjectAreaChangeMonitoringEnabled")
            configuration.withLock { $0.monitorsSubjectAreaChange = newValue }
        }
    }

    deinit {
        if let token = controlObserverToken.withLock({ $0 }) { backend.controls?.removeStateObserver(token) }
    }

    /// The format a device starts in: what the `.high` preset picks (the largest native format up to 1920x1080
    /// that streams at 30 fps), or the first format.
    private static func initialFormatIndex(in formats: [Format]) -> Int {
        let candidates = formats.indices.filter { index in
            guard let video = formats[index].video, !video.isPhotoFormat else { return false }
            return video.width <= 1920 && video.height <= 1080 && video.maxFrameRate >= 29.97
        }
        // `max` keeps the first of equal areas, so a native format wins over a later compressed one.
        return candidates.max { area(formats[$0]) < area(formats[$1]) || (area(formats[$0]) == area(formats[$1]) && $0 > $1) } ?? 0
    }

    private static func area(_ format: Format) -> Int64 {
        format.video.map { Int64($0.width) * Int64($0.height) } ?? 0
    }

    // MARK: Identity

    /// Stable across runs: the same camera gets the same identifier tomorrow.
    public var uniqueID: String { backend.identity.uniqueID }
    /// The same for every device of one model.
    public var modelID: String { backend.identity.modelID }
    /// Beyond Apple: the name Linux's own tools give this device: a V4L2 camera's node (`/dev/video2`, what
    /// `v4l2-ctl -d` and `ffmpeg -f v4l2 -i` take), an ALSA microphone's PCM (`plughw:CARD=Webcam,DEV=0`, what
    /// `arecord -D` takes); nil for virtual devices, movie files and PipeWire nodes. A node's number can change
    /// at the next boot or plug; ``uniqueID`` does not.
    public var linuxDeviceName: String? { backend.identity.systemName }
    /// The name to show people.
    public var localizedName: String { backend.identity.localizedName }
    /// Who made the device.
    public var manufacturer: String { backend.identity.manufacturer }
    /// The kind of device.
    public var deviceType: DeviceType { DeviceType(rawValue: backend.identity.kind.rawValue) }
    /// Where the device faces.
    public var position: Position { Position(rawValue: backend.identity.position.rawValue) ?? .unspecified }
    /// How the device is attached (a four-character code, as Apple's: `'bltn'`, `'usb '`, `'virt'`).
    public var transportType: Int32 {
        let code =
            switch (backend.identity.origin, backend.identity.kind) {
            case (.virtual, _): "virt"
            case (_, .external): "usb "
            default: "bltn"
            }
        return Int32(bitPattern: fourCharCode(code) ?? 0)
    }

    /// Whether the device produces `mediaType`.
    public func hasMediaType(_ mediaType: AVMediaType) -> Bool {
        switch backend.identity.media {
        case .video: mediaType == .video
        case .audio: mediaType == .audio
        }
    }

    /// Whether the device is present. Observable; false after it is unplugged.
    public var isConnected: Bool { configuration.withLock { $0.isConnected } && backend.isConnected }
    /// Whether the device is suspended (a laptop lid closed): never, on Linux.
    public var isSuspended: Bool { false }
    /// Whether another process holds the device.
    public var isInUseByAnotherApplication: Bool { backend.isInUseByAnotherApplication }
    /// Whether the device is one of our built-in virtual devices (Apple: a device made of other devices).
    public var isVirtualDevice: Bool { false }

    public override var description: String {
        "<AVCaptureDevice [\(localizedName)][\(uniqueID)]>"
    }

    // MARK: Configuration lock

    /// Claims the device's configuration for this process, as Apple's. Calls nest: each needs an
    /// `unlockForConfiguration()`.
    ///
    /// - Throws: `AVError.deviceNotConnected` when the device is gone,
    ///   `AVError.deviceInUseByAnotherApplication` when another process holds it.
    public func lockForConfiguration() throws {
        guard isConnected else {
            throw AVError(
                .deviceNotConnected, "\(localizedName) is not connected",
                suggestion: "Reconnect the device, or choose another one with AVCaptureDevice.DiscoverySession.")
        }
        guard !isInUseByAnotherApplication else {
            throw AVError(
                .deviceInUseByAnotherApplication, "\(localizedName) is in use by another application",
                suggestion: "Close the other program using the device (`fuser` on its /dev node tells which).")
        }
        configuration.withLock { $0.lockCount += 1 }
    }

    /// Releases one `lockForConfiguration()`. An unlock without a lock does nothing, as Apple's.
    public func unlockForConfiguration() {
        configuration.withLock { $0.lockCount = max(0, $0.lockCount - 1) }
    }

    /// Whether this process holds the configuration lock.
    package var isLockedForConfiguration: Bool { configuration.withLock { $0.lockCount > 0 } }

    /// Traps unless the configuration lock is held: Apple raises NSGenericException here.
    package func requireLock(_ property: String, file: StaticString = #file, line: UInt = #line) {
        precondition(
            isLockedForConfiguration,
            "AVCaptureDevice: set \(property) only between lockForConfiguration() and unlockForConfiguration()"
                + " (Apple raises NSGenericException)", file: file, line: line)
    }

    // MARK: Formats

    /// The format the device streams in. Setting it needs the configuration lock and one of `formats`;
    /// it resets the frame durations to the format's default (30 fps or its fastest below that).
    public var activeFormat: Format {
        get { formats[configuration.withLock { $0.activeFormatIndex }] }
        set {
            requireLock("activeFormat")
            guard formats.contains(where: { $0 === newValue }) else {
                preconditionFailure(
                    "AVCaptureDevice: activeFormat must be one of the device's formats (Apple raises"
                        + " NSInvalidArgumentException)")
            }
            setActiveFormat(newValue)
            // Apple: setting the format directly switches the device's session to `.inputPriority`.
            sessionHooks.withLock { $0.formatSetByUser }?()
        }
    }

    /// What a session wants to hear from its device.
    package struct SessionHooks: Sendable {
        /// The user set `activeFormat` directly.
        package var formatSetByUser: (@Sendable () -> Void)?
    }

    /// Set by the session the device's input belongs to.
    package let sessionHooks = Mutex(SessionHooks())

    /// Sets the active format for a session preset: no lock needed, the preset stays.
    package func applySessionFormat(_ format: Format) {
        guard activeFormat !== format else { return }
        setActiveFormat(format)
    }

    private func setActiveFormat(_ newValue: Format) {
        let index = formats.firstIndex { $0 === newValue }!
        let defaults = backend.defaultConfiguration(for: formats[index].format)
        let old = configuration.withLock { configuration in
            let old = configuration
            configuration.activeFormatIndex = index
            configuration.activeVideoMinFrameDuration = defaults.frameDuration
            configuration.activeVideoMaxFrameDuration = defaults.frameDuration
            return old
        }
        if old.activeFormatIndex != index { didChange(\.activeFormat, from: formats[old.activeFormatIndex], to: formats[index]) }
        if old.activeVideoMinFrameDuration != defaults.frameDuration {
            didChange(\.activeVideoMinFrameDuration, from: old.activeVideoMinFrameDuration, to: defaults.frameDuration)
        }
        if old.activeVideoMaxFrameDuration != defaults.frameDuration {
            didChange(\.activeVideoMaxFrameDuration, from: old.activeVideoMaxFrameDuration, to: defaults.frameDuration)
        }
    }

    /// The shortest time between frames: 1 / the highest frame rate. Setting it needs the lock and a duration
    /// inside one of the active format's ranges; `.invalid` restores the format's default.
    public var activeVideoMinFrameDuration: CMTime {
        get { configuration.withLock { $0.activeVideoMinFrameDuration } }
        set { setFrameDuration(newValue, isMinimum: true) }
    }

    /// The longest time between frames: 1 / the lowest frame rate. Same rules as the minimum.
    public var activeVideoMaxFrameDuration: CMTime {
        get { configuration.withLock { $0.activeVideoMaxFrameDuration } }
        set { setFrameDuration(newValue, isMinimum: false) }
    }

    private func setFrameDuration(_ requested: CMTime, isMinimum: Bool) {
        let name = isMinimum ? "activeVideoMinFrameDuration" : "activeVideoMaxFrameDuration"
        requireLock(name)
        let format = activeFormat
        let duration = requested.isValid ? requested : backend.defaultConfiguration(for: format.format).frameDuration
        guard let video = format.video, video.supports(frameDuration: duration) else {
            preconditionFailure(
                "AVCaptureDevice: \(name) \(requested) is outside the active format's frame rate ranges"
                    + " \(format.videoSupportedFrameRateRanges) (Apple raises NSInvalidArgumentException)")
        }
        let (old, new) = configuration.withLock { configuration in
            let old = configuration
            if isMinimum {
                configuration.activeVideoMinFrameDuration = duration
                configuration.activeVideoMaxFrameDuration = max(configuration.activeVideoMaxFrameDuration, duration)
            } else {
                configuration.activeVideoMaxFrameDuration = duration
                configuration.activeVideoMinFrameDuration = min(configuration.activeVideoMinFrameDuration, duration)
            }
            return (old, configuration)
        }
        if old.activeVideoMinFrameDuration != new.activeVideoMinFrameDuration {
            didChange(\.activeVideoMinFrameDuration, from: old.activeVideoMinFrameDuration, to: new.activeVideoMinFrameDuration)
        }
        if old.activeVideoMaxFrameDuration != new.activeVideoMaxFrameDuration {
            didChange(\.activeVideoMaxFrameDuration, from: old.activeVideoMaxFrameDuration, to: new.activeVideoMaxFrameDuration)
        }
    }

    /// What a session streams from this device now: the active format at the shortest active frame duration.
    package var streamConfiguration: StreamConfiguration {
        let (index, duration) = configuration.withLock { ($0.activeFormatIndex, $0.activeVideoMinFrameDuration) }
        return StreamConfiguration(format: formats[index].format, frameDuration: duration)
    }

    // MARK: Connection

    /// The registry tells us the device went away or came back.
    package func connectionDidChange(isConnected connected: Bool) {
        let old = configuration.withLock { configuration in
            defer { configuration.isConnected = connected }
            return configuration.isConnected
        }
        if old != connected { didChange(\.isConnected, from: old, to: connected) }
    }

    // MARK: Controls

    /// The camera's controls; nil for microphones.
    package var controls: (any CameraControlling)? { backend.controls }
    /// What the camera can do; everything false for microphones.
    package var capabilities: CameraCapabilities { backend.controls?.capabilities ?? CameraCapabilities() }
    /// The camera's control state; the defaults for microphones.
    package var controlState: CameraControlState { backend.controls?.state ?? CameraControlState() }

    /// Applies a checked request to the camera.
    package func apply(_ request: ControlRequest, completion: ((CMTime) -> Void)? = nil) {
        let box = completion.map(UncheckedCompletion.init)
        backend.controls?.apply(request, completion: box.map { box in { @Sendable time in box.handler(time) } })
    }

    /// Tells observers which control properties changed.
    private func controlStateDidChange(from old: CameraControlState, to new: CameraControlState) {
        func report<V: Equatable>(_ keyPath: KeyPath<AVCaptureDevice, V>, _ value: (CameraControlState) -> V) {
            let (before, after) = (value(old), value(new))
            if before != after { didChange(keyPath, from: before, to: after) }
        }
        report(\.focusMode) { FocusMode(rawValue: $0.focusMode.rawValue)! }
        report(\.isAdjustingFocus) { $0.isAdjustingFocus }
        report(\.lensPosition) { $0.lensPosition }
        report(\.focusPointOfInterest) { CGPoint(x: $0.focusPointOfInterest.x, y: $0.focusPointOfInterest.y) }
        report(\.exposureMode) { ExposureMode(rawValue: $0.exposureMode.rawValue)! }
        report(\.isAdjustingExposure) { $0.isAdjustingExposure }
        report(\.exposureDuration) { Self.exposureTime($0.exposureDuration) }
        report(\.iso) { $0.iso }
        report(\.exposureTargetBias) { $0.exposureTargetBias }
        report(\.exposureTargetOffset) { $0.exposureTargetOffset }
        report(\.exposurePointOfInterest) { CGPoint(x: $0.exposurePointOfInterest.x, y: $0.exposurePointOfInterest.y) }
        report(\.whiteBalanceMode) { WhiteBalanceMode(rawValue: $0.whiteBalanceMode.rawValue)! }
        report(\.isAdjustingWhiteBalance) { $0.isAdjustingWhiteBalance }
        report(\.deviceWhiteBalanceGains) { WhiteBalanceGains($0.whiteBalanceGains) }
        report(\.videoZoomFactor) { CGFloat($0.videoZoomFactor) }
        report(\.isRampingVideoZoom) { $0.isRampingVideoZoom }
        report(\.flashMode) { FlashMode(rawValue: $0.flashMode.rawValue)! }
        report(\.torchMode) { TorchMode(rawValue: $0.torchMode.rawValue)! }
        report(\.torchLevel) { $0.torchLevel }
        report(\.isTorchActive) { $0.isTorchActive }
    }

    /// An exposure duration in seconds as the CMTime Apple reports (microsecond timescale).
    package static func exposureTime(_ seconds: Double) -> CMTime {
        CMTime(seconds: seconds, preferredTimescale: 1_000_000)
    }

    /// Notifies key-value observers of one property's change.
    package func didChange<Value>(_ keyPath: KeyPath<AVCaptureDevice, Value>, from old: Value, to new: Value) {
        keyValueObservers.notifyChange(keyPath, of: self, from: old, to: new)
    }
}

/// A user's completion handler carried to the capture thread, which calls it once.
/// `@unchecked Sendable`: Apple's handlers are not `@Sendable` either; they run on the device's thread, as Apple's.
private struct UncheckedCompletion: @unchecked Sendable {
    let handler: (CMTime) -> Void
}
