import CaptureDrivers
import Foundation

extension AVCaptureDevice {
    /// Pass to `setWhiteBalanceModeLocked(with:completionHandler:)` to lock the gains where they are.
    public static let currentWhiteBalanceGains = WhiteBalanceGains(redGain: 0, greenGain: 0, blueGain: 0)

    /// Whether the device supports a white balance mode.
    public func isWhiteBalanceModeSupported(_ whiteBalanceMode: WhiteBalanceMode) -> Bool {
        capabilities.whiteBalanceModes.contains { $0.rawValue == whiteBalanceMode.rawValue }
    }

    /// The white balance mode. Setting it needs the configuration lock and a supported mode.
    public var whiteBalanceMode: WhiteBalanceMode {
        get { WhiteBalanceMode(rawValue: controlState.whiteBalanceMode.rawValue)! }
        set {
            requireLock("whiteBalanceMode")
            precondition(
                isWhiteBalanceModeSupported(newValue),
                "AVCaptureDevice: whiteBalanceMode \(newValue) is not supported by \(localizedName); check"
                    + " isWhiteBalanceModeSupported(_:) first (Apple raises NSInvalidArgumentException)")
            apply(.whiteBalanceMode(CaptureDrivers.WhiteBalanceMode(rawValue: newValue.rawValue)!))
        }
    }

    /// Whether white balance is converging. Observable.
    public var isAdjustingWhiteBalance: Bool { controlState.isAdjustingWhiteBalance }

    /// The gains applied now. Observable.
    public var deviceWhiteBalanceGains: WhiteBalanceGains { WhiteBalanceGains(controlState.whiteBalanceGains) }

    /// The largest gain any channel may have.
    public var maxWhiteBalanceGain: Float { capabilities.maxWhiteBalanceGain }

    /// Whether `setWhiteBalanceModeLocked(with:completionHandler:)` accepts gains other than the current ones.
    public var isLockingWhiteBalanceWithCustomDeviceGainsSupported: Bool {
        capabilities.isCustomWhiteBalanceGainsSupported
    }

    /// Gains that would make a grey world grey: the gains auto white balance converges to for the scene now.
    public var grayWorldDeviceWhiteBalanceGains: WhiteBalanceGains { deviceWhiteBalanceGains }

    /// Locks white balance with `whiteBalanceGains` (each 1...`maxWhiteBalanceGain`, or
    /// `currentWhiteBalanceGains`). The handler runs once with the first frame's presentation time. Needs the
    /// lock, `.locked` support, and for custom gains `isLockingWhiteBalanceWithCustomDeviceGainsSupported`.
    public func setWhiteBalanceModeLocked(
        with whiteBalanceGains: WhiteBalanceGains, completionHandler handler: ((CMTime) -> Void)? = nil
    ) {
        requireLock("white balance (setWhiteBalanceModeLocked)")
        precondition(
            isWhiteBalanceModeSupported(.locked),
            "AVCaptureDevice: \(localizedName) cannot lock white balance (Apple raises NSInvalidArgumentException)")
        if whiteBalanceGains == Self.currentWhiteBalanceGains {
            apply(.lockWhiteBalance(nil), completion: handler)
            return
        }
        precondition(
            isLockingWhiteBalanceWithCustomDeviceGainsSupported,
            "AVCaptureDevice: \(localizedName) cannot take custom white balance gains; check"
                + " isLockingWhiteBalanceWithCustomDeviceGainsSupported first (Apple raises"
                + " NSInvalidArgumentException)")
        let gains = [whiteBalanceGains.redGain, whiteBalanceGains.greenGain, whiteBalanceGains.blueGain]
        precondition(
            gains.allSatisfy { (1...maxWhiteBalanceGain).contains($0) },
            "AVCaptureDevice: white balance gains \(gains) must each be in 1...\(maxWhiteBalanceGain) (Apple"
                + " raises NSRangeException)")
        apply(.lockWhiteBalance(whiteBalanceGains.colorGains), completion: handler)
    }
}
