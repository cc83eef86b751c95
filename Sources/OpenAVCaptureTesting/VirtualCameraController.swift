import CaptureDrivers
import Foundation

/// The test controls of "Virtual Back Camera", "Virtual Front Camera" or "Virtual USB Webcam": what the camera looks
/// at (light, illuminant, where the focus target stands), how its clock runs, and faults on demand. The webcam
/// (`AVCaptureDevice.default(.external, for: .video, position: .unspecified)` under `OPENAV_DEVICES=virtual`) is
/// unplugged and replugged like the others; its MJPEG and H.264 formats arrive compressed, and the session decodes
/// them before outputs see them.
///
/// Get one from the camera's `AVCaptureDevice`: `VirtualCameraController(device)` or `device.virtualCamera`, nil
/// for any other device. The camera's own controls (zoom, focus, exposure, torch…) stay where Apple put them, on
/// `AVCaptureDevice`; this is what no real camera lets software change.
///
/// ```swift
/// let camera = try #require(AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back))
/// let controller = try #require(camera.virtualCamera)
/// defer { controller.restoreDefaults() }
/// controller.sceneLightEV = -2       // two stops darker; auto exposure follows over a few frames
/// controller.unplug()                // .AVCaptureDeviceWasDisconnected, isConnected false
/// ```
///
/// The process's camera is shared by the whole process: restore what a test changes (`restoreDefaults()`), and keep
/// tests that use one camera from running in parallel, or give each test cameras of its own (`VirtualDeviceSet`). `@Suite(.serialized)` orders only the tests inside one suite, not
/// suites against each other: run such suites with `swift test --no-parallel`, or in a process of their own.
///
/// Threading: thread safe; every member may be called from any thread. Scene changes show from the next frame
/// rendered. The fault methods block until the capture thread has delivered its last event, so do not call them
/// from a sink or a completion handler of the same camera.
public final class VirtualCameraController: Sendable {
    /// The camera this controls.
    public let device: AVCaptureDevice
    let camera: VirtualCamera

    /// The controller of `device`, or nil when it is not one of the virtual cameras.
    public init?(_ device: AVCaptureDevice) {
        guard let camera = device.backend as? VirtualCamera else { return nil }
        self.device = device
        self.camera = camera
    }

    // MARK: The scene

    /// The scene's light as a linear factor: 1 (the default) is the normal scene, 0.5 one stop darker, 2 one
    /// brighter. The grey card reads linear 0.18 × light at the default exposure (1/60 s, ISO 100, no bias).
    /// Scenes at 0.25 or darker are "dark": `.auto` torch and flash fire there.
    public var sceneLight: Double {
        get { camera.scene.light }
        set {
            precondition(newValue >= 0 && newValue.isFinite, "scene light must be a finite factor ≥ 0, not \(newValue)")
            camera.scene.light = newValue
        }
    }

    /// The scene's light in exposure values relative to normal: `log2(sceneLight)`; +1 doubles the light.
    public var sceneLightEV: Double {
        get { camera.scene.lightEV }
        set { sceneLight = exp2(newValue) }
    }

    /// The colour of the light; neutral by default. Auto white balance converges on it.
    public var illuminant: VirtualIlluminant {
        get { VirtualIlluminant(camera.scene.illuminant) }
        set {
            precondition(
                [newValue.red, newValue.green, newValue.blue].allSatisfy { $0 > 0 && $0.isFinite },
                "illuminant factors must be positive and finite, not \(newValue)")
            camera.scene.illuminant = newValue.rgb
        }
    }

    /// Where the focus target stands, as the lens position (0 near ... 1 far) at which it is sharp; 0.5 by
    /// default. Continuous auto focus follows it; a lens locked elsewhere blurs the target in proportion to the
    /// distance.
    public var focusTargetLensPosition: Float {
        get { Float(camera.scene.focusTargetLensPosition) }
        set {
            precondition((0...1).contains(newValue), "a lens position is in 0...1, not \(newValue)")
            camera.scene.focusTargetLensPosition = Double(newValue)
        }
    }

    /// Puts the default scene back: light 1, neutral illuminant, focus target at 0.5.
    public func resetScene() {
        camera.scene = VirtualScene()
    }

    // MARK: The clock

    /// How the camera paces frames; `.realTime` by default. Takes effect at the next start of streaming.
    public var clockMode: VirtualDeviceClockMode {
        get { VirtualDeviceClockMode(camera.clockMode) }
        set { camera.clockMode = newValue.driverMode }
    }

    /// Whether the camera is streaming (to a session or a `CaptureDeviceTap`).
    public var isStreaming: Bool { camera.isStreaming }

    // MARK: Faults

    /// The camera goes away, as if unplugged: a stream stops with a disconnection (the tap reports
    /// `AVError.deviceWasDisconnected`), `isConnected` turns false (key-value observable),
    /// `.AVCaptureDeviceWasDisconnected` is posted with the device as its object, discovery no longer lists it,
    /// and `lockForConfiguration()` throws `AVError.deviceNotConnected`. Does nothing when already unplugged.
    /// Blocks until a running stream has stopped; the notification is posted on the calling thread.
    public func unplug() {
        camera.simulateUnplug()
    }

    /// The camera comes back: `isConnected` turns true and `.AVCaptureDeviceWasConnected` is posted (on the calling
    /// thread). Does nothing when it is connected.
    public func replug() {
        camera.simulateReplug()
    }

    /// Another process takes (`true`) or releases (`false`) the camera. While taken,
    /// `isInUseByAnotherApplication` is true, starting a stream fails with
    /// `AVError.deviceInUseByAnotherApplication`, and a running stream stops with that error. Blocks until a
    /// running stream has stopped.
    public func setBusy(_ busy: Bool) {
        camera.simulateBusy(busy)
    }

    /// Whether `setBusy(true)` holds the camera.
    public var isBusy: Bool { camera.isInUseByAnotherApplication }

    /// The running stream delivers nothing for `seconds`, then reports every frame that fell due meanwhile as
    /// dropped with reason `.discontinuity` and goes on, sequence numbers continuing. Returns at once; does nothing
    /// when the camera is not streaming.
    public func stall(for seconds: Double) {
        precondition(seconds >= 0 && seconds.isFinite, "a stall lasts a finite time ≥ 0, not \(seconds) s")
        camera.simulateStall(for: seconds)
    }

    // MARK: Restoring

    /// Puts everything a test may have changed back as the process started it: connected, not busy, real-time
    /// clock, the default scene, and the camera's controls through `AVCaptureDevice` (zoom 1 with no ramp,
    /// continuous auto focus, exposure and white balance from 1/60 s, ISO 100, lens 0.5 and unity gains, no bias,
    /// points of interest at the centre, smooth focus off, no range restriction, torch and flash off). The active
    /// format and frame durations are left alone: restore those where you changed them.
    ///
    /// Call it when the camera is not streaming, so no 3A step interleaves with the reset.
    public func restoreDefaults() {
        replug()
        setBusy(false)
        clockMode = .realTime
        resetScene()
        restoreDefaultControls(of: device)
    }
}

/// Resets a camera's controls through the public API (see `VirtualCameraController.restoreDefaults()`).
func restoreDefaultControls(of device: AVCaptureDevice) {
    guard (try? device.lockForConfiguration()) != nil else { return }
    defer { device.unlockForConfiguration() }
    if device.isRampingVideoZoom { device.cancelVideoZoomRamp() }
    device.videoZoomFactor = 1
    if device.isSmoothAutoFocusSupported { device.isSmoothAutoFocusEnabled = false }
    if device.isAutoFocusRangeRestrictionSupported { device.autoFocusRangeRestriction = .none }
    let center = CGPoint(x: 0.5, y: 0.5)
    if device.isFocusPointOfInterestSupported { device.focusPointOfInterest = center }
    if device.isLockingFocusWithCustomLensPositionSupported { device.setFocusModeLocked(lensPosition: 0.5) }
    if device.isFocusModeSupported(.continuousAutoFocus) { device.focusMode = .continuousAutoFocus }
    if device.isExposurePointOfInterestSupported { device.exposurePointOfInterest = center }
    if device.minExposureTargetBias <= 0 && device.maxExposureTargetBias >= 0 { device.setExposureTargetBias(0) }
    if device.isExposureModeSupported(.custom) {
        device.setExposureModeCustom(duration: CMTime(value: 1, timescale: 60), iso: 100)
    }
    if device.isExposureModeSupported(.continuousAutoExposure) { device.exposureMode = .continuousAutoExposure }
    if device.isLockingWhiteBalanceWithCustomDeviceGainsSupported {
        device.setWhiteBalanceModeLocked(with: AVCaptureDevice.WhiteBalanceGains(redGain: 1, greenGain: 1, blueGain: 1))
    }
    if device.isWhiteBalanceModeSupported(.continuousAutoWhiteBalance) {
        device.whiteBalanceMode = .continuousAutoWhiteBalance
    }
    if device.isTorchModeSupported(.off) && device.hasTorch { device.torchMode = .off }
    if device.isFlashModeSupported(.off) && device.hasFlash { device.flashMode = .off }
}

extension AVCaptureDevice {
    /// The test controls of this device when it is one of the virtual cameras; nil otherwise. A new controller on
    /// each access, all driving the same camera.
    public var virtualCamera: VirtualCameraController? { VirtualCameraController(self) }

    /// The test controls of this device when it is the virtual microphone; nil otherwise.
    public var virtualMicrophone: VirtualMicrophoneController? { VirtualMicrophoneController(self) }
}
