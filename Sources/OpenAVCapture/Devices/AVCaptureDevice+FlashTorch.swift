import CaptureDrivers
import Foundation

extension AVCaptureDevice {
    /// Pass to `setTorchModeOn(level:)` for the brightest level the torch allows now.
    public static let maxAvailableTorchLevel: Float = .greatestFiniteMagnitude

    /// Whether the device has a flash.
    public var hasFlash: Bool { capabilities.hasFlash }
    /// Whether the flash can fire now (it has one and the device is connected).
    public var isFlashAvailable: Bool { hasFlash && isConnected }
    /// Whether the flash is firing: only during a still capture, which the photo outputs handle.
    public var isFlashActive: Bool { false }

    /// Whether the device supports a flash mode.
    public func isFlashModeSupported(_ flashMode: FlashMode) -> Bool {
        capabilities.flashModes.contains { $0.rawValue == flashMode.rawValue }
    }

    /// The flash mode for stills. Setting it needs the configuration lock and a supported mode.
    public var flashMode: FlashMode {
        get { FlashMode(rawValue: controlState.flashMode.rawValue)! }
        set {
            requireLock("flashMode")
            precondition(
                isFlashModeSupported(newValue),
                "AVCaptureDevice: flashMode \(newValue) is not supported by \(localizedName); check"
                    + " isFlashModeSupported(_:) first (Apple raises NSInvalidArgumentException)")
            apply(.flashMode(LightMode(rawValue: newValue.rawValue)!))
        }
    }

    /// Whether the device has a torch (a continuous light).
    public var hasTorch: Bool { capabilities.hasTorch }
    /// Whether the torch can light now.
    public var isTorchAvailable: Bool { hasTorch && isConnected }
    /// Whether the torch is lit: on, and the device streaming for a running session. Observable.
    public var isTorchActive: Bool { controlState.isTorchActive }
    /// The torch's brightness, 0...1.
    public var torchLevel: Float { controlState.torchLevel }

    /// Whether the device supports a torch mode.
    public func isTorchModeSupported(_ torchMode: TorchMode) -> Bool {
        capabilities.torchModes.contains { $0.rawValue == torchMode.rawValue }
    }

    /// The torch mode. `.on` lights the torch at full level while a session runs. Setting it needs the lock and
    /// a supported mode.
    public var torchMode: TorchMode {
        get { TorchMode(rawValue: controlState.torchMode.rawValue)! }
        set {
            requireLock("torchMode")
            precondition(
                isTorchModeSupported(newValue),
                "AVCaptureDevice: torchMode \(newValue) is not supported by \(localizedName); check"
                    + " isTorchModeSupported(_:) first (Apple raises NSInvalidArgumentException)")
            apply(.torch(LightMode(rawValue: newValue.rawValue)!, level: newValue == .off ? 0 : 1))
        }
    }

    /// Turns the torch on at `torchLevel` (0 < level ≤ 1, or `maxAvailableTorchLevel`). Needs the configuration
    /// lock and a torch.
    ///
    /// - Throws: `AVError.torchLevelUnavailable` when the device is gone.
    public func setTorchModeOn(level torchLevel: Float) throws {
        requireLock("torch (setTorchModeOn)")
        precondition(
            isTorchModeSupported(.on),
            "AVCaptureDevice: \(localizedName) has no torch; check hasTorch first (Apple raises"
                + " NSInvalidArgumentException)")
        let level = torchLevel == Self.maxAvailableTorchLevel ? 1 : torchLevel
        precondition(
            level > 0 && level <= 1,
            "AVCaptureDevice: torch level \(torchLevel) must be in (0, 1] (Apple raises NSInvalidArgumentException)")
        guard isConnected else {
            throw AVError(.torchLevelUnavailable, "\(localizedName) is not connected; the torch cannot light")
        }
        apply(.torch(.on, level: level))
    }
}
