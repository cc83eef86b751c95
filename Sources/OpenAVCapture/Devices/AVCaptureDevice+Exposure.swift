import CaptureDrivers
import Foundation

extension AVCaptureDevice {
    /// Pass to `setExposureModeCustom(duration:iso:completionHandler:)` to keep the current duration.
    public static let currentExposureDuration: CMTime = .indefinite
    /// Pass to `setExposureModeCustom(duration:iso:completionHandler:)` to keep the current ISO.
    public static let currentISO: Float = 0
    /// Pass to `setExposureTargetBias(_:completionHandler:)` to keep the current bias.
    public static let currentExposureTargetBias: Float = .greatestFiniteMagnitude

    /// Whether the device supports an exposure mode.
    public func isExposureModeSupported(_ exposureMode: ExposureMode) -> Bool {
        capabilities.exposureModes.contains { $0.rawValue == exposureMode.rawValue }
    }

    /// The exposure mode. Setting it needs the configuration lock and a supported mode. Setting `.custom`
    /// directly keeps the current duration and ISO.
    public var exposureMode: ExposureMode {
        get { ExposureMode(rawValue: controlState.exposureMode.rawValue)! }
        set {
            requireLock("exposureMode")
            precondition(
                isExposureModeSupported(newValue),
                "AVCaptureDevice: exposureMode \(newValue) is not supported by \(localizedName); check"
                    + " isExposureModeSupported(_:) first (Apple raises NSInvalidArgumentException)")
            apply(.exposureMode(CaptureDrivers.ExposureMode(rawValue: newValue.rawValue)!))
        }
    }

    /// Whether the device meters exposure at a point of interest.
    public var isExposurePointOfInterestSupported: Bool { capabilities.isExposurePointOfInterestSupported }

    /// Where to meter: (0,0) top left to (1,1) bottom right of the unrotated picture. Takes effect when an
    /// exposure mode is next set, as Apple's. Needs the lock and `isExposurePointOfInterestSupported`.
    public var exposurePointOfInterest: CGPoint {
        get { CGPoint(x: controlState.exposurePointOfInterest.x, y: controlState.exposurePointOfInterest.y) }
        set {
            requireLock("exposurePointOfInterest")
            precondition(
                isExposurePointOfInterestSupported,
                "AVCaptureDevice: \(localizedName) has no exposure point of interest; check"
                    + " isExposurePointOfInterestSupported first (Apple raises NSInvalidArgumentException)")
            apply(.exposurePointOfInterest(NormalizedPoint(x: Double(newValue.x), y: Double(newValue.y))))
        }
    }

    /// Whether exposure is converging. Observable.
    public var isAdjustingExposure: Bool { controlState.isAdjustingExposure }

    /// How long each frame is exposed. Observable.
    public var exposureDuration: CMTime { Self.exposureTime(controlState.exposureDuration) }

    /// The sensor gain, as ISO. Observable.
    public var iso: Float { controlState.iso }

    /// The bias auto exposure aims for, in EV: +1 doubles the linear brightness. Observable.
    public var exposureTargetBias: Float { controlState.exposureTargetBias }

    /// The lowest bias the device allows.
    public var minExposureTargetBias: Float { capabilities.exposureTargetBiasRange.lowerBound }

    /// The highest bias the device allows.
    public var maxExposureTargetBias: Float { capabilities.exposureTargetBiasRange.upperBound }

    /// How far the metered exposure is from the target, in EV: 0 when converged. Observable.
    public var exposureTargetOffset: Float { controlState.exposureTargetOffset }

    /// Sets the bias auto exposure aims for. The handler runs once, with the presentation time of the first
    /// frame exposed with the new bias. Needs the configuration lock and a bias within the device's range.
    public func setExposureTargetBias(_ bias: Float, completionHandler handler: ((CMTime) -> Void)? = nil) {
        requireLock("exposureTargetBias")
        let target = bias == Self.currentExposureTargetBias ? exposureTargetBias : bias
        precondition(
            capabilities.exposureTargetBiasRange.contains(target),
            "AVCaptureDevice: exposure target bias \(bias) is outside \(minExposureTargetBias)..."
                + "\(maxExposureTargetBias) (Apple raises NSRangeException)")
        apply(.exposureTargetBias(target), completion: handler)
    }

    /// Exposes with a fixed duration and ISO (`.custom` mode). Pass `currentExposureDuration` / `currentISO` to
    /// keep either. The handler runs once, with the presentation time of the first frame exposed so. Needs the
    /// lock, `.custom` support, and values within the active format's `min/maxExposureDuration` and `min/maxISO`.
    public func setExposureModeCustom(
        duration: CMTime, iso ISO: Float, completionHandler handler: ((CMTime) -> Void)? = nil
    ) {
        requireLock("exposure (setExposureModeCustom)")
        precondition(
            isExposureModeSupported(.custom),
            "AVCaptureDevice: \(localizedName) has no custom exposure; check isExposureModeSupported(.custom) first"
                + " (Apple raises NSInvalidArgumentException)")
        var seconds: Double?
        if duration != Self.currentExposureDuration {
            let range = capabilities.exposureDurationRange ?? 0...0
            precondition(
                duration.isNumeric && range.contains(duration.seconds),
                "AVCaptureDevice: exposure duration \(duration.seconds) s is outside \(range.lowerBound)..."
                    + "\(range.upperBound) s (Apple raises NSRangeException)")
            seconds = duration.seconds
        }
        var gain: Float?
        if ISO != Self.currentISO {
            precondition(
                capabilities.isoRange.contains(ISO),
                "AVCaptureDevice: ISO \(ISO) is outside \(activeFormat.minISO)...\(activeFormat.maxISO) (Apple raises"
                    + " NSRangeException)")
            gain = ISO
        }
        apply(.customExposure(duration: seconds, iso: gain), completion: handler)
    }
}
