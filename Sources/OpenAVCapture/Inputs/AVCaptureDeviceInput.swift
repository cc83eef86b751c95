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
        setPorts([
            Port(
                input: self, mediaType: mediaType, clock: device.backend.clock,
                format: device.activeFormat.formatDescription)
        ])
    }

    /// An input for `device`, or nil with the error in `outError` (the Objective-C era factory).
    open class func deviceInput(with device: AVCaptureDevice) throws -> AVCaptureDeviceInput {
        try AVCaptureDeviceInput(device: device)
    }

    /// Whether unified auto video stabilization is enabled: we do not stabilize, so always false.
    open var isUnifiedAutoVideoStabilizationEnabled: Bool { false }

    public override var description: String { "<AVCaptureDeviceInput: \(device.localizedName)>" }
}
