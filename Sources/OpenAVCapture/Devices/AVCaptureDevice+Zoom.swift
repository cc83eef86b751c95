import CaptureDrivers
import Foundation

extension AVCaptureDevice {
    /// The zoom factor: 1 shows the whole field of view, 2 the centre half (the centre object twice as big).
    /// Setting it needs the configuration lock and a factor in 1...`activeFormat.videoMaxZoomFactor`; it cancels
    /// a ramp in progress. Observable.
    public var videoZoomFactor: CGFloat {
        get { CGFloat(controlState.videoZoomFactor) }
        set {
            requireLock("videoZoomFactor")
            checkZoomFactor(newValue, "videoZoomFactor")
            apply(.zoomFactor(Double(newValue)))
        }
    }

    /// The smallest zoom factor: 1.
    public var minAvailableVideoZoomFactor: CGFloat { 1 }
    /// The largest zoom factor the active format allows.
    public var maxAvailableVideoZoomFactor: CGFloat { activeFormat.videoMaxZoomFactor }

    /// Whether a zoom ramp is in progress. Observable.
    public var isRampingVideoZoom: Bool { controlState.isRampingVideoZoom }

    /// Zooms smoothly to `factor` at `rate` powers of two per second (Apple's meaning: rate 1 doubles the factor
    /// each second), frame by frame. Needs the configuration lock and a factor in range (AVCaptureDevice.h:
    /// "must be in the valid range for videoZoomFactor"). As Apple's, only the rate's magnitude counts (the sign
    /// follows the direction to the target) and a rate of 0 is `cancelVideoZoomRamp()`; a rate that is not a
    /// number also cancels, logged once.
    public func ramp(toVideoZoomFactor factor: CGFloat, withRate rate: Float) {
        requireLock("videoZoomFactor (ramp)")
        checkZoomFactor(factor, "ramp(toVideoZoomFactor:)")
        let speed = abs(rate)
        guard speed > 0, speed.isFinite else {
            if !speed.isFinite {
                ToleratedMisuse.report(
                    "AVCaptureDevice.rampZoomRate", "AVCaptureDevice: zoom ramp rate \(rate) is not finite; the ramp stops")
            }
            apply(.cancelZoomRamp)
            return
        }
        apply(.rampZoom(to: Double(factor), rate: Double(speed)))
    }

    /// Stops a zoom ramp where it is. Needs the configuration lock.
    public func cancelVideoZoomRamp() {
        requireLock("videoZoomFactor (cancelVideoZoomRamp)")
        apply(.cancelZoomRamp)
    }

    private func checkZoomFactor(_ factor: CGFloat, _ name: String) {
        precondition(
            factor >= 1 && factor <= maxAvailableVideoZoomFactor,
            "AVCaptureDevice: \(name) \(factor) is outside 1...\(maxAvailableVideoZoomFactor)"
                + " (activeFormat.videoMaxZoomFactor; Apple raises NSRangeException)")
    }
}
