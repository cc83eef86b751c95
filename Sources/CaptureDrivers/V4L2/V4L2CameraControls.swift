import CLinuxMedia
import Foundation
import OpenCoreMedia
import SystemPackage

/// The V4L2 controls that mean something to `AVCaptureDevice`, found among a node's controls by their ids.
///
/// Value type; safe to use from any thread.
package struct V4L2ControlSet: Sendable, Hashable {
    package var focusAutomatic: V4L2ControlInfo?
    package var focusAbsolute: V4L2ControlInfo?
    package var exposureAutomatic: V4L2ControlInfo?
    /// The menu values of `exposureAutomatic` the driver offers.
    package var exposureAutomaticModes: Set<Int64> = []
    package var exposureAbsolute: V4L2ControlInfo?
    package var gain: V4L2ControlInfo?
    package var gainAutomatic: V4L2ControlInfo?
    package var whiteBalanceAutomatic: V4L2ControlInfo?
    package var whiteBalanceTemperature: V4L2ControlInfo?
    package var zoomAbsolute: V4L2ControlInfo?
    package var flashLEDMode: V4L2ControlInfo?
    package var flashLEDModes: Set<Int64> = []
    package var torchIntensity: V4L2ControlInfo?
    package var flashStrobe: V4L2ControlInfo?
    package var powerLineFrequency: V4L2ControlInfo?
    package var powerLineFrequencyModes: Set<Int64> = []

    package init() {}

    /// Picks the controls we map out of every control a node has; `menuItems` lists a menu control's values.
    package init(controls: [V4L2ControlInfo], menuItems: (V4L2ControlInfo) -> Set<Int64>) {
        func find(_ id: Int32) -> V4L2ControlInfo? {
            controls.first { $0.id == UInt32(bitPattern: id) && $0.isWritable }
        }
        focusAutomatic = find(V4L2_CID_FOCUS_AUTO)
        focusAbsolute = find(V4L2_CID_FOCUS_ABSOLUTE)
        exposureAutomatic = find(V4L2_CID_EXPOSURE_AUTO)
        exposureAutomaticModes = exposureAutomatic.map(menuItems) ?? []
        exposureAbsolute = find(V4L2_CID_EXPOSURE_ABSOLUTE)
        gain = find(V4L2_CID_GAIN)
        gainAutomatic = find(V4L2_CID_AUTOGAIN)
        whiteBalanceAutomatic = find(V4L2_CID_AUTO_WHITE_BALANCE)
        whiteBalanceTemperature = find(V4L2_CID_WHITE_BALANCE_TEMPERATURE)
        zoomAbsolute = find(V4L2_CID_ZOOM_ABSOLUTE)
        flashLEDMode = find(V4L2_CID_FLASH_LED_MODE)
        flashLEDModes = flashLEDMode.map(menuItems) ?? []
        torchIntensity = find(V4L2_CID_FLASH_TORCH_INTENSITY)
        flashStrobe = find(V4L2_CID_FLASH_STROBE)
        powerLineFrequency = find(V4L2_CID_POWER_LINE_FREQUENCY)
        powerLineFrequencyModes = powerLineFrequency.map(menuItems) ?? []
    }

    /// The `V4L2_CID_EXPOSURE_AUTO` value for continuous auto exposure: aperture priority (auto time, as UVC cameras
    /// prefer), else fully automatic.
    var continuousExposureValue: Int64? {
        if exposureAutomaticModes.contains(Int64(V4L2_EXPOSURE_APERTURE_PRIORITY.rawValue)) {
            return Int64(V4L2_EXPOSURE_APERTURE_PRIORITY.rawValue)
        }
        if exposureAutomaticModes.contains(Int64(V4L2_EXPOSURE_AUTO.rawValue)) {
            return Int64(V4L2_EXPOSURE_AUTO.rawValue)
        }
        return nil
    }

    var hasManualExposure: Bool {
        exposureAutomaticModes.contains(Int64(V4L2_EXPOSURE_MANUAL.rawValue)) || gainAutomatic != nil
            || (exposureAutomatic == nil && (exposureAbsolute != nil || gain != nil))
    }

    var hasTorch: Bool { flashLEDModes.contains(Int64(V4L2_FLASH_LED_MODE_TORCH.rawValue)) }
    var hasFlash: Bool { flashLEDModes.contains(Int64(V4L2_FLASH_LED_MODE_FLASH.rawValue)) && flashStrobe != nil }

    /// What the controls let `AVCaptureDevice` do.
    package var capabilities: CameraCapabilities {
        var capabilities = CameraCapabilities()
        if focusAutomatic != nil || focusAbsolute != nil { capabilities.focusModes.insert(.locked) }
        if focusAutomatic != nil { capabilities.focusModes.insert(.continuousAutoFocus) }
        capabilities.isLensPositionSupported = focusAbsolute != nil
        if continuousExposureValue != nil || gainAutomatic != nil {
            capabilities.exposureModes.insert(.continuousAutoExposure)
        }
        if hasManualExposure && (exposureAbsolute != nil || gain != nil) {
            capabilities.exposureModes.formUnion([.locked, .custom])
        }
        if let exposureAbsolute {
            capabilities.exposureDurationRange =
                Self.seconds(fromExposure: exposureAbsolute.minimum)...Self.seconds(fromExposure: exposureAbsolute.maximum)
        }
        if gain != nil { capabilities.isoRange = Self.isoRange }
        if whiteBalanceAutomatic != nil { capabilities.whiteBalanceModes.insert(.continuousAutoWhiteBalance) }
        if whiteBalanceAutomatic != nil || whiteBalanceTemperature != nil { capabilities.whiteBalanceModes.insert(.locked) }
        if whiteBalanceTemperature != nil {
            capabilities.isCustomWhiteBalanceGainsSupported = true
            capabilities.maxWhiteBalanceGain = 4
        }
        if hasTorch { capabilities.torchModes = [.off, .on] }
        if hasFlash { capabilities.flashModes = [.off, .on] }
        return capabilities
    }

    // MARK: Scales (ours where V4L2 has no unit: documented in docs/devices.md)

    /// `V4L2_CID_EXPOSURE_ABSOLUTE` counts 100 µs.
    static func seconds(fromExposure value: Int64) -> Double { Double(value) / 10_000 }
    static func exposure(fromSeconds seconds: Double) -> Int64 { Int64((seconds * 10_000).rounded()) }

    /// Gain has no unit; it maps linearly onto ISO 100...1600.
    static let isoRange: ClosedRange<Float> = 100...1600

    static func iso(fromGain value: Int64, _ control: V4L2ControlInfo) -> Float {
        let span = max(1, control.maximum - control.minimum)
        return isoRange.lowerBound + Float(value - control.minimum) / Float(span)
            * (isoRange.upperBound - isoRange.lowerBound)
    }

    static func gain(fromISO iso: Float, _ control: V4L2ControlInfo) -> Int64 {
        let fraction = Double((iso - isoRange.lowerBound) / (isoRange.upperBound - isoRange.lowerBound))
        return control.minimum + Int64((min(1, max(0, fraction)) * Double(control.maximum - control.minimum)).rounded())
    }

    /// `V4L2_CID_FOCUS_ABSOLUTE` grows towards the camera; Apple's lens position grows away from it (0 nearest).
    static func lensPosition(fromFocus value: Int64, _ control: V4L2ControlInfo) -> Float {
        let span = max(1, control.maximum - control.minimum)
        return 1 - Float(value - control.minimum) / Float(span)
    }

    static func focus(fromLensPosition position: Float, _ control: V4L2ControlInfo) -> Int64 {
        control.minimum + Int64((Double(1 - position) * Double(control.maximum - control.minimum)).rounded())
    }

    /// Zoom: `value / minimum` when the minimum is positive (UVC's 100 = 1x), else a linear 1x...4x.
    static func zoomFactor(fromZoom value: Int64, _ control: V4L2ControlInfo) -> Double {
        if control.minimum > 0 { return Double(value) / Double(control.minimum) }
        return 1 + 3 * Double(value - control.minimum) / Double(max(1, control.maximum - control.minimum))
    }

    static func zoom(fromFactor factor: Double, _ control: V4L2ControlInfo) -> Int64 {
        let value =
            control.minimum > 0
            ? factor * Double(control.minimum)
            : Double(control.minimum) + (factor - 1) / 3 * Double(control.maximum - control.minimum)
        return min(control.maximum, max(control.minimum, Int64(value.rounded())))
    }

    /// The largest zoom factor, 1 without a zoom control.
    package var maxZoomFactor: Double {
        zoomAbsolute.map { Self.zoomFactor(fromZoom: $0.maximum, $0) } ?? 1
    }

    /// White balance gains of a colour temperature (K), relative to daylight (6500 K: all 1), the smallest 1:
    /// red/blue = (T / 6500)^1.2.
    package static func gains(fromTemperature kelvin: Int64) -> ColorGains {
        let ratio = Double(max(1000, kelvin)) / 6500
        let red = pow(ratio, 0.6)
        let blue = pow(1 / ratio, 0.6)
        let smallest = min(red, blue, 1)
        return ColorGains(red: Float(red / smallest), green: Float(1 / smallest), blue: Float(blue / smallest))
    }

    package static func temperature(fromGains gains: ColorGains, _ control: V4L2ControlInfo) -> Int64 {
        let ratio = Double(gains.red) / Double(max(gains.blue, 0.001))
        let kelvin = Int64((6500 * pow(ratio, 1 / 1.2)).rounded())
        return min(control.maximum, max(control.minimum, kelvin))
    }
}

/// A V4L2 camera's controls as `AVCaptureDevice` sees them (`CameraControlling`): focus, exposure, gain as ISO,
/// white balance, zoom and torch, each where the camera has the matching V4L2 control. Every change is an
/// S_CTRL followed by a G_CTRL, so the state shows what the driver kept. Power line frequency has no Apple API: a
/// camera that offers "auto" is set to it when it starts streaming, so lights do not flicker.
///
/// Threading: thread safe. Each change opens the node (V4L2 lets any open descriptor set controls, streaming or
/// not), sets, reads back and closes it.
package final class V4L2CameraControls: CameraControlling {
    package let controls: V4L2ControlSet
    private let path: String
    private let system: SystemCalls
    private let store: CameraControlStore
    /// Whether the camera streams now (for the completion handlers' times).
    private let isStreaming: @Sendable () -> Bool

    package init(
        controls: V4L2ControlSet, initialValues: [UInt32: Int64], path: String, system: SystemCalls,
        isStreaming: @escaping @Sendable () -> Bool
    ) {
        self.controls = controls
        self.path = path
        self.system = system
        self.isStreaming = isStreaming
        var state = CameraControlState()
        Self.read(initialValues, controls, into: &state)
        store = CameraControlStore(capabilities: controls.capabilities, initialState: state)
    }

    package var capabilities: CameraCapabilities { store.capabilities }
    package var state: CameraControlState { store.state }

    package func addStateObserver(_ observer: @escaping @Sendable (CameraControlState, CameraControlState) -> Void)
        -> Int
    {
        store.addObserver(observer)
    }

    package func removeStateObserver(_ token: Int) { store.removeObserver(token) }

    /// The ids whose values make up the state.
    static func stateControls(_ controls: V4L2ControlSet) -> [V4L2ControlInfo] {
        [
            controls.focusAutomatic, controls.focusAbsolute, controls.exposureAutomatic, controls.exposureAbsolute,
            controls.gain, controls.gainAutomatic, controls.whiteBalanceAutomatic, controls.whiteBalanceTemperature,
            controls.zoomAbsolute, controls.flashLEDMode, controls.torchIntensity,
        ].compactMap { $0 }
    }

    /// Reads every state control's value from an open node.
    static func readValues(_ controls: V4L2ControlSet, from node: V4L2Node) -> [UInt32: Int64] {
        var values: [UInt32: Int64] = [:]
        for control in stateControls(controls) {
            if let value = try? node.value(of: control.id) { values[control.id] = Int64(value) }
        }
        return values
    }

    /// The state the values say.
    static func read(_ values: [UInt32: Int64], _ controls: V4L2ControlSet, into state: inout CameraControlState) {
        func value(_ control: V4L2ControlInfo?) -> (Int64, V4L2ControlInfo)? {
            guard let control, let value = values[control.id] else { return nil }
            return (value, control)
        }
        if let (auto, _) = value(controls.focusAutomatic) {
            state.focusMode = auto != 0 ? .continuousAutoFocus : .locked
        }
        if let (focus, control) = value(controls.focusAbsolute) {
            state.lensPosition = V4L2ControlSet.lensPosition(fromFocus: focus, control)
        }
        if let (mode, _) = value(controls.exposureAutomatic) {
            state.exposureMode = mode == Int64(V4L2_EXPOSURE_MANUAL.rawValue) ? .custom : .continuousAutoExposure
        } else if let (auto, _) = value(controls.gainAutomatic) {
            state.exposureMode = auto != 0 ? .continuousAutoExposure : .custom
        }
        if let (exposure, _) = value(controls.exposureAbsolute) {
            state.exposureDuration = V4L2ControlSet.seconds(fromExposure: exposure)
        }
        if let (gain, control) = value(controls.gain) { state.iso = V4L2ControlSet.iso(fromGain: gain, control) }
        if let (auto, _) = value(controls.whiteBalanceAutomatic) {
            state.whiteBalanceMode = auto != 0 ? .continuousAutoWhiteBalance : .locked
        }
        if let (kelvin, _) = value(controls.whiteBalanceTemperature) {
            state.whiteBalanceGains = V4L2ControlSet.gains(fromTemperature: kelvin)
        }
        if let (zoom, control) = value(controls.zoomAbsolute) {
            state.videoZoomFactor = V4L2ControlSet.zoomFactor(fromZoom: zoom, control)
        }
        if let (mode, _) = value(controls.flashLEDMode) {
            state.torchMode = mode == Int64(V4L2_FLASH_LED_MODE_TORCH.rawValue) ? .on : .off
        }
        if let (intensity, control) = value(controls.torchIntensity) {
            let span = max(1, control.maximum - control.minimum)
            state.torchLevel = Float(intensity - control.minimum) / Float(span)
        }
    }

    package func apply(_ request: ControlRequest, completion: (@Sendable (CMTime) -> Void)?) {
        var writes: [(V4L2ControlInfo?, Int64)] = []
        var keep: (inout CameraControlState) -> Void = { _ in }
        let set = controls
        switch request {
        case .focusMode(let mode):
            writes = [(set.focusAutomatic, mode == .locked ? 0 : 1)]
        case .lockFocus(let position):
            writes = [(set.focusAutomatic, 0)]
            if let focus = set.focusAbsolute { writes.append((focus, V4L2ControlSet.focus(fromLensPosition: position, focus))) }
        case .exposureMode(let mode):
            writes = exposureModeWrites(continuous: mode == .continuousAutoExposure || mode == .autoExpose)
        case .customExposure(let duration, let iso):
            writes = exposureModeWrites(continuous: false)
            if let duration, let control = set.exposureAbsolute {
                writes.append((control, V4L2ControlSet.exposure(fromSeconds: duration)))
            }
            if let iso, let control = set.gain { writes.append((control, V4L2ControlSet.gain(fromISO: iso, control))) }
        case .whiteBalanceMode(let mode):
            writes = [(set.whiteBalanceAutomatic, mode == .locked ? 0 : 1)]
        case .lockWhiteBalance(let gains):
            writes = [(set.whiteBalanceAutomatic, 0)]
            if let gains, let control = set.whiteBalanceTemperature {
                writes.append((control, V4L2ControlSet.temperature(fromGains: gains, control)))
            }
        case .zoomFactor(let factor), .rampZoom(let factor, _):
            // V4L2 zoom moves at the lens's own speed: a ramp goes straight to its target.
            if let control = set.zoomAbsolute { writes = [(control, V4L2ControlSet.zoom(fromFactor: factor, control))] }
            keep = { $0.zoomRamp = nil }
        case .cancelZoomRamp:
            keep = { $0.zoomRamp = nil }
        case .torch(let mode, let level):
            let on = mode != .off
            writes = [
                (
                    set.flashLEDMode,
                    Int64(on ? V4L2_FLASH_LED_MODE_TORCH.rawValue : V4L2_FLASH_LED_MODE_NONE.rawValue)
                )
            ]
            if on, let control = set.torchIntensity {
                let span = Double(control.maximum - control.minimum)
                writes.append((control, control.minimum + Int64((Double(level) * span).rounded())))
            }
        case .fireFlash:
            // Flash mode, then the strobe (a button): the LED fires for the frame being exposed now.
            writes = [(set.flashLEDMode, Int64(V4L2_FLASH_LED_MODE_FLASH.rawValue)), (set.flashStrobe, 1)]
        case .flashMode(let mode):
            // The flash fires for a still (the photo output strobes it); the mode is only remembered here.
            keep = { $0.flashMode = mode }
        case .focusPointOfInterest(let point):
            keep = { $0.focusPointOfInterest = point }
        case .exposurePointOfInterest(let point):
            keep = { $0.exposurePointOfInterest = point }
        case .smoothAutoFocus(let enabled):
            keep = { $0.isSmoothAutoFocusEnabled = enabled }
        case .focusRangeRestriction(let restriction):
            keep = { $0.focusRangeRestriction = restriction }
        case .exposureTargetBias(let bias):
            keep = { $0.exposureTargetBias = bias }
        }
        let values = write(writes.compactMap { control, value in control.map { ($0, value) } })
        store.update { state in
            Self.read(values, set, into: &state)
            keep(&state)
            if case .torch = request { state.isTorchActive = state.torchMode == .on }
        }
        completion?(isStreaming() ? CMClock.hostTimeNow : .invalid)
    }

    private func exposureModeWrites(continuous: Bool) -> [(V4L2ControlInfo?, Int64)] {
        if let control = controls.exposureAutomatic {
            let value = continuous ? controls.continuousExposureValue : Int64(V4L2_EXPOSURE_MANUAL.rawValue)
            return value.map { [(control, $0)] } ?? []
        }
        return [(controls.gainAutomatic, continuous ? 1 : 0)]
    }

    /// Sets each control in order (auto switches before the values they unlock) and reads every state control
    /// back. A control the driver refuses keeps its old value.
    private func write(_ writes: [(V4L2ControlInfo, Int64)]) -> [UInt32: Int64] {
        guard let node = try? V4L2Node(path: path, system: system) else { return [:] }
        for (control, value) in writes {
            let clamped = min(control.maximum, max(control.minimum, value))
            _ = try? node.setValue(Int32(clamping: clamped), of: control.id)
        }
        return Self.readValues(controls, from: node)
    }

    /// Called before streaming starts: power line frequency to "auto" where the camera offers it.
    func streamWillStart() {
        let auto = Int64(V4L2_CID_POWER_LINE_FREQUENCY_AUTO.rawValue)
        guard let control = controls.powerLineFrequency, controls.powerLineFrequencyModes.contains(auto) else { return }
        _ = write([(control, auto)])
    }
}
