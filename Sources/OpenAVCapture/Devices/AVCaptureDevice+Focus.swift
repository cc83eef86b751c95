import CaptureDrivers
import Foundation

extension AVCaptureDevice {
    /// Pass to `setFocusModeLocked(lensPosition:completionHandler:)` to lock the lens where it is.
    public static let currentLensPosition: Float = .greatestFiniteMagnitude

    /// Whether the device supports a focus mode.
    public func isFocusModeSupported(_ focusMode: FocusMode) -> Bool {
        capabilities.focusModes.contains { $0.rawValue == focusMode.rawValue }
    }

    /// The focus mode. Setting it needs the configuration lock and a supported mode.
    public var focusMode: FocusMode {
        get { FocusMode(rawValue: controlState.focusMode.rawValue)! }
        set {
            requireLock("focusMode")
            precondition(
                isFocusModeSupported(newValue),
                "AVCaptureDevice: focusMode \(newValue) is not supported by \(localizedName); check"
                    + " isFocusModeSupported(_:) first (Apple raises NSInvalidArgumentException)")
            apply(.focusMode(CaptureDrivers.FocusMode(rawValue: newValue.rawValue)!))
        }
    }

    /// Whether the device focuses on a point of interest.
    public var isFocusPointOfInterestSupported: Bool { capabilities.isFocusPointOfInterestSupported }

    /// Where to focus: (0,0) top left to (1,1) bottom right of the unrotated picture. Takes effect when a focus
    /// mode is next set, as Apple's. Setting it needs the lock and `isFocusPointOfInterestSupported`.
    public var focusPointOfInterest: CGPoint {
        get { CGPoint(x: controlState.focusPointOfInterest.x, y: controlState.focusPointOfInterest.y) }
        set {
            requireLock("focusPointOfInterest")
            precondition(
                isFocusPointOfInterestSupported,
                "AVCaptureDevice: \(localizedName) has no focus point of interest; check"
                    + " isFocusPointOfInterestSupported first (Apple raises NSInvalidArgumentException)")
            apply(.focusPointOfInterest(NormalizedPoint(x: Double(newValue.x), y: Double(newValue.y))))
        }
    }

    /// Whether the lens is moving to focus. Observable.
    public var isAdjustingFocus: Bool { controlState.isAdjustingFocus }

    /// Where the lens is: 0 (nearest focus) to 1 (farthest). Observable.
    public var lensPosition: Float { controlState.lensPosition }

    /// Whether `setFocusModeLocked(lensPosition:completionHandler:)` can place the lens.
    public var isLockingFocusWithCustomLensPositionSupported: Bool { capabilities.isLensPositionSupported }

    /// Locks focus with the lens at `lensPosition` (0...1, or `currentLensPosition`). The handler runs once, with
    /// the presentation time of the first frame taken at that position, on the device's capture thread.
    /// Needs the configuration lock and lens position support.
    public func setFocusModeLocked(lensPosition: Float, completionHandler handler: ((CMTime) -> Void)? = nil) {
        requireLock("focus (setFocusModeLocked)")
        precondition(
            isLockingFocusWithCustomLensPositionSupported,
            "AVCaptureDevice: \(localizedName) cannot place its lens; check"
                + " isLockingFocusWithCustomLensPositionSupported first (Apple raises NSInvalidArgumentException)")
        let position = lensPosition == Self.currentLensPosition ? self.lensPosition : lensPosition
        precondition(
            (0...1).contains(position),
            "AVCaptureDevice: lensPosition \(lensPosition) is outside 0...1 (Apple raises NSRangeException)")
        apply(.lockFocus(lensPosition: position), completion: handler)
    }

    /// Whether smooth (slower, quieter) auto focus is available.
    public var isSmoothAutoFocusSupported: Bool { capabilities.isSmoothAutoFocusSupported }

    /// Whether auto focus moves smoothly. Setting it needs the lock and `isSmoothAutoFocusSupported`.
    public var isSmoothAutoFocusEnabled: Bool {
        get { controlState.isSmoothAutoFocusEnabled }
        set {
            requireLock("isSmoothAutoFocusEnabled")
            precondition(
                isSmoothAutoFocusSupported,
                "AVCaptureDevice: \(localizedName) has no smooth auto focus; check isSmoothAutoFocusSupported"
                    + " first (Apple raises NSInvalidArgumentException)")
            apply(.smoothAutoFocus(newValue))
        }
    }

    /// Whether auto focus can be restricted to near or far.
    public var isAutoFocusRangeRestrictionSupported: Bool { capabilities.isFocusRangeRestrictionSupported }

    /// Where auto focus looks. Setting it needs the lock and `isAutoFocusRangeRestrictionSupported`.
    public var autoFocusRangeRestriction: AutoFocusRangeRestriction {
        get { AutoFocusRangeRestriction(rawValue: controlState.focusRangeRestriction.rawValue)! }
        set {
            requireLock("autoFocusRangeRestriction")
            precondition(
                isAutoFocusRangeRestrictionSupported,
                "AVCaptureDevice: \(localizedName) cannot restrict its focus range; check"
                    + " isAutoFocusRangeRestrictionSupported first (Apple raises NSInvalidArgumentException)")
            apply(.focusRangeRestriction(FocusRangeRestriction(rawValue: newValue.rawValue)!))
        }
    }
}
