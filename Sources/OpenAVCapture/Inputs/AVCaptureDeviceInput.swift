import CaptureDrivers
import Foundation

/// An input that captures from a device: one port for the device's media.
///
/// Threading: thread safe.
open class AVCaptureDeviceInput: AVCaptureInput, @unchecked Sendable {
    /// The device the input captures from.
    open var device: AVCaptureDevice { storedDevice }
    private let storedDevice: AVCaptureDevice

    package override var streamedDevice: AVCaptureDevice? { device }

    /// An input for `device`.
    ///
    /// - Throws: `AVError.applicationIsNotAuthorizedToUseDevice` when this user may not open the device,
    ///   `AVError.deviceNotConnected` when it is gone, `AVError.deviceInUseByAnotherApplication` when another
    ///   process holds it. Each error says what to do.
    ///
    /// Required, as an imported Objective-C initializer is, so `Self(device:)` and `type(of: input).init(device:)`
    /// work in subclasses and generic code as they do on Apple's platforms.
    public required init(device: AVCaptureDevice) throws {
        guard device.backend.isAccessible else {
            throw AVError(
                .applicationIsNotAuthorizedToUseDevice, "this user may not open \(device.localizedName)",
                suggestion: device.backend.accessAdvice
                    ?? "Add the user to the group that owns the device node (usually `video` or `audio`).",
                extra: [AVErrorDeviceKey: device])
        }
        guard device.isConnected else {
            throw AVError(
                .deviceNotConnected, "\(device.localizedName) is not connected",
                suggestion: "Reconnect it, or pick another device with AVCaptureDevice.DiscoverySession.",
                extra: [AVErrorDeviceKey: device])
        }
        guard !device.isInUseByAnotherApplication else {
            throw AVError(
                .deviceInUseByAnotherApplication, "\(device.localizedName) is in use by another application",
                suggestion: "Close the other program (`fuser -v` on the device node names it) and try again.",
                extra: [AVErrorDeviceKey: device])
        }
        self.storedDevice = device
        super.init()
        let mediaType: AVMediaType = device.hasMediaType(.video) ? .video : .audio
        func port(at position: AVCaptureDevice.Position) -> Port {
            Port(
                input: self, mediaType: mediaType, clock: device.backend.clock,
                format: device.activeFormat.formatDescription, sourceDeviceType: device.deviceType,
                sourceDevicePosition: position)
        }
        setPorts([port(at: device.position)])
        // A microphone's front and back ports, as a multi-camera session finds them for each camera's sound. A Linux
        // microphone forms no beams: both carry what its own port carries.
        microphoneBeamPorts = mediaType == .audio ? [port(at: .front), port(at: .back)] : []
    }

    /// The microphone's hidden front and back ports; empty for a camera. Set once, in `init`.
    private var microphoneBeamPorts: [Port] = []

    package override var hiddenPorts: [Port] { microphoneBeamPorts }

    /// The input's ports that match, including hidden ones: a microphone's front and back ports, which Apple's
    /// multi-camera sessions connect to each camera's outputs (AVMultiCamPiP's `ports(for: .audio, sourceDeviceType:
    /// microphone.deviceType, sourceDevicePosition: .back)`). nil matches every media type or device type;
    /// `.unspecified` matches every position for a camera, and a microphone's own (omnidirectional) port for a
    /// microphone, as Apple's.
    ///
    /// A Linux microphone forms no beams: its front and back ports carry the same sound as its own port. A camera
    /// here is one physical camera, with no constituent devices, so a camera input's only port is its own.
    open func ports(
        for mediaType: AVMediaType?, sourceDeviceType: AVCaptureDevice.DeviceType?,
        sourceDevicePosition: AVCaptureDevice.Position
    ) -> [AVCaptureInput.Port] {
        let isMicrophone = device.hasMediaType(.audio)
        return allPorts.filter { port in
            guard mediaType.map({ $0 == port.mediaType }) ?? true,
                sourceDeviceType.map({ $0 == port.sourceDeviceType }) ?? true
            else { return false }
            if sourceDevicePosition == .unspecified && !isMicrophone { return true }
            return port.sourceDevicePosition == sourceDevicePosition
        }
    }

    /// An input for `device`, or nil with the error in `outError` (the Objective-C era factory).
    open class func deviceInput(with device: AVCaptureDevice) throws -> AVCaptureDeviceInput {
        try AVCaptureDeviceInput(device: device)
    }

    /// Whether unified auto video stabilization is enabled: we do not stabilize, so always false.
    open var isUnifiedAutoVideoStabilizationEnabled: Bool { false }

    public override var description: String { "<AVCaptureDeviceInput: \(device.localizedName)>" }
}
