import Foundation
import OpenCoreMedia

/// Focus modes, with Apple's raw values (`AVCaptureDevice.FocusMode`).
package enum FocusMode: Int, Sendable, Hashable, CaseIterable {
    case locked = 0
    case autoFocus = 1
    case continuousAutoFocus = 2
}

/// Exposure modes, with Apple's raw values (`AVCaptureDevice.ExposureMode`).
package enum ExposureMode: Int, Sendable, Hashable, CaseIterable {
    case locked = 0
    case autoExpose = 1
    case continuousAutoExposure = 2
    case custom = 3
}

/// White balance modes, with Apple's raw values (`AVCaptureDevice.WhiteBalanceMode`).
package enum WhiteBalanceMode: Int, Sendable, Hashable, CaseIterable {
    case locked = 0
    case autoWhiteBalance = 1
    case continuousAutoWhiteBalance = 2
}

/// Flash and torch modes, with Apple's raw values (`AVCaptureDevice.FlashMode`, `.TorchMode`).
package enum LightMode: Int, Sendable, Hashable, CaseIterable {
    case off = 0
    case on = 1
    case auto = 2
}

/// Auto-focus range restrictions, with Apple's raw values.
package enum FocusRangeRestriction: Int, Sendable, Hashable, CaseIterable {
    case none = 0
    case near = 1
    case far = 2
}

/// A point in the picture, (0,0) top left and (1,1) bottom right of the unrotated sensor image, as Apple's
/// points of interest.
package struct NormalizedPoint: Sendable, Hashable {
    package var x: Double
    package var y: Double
    package init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
    package static let center = NormalizedPoint(x: 0.5, y: 0.5)
}

/// Per-channel white balance gains, each ≥ 1 (`AVCaptureDevice.WhiteBalanceGains`).
package struct ColorGains: Sendable, Hashable {
    package var red: Float
    package var green: Float
    package var blue: Float
    package init(red: Float, green: Float, blue: Float) {
        self.red = red
        self.green = green
        self.blue = blue
    }
    package static let unity = ColorGains(red: 1, green: 1, blue: 1)
}

/// A zoom ramp in progress: the factor grows or shrinks by `rate` powers of two per second (Apple's meaning of
/// `ramp(toVideoZoomFactor:withRate:)`) from `startFactor` at `startTime` until it reaches `targetFactor`.
///
/// Value type; safe to use from any thread.
package struct ZoomRamp: Sendable, Hashable {
    package var startTime: CMTime
    package var startFactor: Double
    package var targetFactor: Double
    /// Powers of two per second; positive.
    package var rate: Double

    package init(startTime: CMTime, startFactor: Double, targetFactor: Double, rate: Double) {
        self.startTime = startTime
        self.startFactor = startFactor
        self.targetFactor = targetFactor
        self.rate = rate
    }

    /// The zoom factor at `time`, and whether the ramp has arrived.
    package func factor(at time: CMTime) -> (factor: Double, arrived: Bool) {
        let elapsed = max(0, (time - startTime).seconds)
        let direction: Double = targetFactor >= startFactor ? 1 : -1
        let factor = startFactor * Double.pow2(direction * rate * elapsed)
        let arrived = direction > 0 ? factor >= targetFactor : factor <= targetFactor
        return arrived ? (targetFactor, true) : (factor, false)
    }
}

extension Double {
    fileprivate static func pow2(_ exponent: Double) -> Double { exp2(exponent) }
}

/// What a camera's controls can do. Anything a camera lacks is absent here, so the public `is…Supported`
/// queries answer false and setters trap, as Apple's.
///
/// Value type; safe to use from any thread.
package struct CameraCapabilities: Sendable, Hashable {
    package var focusModes: Set<FocusMode> = []
    package var isFocusPointOfInterestSupported = false
    package var isLensPositionSupported = false
    package var isSmoothAutoFocusSupported = false
    package var isFocusRangeRestrictionSupported = false
    package var exposureModes: Set<ExposureMode> = []
    package var isExposurePointOfInterestSupported = false
    /// Shortest and longest exposure durations; nil when the duration cannot be set.
    package var exposureDurationRange: ClosedRange<Double>?
    package var isoRange: ClosedRange<Float> = 100...100
    package var exposureTargetBiasRange: ClosedRange<Float> = 0...0
    package var whiteBalanceModes: Set<WhiteBalanceMode> = []
    package var isCustomWhiteBalanceGainsSupported = false
    package var maxWhiteBalanceGain: Float = 1
    package var flashModes: Set<LightMode> = [.off]
    package var torchModes: Set<LightMode> = [.off]
    package var hasFlash: Bool { flashModes.contains(.on) }
    package var hasTorch: Bool { torchModes.contains(.on) }

    package init() {}
}

/// The state of a camera's controls at one moment: what `AVCaptureDevice`'s control properties read.
///
/// Value type; safe to use from any thread.
package struct CameraControlState: Sendable, Hashable {
    package var focusMode: FocusMode = .locked
    package var focusPointOfInterest: NormalizedPoint = .center
    /// 0 (nearest) ... 1 (farthest), Apple's scale.
    package var lensPosition: Float = 1
    package var isAdjustingFocus = false
    package var isSmoothAutoFocusEnabled = false
    package var focusRangeRestriction: FocusRangeRestriction = .none
    package var exposureMode: ExposureMode = .locked
    package var exposurePointOfInterest: NormalizedPoint = .center
    /// Seconds.
    package var exposureDuration: Double = 1.0 / 60
    package var iso: Float = 100
    /// EV.
    package var exposureTargetBias: Float = 0
    /// EV between the metered exposure and the target; 0 when converged.
    package var exposureTargetOffset: Float = 0
    package var isAdjustingExposure = false
    package var whiteBalanceMode: WhiteBalanceMode = .locked
    package var whiteBalanceGains: ColorGains = .unity
    package var isAdjustingWhiteBalance = false
    package var videoZoomFactor: Double = 1
    package var zoomRamp: ZoomRamp?
    package var flashMode: LightMode = .off
    package var torchMode: LightMode = .off
    /// 0 ... 1.
    package var torchLevel: Float = 0
    /// True only while the torch is lit: on, and the device streaming.
    package var isTorchActive = false
    /// Whether the scene is dark enough that `.auto` flash fires for a still (Apple's `isFlashScene`); false for
    /// a camera without a flash.
    package var isFlashScene = false

    package init() {}

    package var isRampingVideoZoom: Bool { zoomRamp != nil }
}

/// A change asked of a camera's controls; the public setters become these after their checks pass.
package enum ControlRequest: Sendable, Hashable {
    case focusMode(FocusMode)
    case focusPointOfInterest(NormalizedPoint)
    /// `setFocusModeLocked(lensPosition:)`: lock focus at a lens position.
    case lockFocus(lensPosition: Float)
    case smoothAutoFocus(Bool)
    case focusRangeRestriction(FocusRangeRestriction)
    case exposureMode(ExposureMode)
    case exposurePointOfInterest(NormalizedPoint)
    /// `setExposureModeCustom(duration:iso:)`: nil keeps the current value (Apple's `currentDuration`/`currentISO`).
    case customExposure(duration: Double?, iso: Float?)
    case exposureTargetBias(Float)
    case whiteBalanceMode(WhiteBalanceMode)
    /// `setWhiteBalanceModeLocked(with:)`: nil keeps the current gains.
    case lockWhiteBalance(ColorGains?)
    case zoomFactor(Double)
    case rampZoom(to: Double, rate: Double)
    case cancelZoomRamp
    case flashMode(LightMode)
    case torch(LightMode, level: Float)
    /// Fire the flash for the next frame the camera delivers (a still); the completion gets that frame's time, or
    /// `.invalid` when the camera is not streaming. Only for a camera whose capabilities include a flash.
    case fireFlash
}

/// A camera's controls: capabilities, current state, and the way to change it.
///
/// Threading: thread safe. State observers run on the thread that changed the state (a caller's, or the
/// capture thread as auto-exposure converges) and must not block.
package protocol CameraControlling: AnyObject, Sendable {
    var capabilities: CameraCapabilities { get }
    /// The state now.
    var state: CameraControlState { get }
    /// Applies a request the caller has already checked against `capabilities`. `completion`, when given, runs
    /// once with the presentation time of the first frame that shows the change (Apple's sync time), or with
    /// `.invalid` when the device is not streaming.
    func apply(_ request: ControlRequest, completion: (@Sendable (CMTime) -> Void)?)
    /// Adds an observer of every state change, called with the old and new state. Returns a token for removal.
    func addStateObserver(_ observer: @escaping @Sendable (CameraControlState, CameraControlState) -> Void) -> Int
    func removeStateObserver(_ token: Int)
}
