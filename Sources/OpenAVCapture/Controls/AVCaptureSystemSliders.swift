import Foundation
import Synchronization

/// The system's zoom slider for a camera: a person's change sets the device's `videoZoomFactor` (within
/// `minAvailableVideoZoomFactor...maxAvailableVideoZoomFactor`) under the device's configuration lock, as Apple's does
/// for the app, then calls the action with the factor. The session accepts it only with the device as an input.
///
/// Apple calls the action on the main queue; here it runs on the thread that delivered the person's change (a
/// renderer's), since a Linux program need not run a main queue.
///
/// Threading: thread safe.
open class AVCaptureSystemZoomSlider: AVCaptureControl, @unchecked Sendable {
    private let device: AVCaptureDevice
    private let action: ((CGFloat) -> Void)?

    /// A zoom slider for `device`.
    public convenience init(device: AVCaptureDevice) {
        self.init(device: device, action: nil)
    }

    /// A zoom slider for `device` that also calls `action` with each factor a person sets.
    public init(device: AVCaptureDevice, action: ((CGFloat) -> Void)?) {
        self.device = device
        self.action = action
        super.init()
    }

    override var drivenDevices: [AVCaptureDevice] { [device] }

    /// Ours: the factor the slider shows, the device's.
    public var value: CGFloat { device.videoZoomFactor }

    /// Ours: the factors a renderer lets a person choose.
    public var valueBounds: ClosedRange<CGFloat> { device.minAvailableVideoZoomFactor...device.maxAvailableVideoZoomFactor }

    /// Ours: a person set the zoom to `factor` (what a renderer calls). Ignored when disabled or in no session, or
    /// when the device cannot be locked (another process configures it).
    public func userDidSetValue(_ factor: CGFloat) {
        guard acceptsUserChanges, !factor.isNaN else { return }
        let bounds = valueBounds
        let clamped = min(max(factor, bounds.lowerBound), bounds.upperBound)
        guard (try? device.lockForConfiguration()) != nil else { return }
        device.videoZoomFactor = clamped
        device.unlockForConfiguration()
        action?(clamped)
    }

    /// Titled "Zoom", the factor shown as "2.5x" (as Apple's zoom control shows it).
    override func makeAppearance() -> CaptureControlAppearance? {
        let bounds = valueBounds
        let factor = Double(value)
        return CaptureControlAppearance(
            kind: .slider, title: "Zoom", minimum: Double(bounds.lowerBound), maximum: Double(bounds.upperBound),
            step: nil, value: factor, valueText: String(format: "%.1fx", factor), isEnabled: acceptsUserChanges)
    }

    override func applyAppearanceValue(_ value: Double) { userDidSetValue(CGFloat(value)) }
}

/// The system's exposure bias slider for a camera: a person's change sets the device's exposure target bias
/// (within `minExposureTargetBias...maxExposureTargetBias`) under its configuration lock, then calls the action. The
/// session accepts it only with the device as an input. The action runs on the thread that delivered the change
/// (Apple: the main queue).
///
/// Threading: thread safe.
open class AVCaptureSystemExposureBiasSlider: AVCaptureControl, @unchecked Sendable {
    private let device: AVCaptureDevice
    private let action: ((Float) -> Void)?

    /// An exposure bias slider for `device`.
    public convenience init(device: AVCaptureDevice) {
        self.init(device: device, action: nil)
    }

    /// An exposure bias slider for `device` that also calls `action` with each bias a person sets.
    public init(device: AVCaptureDevice, action: ((Float) -> Void)?) {
        self.device = device
        self.action = action
        super.init()
    }

    override var drivenDevices: [AVCaptureDevice] { [device] }

    /// Ours: the bias the slider shows, the device's.
    public var value: Float { device.exposureTargetBias }

    /// Ours: the biases a renderer lets a person choose.
    public var valueBounds: ClosedRange<Float> { device.minExposureTargetBias...device.maxExposureTargetBias }

    /// Ours: a person set the bias to `bias` EV (what a renderer calls). Ignored when disabled, in no session, or
    /// when the device cannot be locked.
    public func userDidSetValue(_ bias: Float) {
        guard acceptsUserChanges, !bias.isNaN else { return }
        let bounds = valueBounds
        let clamped = min(max(bias, bounds.lowerBound), bounds.upperBound)
        guard (try? device.lockForConfiguration()) != nil else { return }
        device.setExposureTargetBias(clamped, completionHandler: nil)
        device.unlockForConfiguration()
        action?(clamped)
    }

    /// Titled "Exposure", the bias shown as "+0.7 EV".
    override func makeAppearance() -> CaptureControlAppearance? {
        let bounds = valueBounds
        let bias = Double(value)
        return CaptureControlAppearance(
            kind: .slider, title: "Exposure", minimum: Double(bounds.lowerBound), maximum: Double(bounds.upperBound),
            step: nil, value: bias, valueText: String(format: "%+.1f EV", bias), isEnabled: acceptsUserChanges)
    }

    override func applyAppearanceValue(_ value: Double) { userDidSetValue(Float(value)) }
}
