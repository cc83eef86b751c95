import CaptureDrivers
import Foundation
import Synchronization

/// A source of media for a session: its ports, one per media stream.
///
/// Threading: thread safe; `ports` is fixed at creation.
open class AVCaptureInput: NSObject, @unchecked Sendable {
    /// The streams this input provides.
    open var ports: [Port] { portList }
    private var portList: [Port] = []
    /// The session the input belongs to, if any.
    package let sessionReference = Mutex<WeakSession>(WeakSession())

    override package init() { super.init() }

    /// The device the session streams for this input (a camera's, a microphone's, a screen's); nil for an input
    /// without one. Subclasses with a device override it.
    package var streamedDevice: AVCaptureDevice? { nil }

    /// What the session streams from `streamedDevice` now. Only asked of inputs with a device.
    package var streamConfiguration: StreamConfiguration {
        guard let device = streamedDevice else { preconditionFailure("\(self) has no device to stream") }
        return device.streamConfiguration
    }

    /// The format of the input's media now, which the session gives its ports at each commit; nil leaves them.
    package var activeFormatDescription: CMFormatDescription? { streamedDevice?.activeFormat.formatDescription }

    /// The session the input belongs to, if any.
    package var session: AVCaptureSession? { sessionReference.withLock { $0.session } }

    /// Sets the ports once, during a subclass's initialization.
    package func setPorts(_ ports: [Port]) { portList = ports }

    /// Ports the input has beyond `ports`, found only by asking for them (a microphone's front and back ports:
    /// `AVCaptureDeviceInput.ports(for:sourceDeviceType:sourceDevicePosition:)`). Empty unless a subclass has some.
    package var hiddenPorts: [Port] { [] }

    /// `ports` and `hiddenPorts`: every port the session gives a format and may route.
    package var allPorts: [Port] { ports + hiddenPorts }

    /// Posted when a port's format description changes (the device's active format changed).
    public static let portFormatDescriptionDidChangeNotification = NSNotification.Name(
        "AVCaptureInputPortFormatDescriptionDidChangeNotification")

    /// One stream of an input: its media type, its current format, and the clock its timestamps are on.
    ///
    /// Threading: thread safe; `isEnabled` and the format are guarded by a mutex.
    open class Port: NSObject, @unchecked Sendable {
        /// The input the port belongs to.
        public unowned let input: AVCaptureInput
        /// What the port carries.
        public let mediaType: AVMediaType
        /// The clock the port's sample buffers are stamped on: the host clock for every device here
        /// (`CMSyncConvertTime` to the session's `synchronizationClock` is then the identity).
        public let clock: CMClock?
        /// The type of the device the port's media comes from: the input's device's `deviceType`; nil for an input
        /// without a device (a screen's).
        public let sourceDeviceType: AVCaptureDevice.DeviceType?
        /// The position of the device the port's media comes from: the device's own for the ports in `ports`; a
        /// microphone's hidden front and back ports say `.front` and `.back`.
        public let sourceDevicePosition: AVCaptureDevice.Position
        private let state: Mutex<(enabled: Bool, format: CMFormatDescription?)>

        package init(
            input: AVCaptureInput, mediaType: AVMediaType, clock: CMClock?, format: CMFormatDescription?,
            sourceDeviceType: AVCaptureDevice.DeviceType? = nil, sourceDevicePosition: AVCaptureDevice.Position = .unspecified
        ) {
            self.input = input
            self.mediaType = mediaType
            self.clock = clock
            self.sourceDeviceType = sourceDeviceType
            self.sourceDevicePosition = sourceDevicePosition
            self.state = Mutex((true, format))
        }

        /// Whether the port's data flows. A disabled port delivers nothing to any connection.
        public var isEnabled: Bool {
            get { state.withLock { $0.enabled } }
            set {
                let changed = state.withLock { state in
                    defer { state.enabled = newValue }
                    return state.enabled != newValue
                }
                if changed { input.session?.enablementDidChange() }
            }
        }

        /// The format of the port's media now.
        public var formatDescription: CMFormatDescription? { state.withLock { $0.format } }

        package func setFormatDescription(_ format: CMFormatDescription?) {
            let changed = state.withLock { state in
                defer { state.format = format }
                return state.format != format
            }
            if changed {
                NotificationCenter.default.post(name: AVCaptureInput.portFormatDescriptionDidChangeNotification, object: self)
            }
        }

        public override var description: String {
            "<AVCaptureInputPort \(mediaType.rawValue) \(formatDescription.map { "\($0)" } ?? "no format")>"
        }
    }
}

extension NSNotification.Name {
    /// Posted when an input port's format description changes.
    public static let AVCaptureInputPortFormatDescriptionDidChange = AVCaptureInput
        .portFormatDescriptionDidChangeNotification
}
