import Foundation
import OpenCoreMedia
import Synchronization

/// What the simulated 3A of a virtual camera knows about one frame: the scene, the frame's time and duration, the
/// picture's aspect, and whether the camera streams.
///
/// Value type; safe from any thread.
package struct VirtualFrameContext: Sendable, Hashable {
    /// What the camera looks at.
    package var scene: VirtualScene
    /// The frame's presentation time (the device clock is the host clock).
    package var time: CMTime
    /// The stream's frame duration: the longest exposure auto exposure may choose.
    package var frameDuration: CMTime
    /// The frame's width over its height, to place points of interest in the scene.
    package var aspect: Double
    /// Whether the camera streams: the torch is lit only then.
    package var isStreaming: Bool

    package init(scene: VirtualScene, time: CMTime, frameDuration: CMTime, aspect: Double, isStreaming: Bool = true) {
        self.scene = scene
        self.time = time
        self.frameDuration = frameDuration
        self.aspect = aspect
        self.isStreaming = isStreaming
    }
}

/// The virtual camera's simulated auto exposure, auto focus and auto white balance, and its zoom ramps and torch:
/// a pure, deterministic step function of (state, frame), run once per rendered frame.
///
/// - Auto exposure meters the scene model, not the pixels: the linear luminance of the static scene at the exposure
///   point of interest (colour bar, focus target or grey; the moving object and flash frames are not part of the
///   model, so exposure neither pumps as the object passes nor reacts to the flash) times the exposure gain. The
///   target is 18 % grey × 2^bias. Each frame moves log2(duration · ISO) `exposureStepFraction` of the way to the
///   target, choosing the duration first (base ISO 100, duration within 1/8000 s ... the frame duration) and then
///   ISO. `exposureTargetOffset` is metered − target in EV; `isAdjustingExposure` is true while it exceeds
///   `exposureTolerance` and exposure can still move. `.autoExpose` locks once converged, as Apple's does. The bias
///   acts through duration and ISO, so in `.custom` and `.locked` it changes only the offset (Apple's rule).
/// - Auto focus moves the lens `focusStepFraction` (smooth: `smoothFocusStepFraction`) of the way to the scene's
///   `focusTargetLensPosition` per frame, within the range restriction; `.autoFocus` locks once within
///   `focusTolerance`.
/// - Auto white balance moves the gains `whiteBalanceStepFraction` of the way to the grey-world gains of the
///   illuminant (`max(illuminant) / illuminant`, so the smallest gain is 1, capped at the maximum gain).
/// - A zoom ramp sets the factor `ZoomRamp.factor(at:)` of the frame's time and ends when it arrives.
/// - The torch is lit while streaming and `.on`, or `.auto` in a dark scene (`isDark`).
///
/// Values within a thousandth of their target snap to it, so a converged camera's state stops changing and
/// observers stop hearing about it. Stateless; safe from any thread.
package enum VirtualAutoControls {
    /// The fraction of the remaining log2 exposure error closed per frame: a 4x light change converges to
    /// within `exposureTolerance` in 9 frames.
    package static let exposureStepFraction = 0.35
    /// The fraction of the lens position error closed per frame.
    package static let focusStepFraction = 0.3
    /// The same with smooth auto focus: slower, for video.
    package static let smoothFocusStepFraction = 0.12
    /// The fraction of the white balance gain error closed per frame.
    package static let whiteBalanceStepFraction = 0.3
    /// Exposure is adjusting while the offset exceeds this, in EV.
    package static let exposureTolerance: Float = 0.05
    /// Focus is adjusting while the lens is farther than this from the target.
    package static let focusTolerance: Float = 0.01
    /// White balance is adjusting while a gain is off its target by more than this fraction.
    package static let whiteBalanceTolerance: Float = 0.01
    /// The ISO auto exposure prefers, raising the duration first.
    package static let baseISO = 100.0
    /// The linear level auto exposure aims the metered point at, before the bias: the 18 % grey card.
    package static let targetLevel = 0.18
    /// A scene whose light is at most this (two stops under normal) is dark: `.auto` torch and flash fire.
    package static let darkSceneLight = 0.25

    /// Whether `.auto` torch and flash fire for the scene.
    package static func isDark(_ scene: VirtualScene) -> Bool { scene.light <= darkSceneLight }

    /// Advances `state` by one frame.
    package static func step(
        _ state: inout CameraControlState, capabilities: CameraCapabilities, context: VirtualFrameContext
    ) {
        if let ramp = state.zoomRamp {
            let (factor, arrived) = ramp.factor(at: context.time)
            state.videoZoomFactor = factor
            if arrived { state.zoomRamp = nil }
        }
        state.isTorchActive = isTorchLit(state, scene: context.scene, isStreaming: context.isStreaming)
        state.isFlashScene = capabilities.hasFlash && isDark(context.scene)
        stepFocus(&state, scene: context.scene)
        stepWhiteBalance(&state, scene: context.scene, capabilities: capabilities)
        stepExposure(&state, capabilities: capabilities, context: context)
    }

    /// The optics a frame is rendered with in `state`. The bias is not among them: it acts through auto exposure.
    package static func optics(for state: CameraControlState, flashFired: Bool = false) -> VirtualOptics {
        var optics = VirtualOptics()
        optics.flashFired = flashFired
        optics.exposureDuration = state.exposureDuration
        optics.iso = Double(state.iso)
        optics.targetBias = 0
        optics.zoomFactor = max(1, state.videoZoomFactor)
        optics.lensPosition = Double(state.lensPosition)
        let gains = state.whiteBalanceGains
        optics.whiteBalanceGains = VirtualRGB(
            red: Double(gains.red), green: Double(gains.green), blue: Double(gains.blue))
        optics.torchLevel = state.isTorchActive ? Double(state.torchLevel) : 0
        return optics
    }

    /// Whether the torch is lit: streaming, and `.on`, or `.auto` in a dark scene.
    package static func isTorchLit(_ state: CameraControlState, scene: VirtualScene, isStreaming: Bool) -> Bool {
        guard isStreaming, state.torchLevel > 0 else { return false }
        switch state.torchMode {
        case .off: return false
        case .on: return true
        case .auto: return isDark(scene)
        }
    }

    // MARK: Exposure

    /// The linear luminance the meter reads at the exposure point of interest in `state`: what the rendered
    /// picture's level there is, in linear light, without the moving object.
    package static func meteredLuminance(_ state: CameraControlState, scene: VirtualScene, aspect: Double) -> Double {
        let point = state.exposurePointOfInterest
        let zoom = max(1, state.videoZoomFactor)
        let offsetX = (point.x - 0.5) * aspect / zoom
        let x = scene.camera == .front ? -offsetX : offsetX
        let y = (point.y - 0.5) / zoom
        let gains = state.whiteBalanceGains
        let rgb =
            staticReflectance(x: x, y: y, aspect: aspect) * scene.illuminant
            * VirtualRGB(red: Double(gains.red), green: Double(gains.green), blue: Double(gains.blue))
        let luminance = 0.2126 * rgb.red + 0.7152 * rgb.green + 0.0722 * rgb.blue
        return luminance * optics(for: state).exposureGain(sceneLight: scene.light)
    }

    /// The reflectance of the fixed drawing at scene point (x, y): a bar, the focus target's mean, or grey.
    static func staticReflectance(x: Double, y: Double, aspect: Double) -> VirtualRGB {
        if y < VirtualScene.barsBottom {
            let bars = VirtualScene.barReflectances
            let bar = Int(((x + aspect / 2) / (aspect / Double(bars.count))).rounded(.down))
            return bars[min(bars.count - 1, max(0, bar))]
        }
        let target = VirtualScene.focusTargetBounds
        if x >= target.minX && x < target.maxX && y >= target.minY && y < target.maxY {
            let stripes = VirtualScene.focusStripeReflectances
            return VirtualRGB(gray: (stripes.white + stripes.black) / 2)
        }
        return VirtualRGB(gray: VirtualScene.grayReflectance)
    }

    /// The exposure offset, metered − target, in EV.
    static func exposureOffset(_ state: CameraControlState, scene: VirtualScene, aspect: Double) -> Double {
        let metered = max(meteredLuminance(state, scene: scene, aspect: aspect), 1e-9)
        let target = targetLevel * exp2(Double(state.exposureTargetBias))
        return log2(metered / target)
    }

    private static func stepExposure(
        _ state: inout CameraControlState, capabilities: CameraCapabilities, context: VirtualFrameContext
    ) {
        let scene = context.scene
        guard state.exposureMode == .autoExpose || state.exposureMode == .continuousAutoExposure else {
            state.isAdjustingExposure = false
            state.exposureTargetOffset = Float(exposureOffset(state, scene: scene, aspect: context.aspect))
            return
        }
        let durationRange = capabilities.exposureDurationRange ?? state.exposureDuration...state.exposureDuration
        let longest = max(durationRange.lowerBound, min(durationRange.upperBound, context.frameDuration.seconds))
        let isoRange = Double(capabilities.isoRange.lowerBound)...Double(capabilities.isoRange.upperBound)

        let before = log2(state.exposureDuration * Double(state.iso))
        let error = -exposureOffset(state, scene: scene, aspect: context.aspect)
        let wanted = abs(error) < 0.001 ? before + error : before + exposureStepFraction * error
        // Duration first, at the base ISO; ISO makes up the rest. Both clamp, so a target out of reach is
        // approached as far as the ranges allow.
        let product = exp2(wanted)
        let duration = min(max(product / baseISO, durationRange.lowerBound), longest)
        let iso = min(max(product / duration, isoRange.lowerBound), isoRange.upperBound)
        state.exposureDuration = duration
        state.iso = Float(iso)

        let offset = exposureOffset(state, scene: scene, aspect: context.aspect)
        let moved = abs(log2(duration * iso) - before) > 1e-6
        state.exposureTargetOffset = abs(offset) < 1e-4 ? 0 : Float(offset)
        state.isAdjustingExposure = abs(offset) > Double(exposureTolerance) && moved
        if state.exposureMode == .autoExpose && !state.isAdjustingExposure { state.exposureMode = .locked }
    }

    // MARK: Focus

    /// The lens position auto focus aims at: the focus target's, inside the range restriction.
    package static func focusTarget(_ state: CameraControlState, scene: VirtualScene) -> Double {
        let target = min(max(scene.focusTargetLensPosition, 0), 1)
        switch state.focusRangeRestriction {
        case .none: return target
        case .near: return min(target, 0.6)
        case .far: return max(target, 0.4)
        }
    }

    private static func stepFocus(_ state: inout CameraControlState, scene: VirtualScene) {
        guard state.focusMode == .autoFocus || state.focusMode == .continuousAutoFocus else {
            state.isAdjustingFocus = false
            return
        }
        let target = focusTarget(state, scene: scene)
        let error = target - Double(state.lensPosition)
        let fraction = state.isSmoothAutoFocusEnabled ? smoothFocusStepFraction : focusStepFraction
        let lens = abs(error) < 0.001 ? target : Double(state.lensPosition) + fraction * error
        state.lensPosition = Float(lens)
        state.isAdjustingFocus = abs(target - lens) > Double(focusTolerance)
        if state.focusMode == .autoFocus && !state.isAdjustingFocus { state.focusMode = .locked }
    }

    // MARK: White balance

    /// The grey-world gains of the scene's illuminant: `max(illuminant) / illuminant` per channel, so the smallest
    /// gain is 1, capped at the camera's maximum gain.
    package static func grayWorldGains(_ scene: VirtualScene, maximumGain: Float) -> ColorGains {
        let light = scene.illuminant
        let brightest = max(light.red, light.green, light.blue, 1e-9)
        func gain(_ channel: Double) -> Float { Float(min(brightest / max(channel, 1e-9), Double(maximumGain))) }
        return ColorGains(red: gain(light.red), green: gain(light.green), blue: gain(light.blue))
    }

    private static func stepWhiteBalance(
        _ state: inout CameraControlState, scene: VirtualScene, capabilities: CameraCapabilities
    ) {
        let mode = state.whiteBalanceMode
        guard mode == .autoWhiteBalance || mode == .continuousAutoWhiteBalance else {
            state.isAdjustingWhiteBalance = false
            return
        }
        let target = grayWorldGains(scene, maximumGain: max(1, capabilities.maxWhiteBalanceGain))
        func approach(_ value: Float, _ goal: Float) -> Float {
            abs(goal - value) < 0.001 ? goal : value + Float(whiteBalanceStepFraction) * (goal - value)
        }
        let gains = state.whiteBalanceGains
        let next = ColorGains(
            red: approach(gains.red, target.red), green: approach(gains.green, target.green),
            blue: approach(gains.blue, target.blue))
        state.whiteBalanceGains = next
        let error = max(
            abs(next.red - target.red) / target.red, abs(next.green - target.green) / target.green,
            abs(next.blue - target.blue) / target.blue)
        state.isAdjustingWhiteBalance = error > whiteBalanceTolerance
        if mode == .autoWhiteBalance && !state.isAdjustingWhiteBalance { state.whiteBalanceMode = .locked }
    }
}

/// A high-resolution still the capture thread renders from its next frame's parameters.
package struct VirtualStillRequest: Sendable {
    package var size: CMVideoDimensions
    package var completion: @Sendable (CVPixelBuffer?, CMTime) -> Void
}

/// A virtual camera's controls: the `CameraControlling` the public `AVCaptureDevice` drives, the scene the camera
/// looks at, and the per-frame hook the capture thread calls to run the simulated 3A (`VirtualAutoControls`).
///
/// Completion handlers (`lockFocus`, `customExposure`, `exposureTargetBias`, `lockWhiteBalance`, any request given
/// one) run once, on the capture thread, with the presentation time of the first frame rendered after the change;
/// when the camera is not streaming they run at once, on the caller's thread, with `.invalid` (no frame will show
/// the change until it streams). A handler pending when the stream stops runs with `.invalid` then.
///
/// Threading: thread safe. State changes go through the `CameraControlStore`, whose observers run on the thread
/// that made the change (a caller's for `apply`, the capture thread as 3A converges). No lock is held while an
/// observer or a completion handler runs.
package final class VirtualCameraControls: CameraControlling {
    /// The largest zoom factor of every format of this camera.
    package let maxZoomFactor: Double
    private let store: CameraControlStore
    private let position: VirtualCameraPosition

    private struct Runtime {
        var scene: VirtualScene
        var isStreaming = false
        var isFreeRunning = false
        /// The latest frame's time: the device's "now" when it runs ahead of the host clock.
        var lastFrameTime: CMTime?
        /// Handlers of `.fireFlash`: they belong to the next frame, the one the flash lights.
        var pendingCompletions: [@Sendable (CMTime) -> Void] = []
        /// Handlers of other changes, each waiting for the first delivered frame whose state includes its change
        /// (its store revision).
        var pendingChanges: [(revision: UInt64, completion: @Sendable (CMTime) -> Void)] = []
        /// The latest delivered frames while streaming, oldest first: their state's revision and their time.
        var recentFrames: [(revision: UInt64, time: CMTime)] = []
        /// A `.fireFlash` waits for the next frame; armed under the same lock as its completion is queued.
        var isFlashArmed = false
        /// High-resolution stills waiting for the next frame.
        var pendingStills: [VirtualStillRequest] = []
    }

    private let runtime: Mutex<Runtime>

    /// The controls of a camera that sees the scene from `position`, in their initial state: continuous auto focus
    /// (lens at the scene's focus target), exposure and white balance, converged for the default scene (1/60 s,
    /// ISO 100). `capabilities` defaults to the position's (`capabilities(position:)`); the USB webcam passes its
    /// own.
    package init(
        position: VirtualCameraPosition, maxZoomFactor: Double, capabilities: CameraCapabilities? = nil
    ) {
        self.position = position
        self.maxZoomFactor = maxZoomFactor
        var scene = VirtualScene()
        scene.camera = position
        self.runtime = Mutex(Runtime(scene: scene))
        self.store = CameraControlStore(
            capabilities: capabilities ?? Self.capabilities(position: position),
            initialState: Self.initialState(scene: scene))
    }

    /// What the virtual cameras can do: everything, except that the front camera has no flash and no torch.
    package static func capabilities(position: VirtualCameraPosition) -> CameraCapabilities {
        var capabilities = CameraCapabilities()
        capabilities.focusModes = Set(FocusMode.allCases)
        capabilities.isFocusPointOfInterestSupported = true
        capabilities.isLensPositionSupported = true
        capabilities.isSmoothAutoFocusSupported = true
        capabilities.isFocusRangeRestrictionSupported = true
        capabilities.exposureModes = Set(ExposureMode.allCases)
        capabilities.isExposurePointOfInterestSupported = true
        capabilities.exposureDurationRange = (1.0 / 8000)...(1.0 / 3)
        capabilities.isoRange = 25...3200
        capabilities.exposureTargetBiasRange = -8...8
        capabilities.whiteBalanceModes = Set(WhiteBalanceMode.allCases)
        capabilities.isCustomWhiteBalanceGainsSupported = true
        capabilities.maxWhiteBalanceGain = 4
        capabilities.flashModes = position == .back ? Set(LightMode.allCases) : [.off]
        capabilities.torchModes = position == .back ? Set(LightMode.allCases) : [.off]
        return capabilities
    }

    /// The state a virtual camera starts in, converged on `scene`.
    package static func initialState(scene: VirtualScene) -> CameraControlState {
        var state = CameraControlState()
        state.focusMode = .continuousAutoFocus
        state.lensPosition = Float(scene.focusTargetLensPosition)
        state.exposureMode = .continuousAutoExposure
        state.exposureDuration = 1.0 / 60
        state.iso = 100
        state.whiteBalanceMode = .continuousAutoWhiteBalance
        state.whiteBalanceGains = .unity
        state.videoZoomFactor = 1
        return state
    }

    // MARK: CameraControlling

    package var capabilities: CameraCapabilities { store.capabilities }
    package var state: CameraControlState { store.state }

    package func addStateObserver(
        _ observer: @escaping @Sendable (CameraControlState, CameraControlState) -> Void
    ) -> Int {
        store.addObserver(observer)
    }

    package func removeStateObserver(_ token: Int) {
        store.removeObserver(token)
    }

    package func apply(_ request: ControlRequest, completion: (@Sendable (CMTime) -> Void)?) {
        let capabilities = store.capabilities
        func clamp<T: Comparable>(_ value: T, _ range: ClosedRange<T>) -> T {
            min(max(value, range.lowerBound), range.upperBound)
        }
        let maxGain = max(1, capabilities.maxWhiteBalanceGain)
        func clampGains(_ gains: ColorGains) -> ColorGains {
            ColorGains(
                red: clamp(gains.red, 1...maxGain), green: clamp(gains.green, 1...maxGain),
                blue: clamp(gains.blue, 1...maxGain))
        }
        let zoomRange = 1...max(1, maxZoomFactor)
        if request == .fireFlash {
            // Armed and its handler queued under one lock, so the frame the flash lights is the frame the handler
            // names (`takeFrameRequests` takes both at once).
            let fires = capabilities.hasFlash
            let runNow = runtime.withLock { runtime in
                guard runtime.isStreaming, fires else { return true }
                runtime.isFlashArmed = true
                if let completion { runtime.pendingCompletions.append(completion) }
                return false
            }
            if runNow { completion?(.invalid) }
            return
        }
        // The change's revision: the first frame whose state has at least it is the first with the change.
        var revision: UInt64 = 0
        func update(_ change: (inout CameraControlState) -> Void) {
            revision = max(revision, store.revisedUpdate(change).revision)
        }
        switch request {
        case .focusMode(let mode):
            update { state in
                state.focusMode = mode
                if mode == .locked { state.isAdjustingFocus = false }
            }
        case .focusPointOfInterest(let point):
            update { $0.focusPointOfInterest = point }
        case .lockFocus(let lensPosition):
            update { state in
                state.focusMode = .locked
                state.lensPosition = clamp(lensPosition, 0...1)
                state.isAdjustingFocus = false
            }
        case .smoothAutoFocus(let enabled):
            update { $0.isSmoothAutoFocusEnabled = enabled }
        case .focusRangeRestriction(let restriction):
            update { $0.focusRangeRestriction = restriction }
        case .exposureMode(let mode):
            update { state in
                state.exposureMode = mode
                if mode == .locked || mode == .custom { state.isAdjustingExposure = false }
            }
        case .exposurePointOfInterest(let point):
            update { $0.exposurePointOfInterest = point }
        case .customExposure(let duration, let iso):
            let durations = capabilities.exposureDurationRange
            update { state in
                state.exposureMode = .custom
                if let duration { state.exposureDuration = durations.map { clamp(duration, $0) } ?? duration }
                if let iso { state.iso = clamp(iso, capabilities.isoRange) }
                state.isAdjustingExposure = false
            }
        case .exposureTargetBias(let bias):
            update { $0.exposureTargetBias = clamp(bias, capabilities.exposureTargetBiasRange) }
        case .whiteBalanceMode(let mode):
            update { state in
                state.whiteBalanceMode = mode
                if mode == .locked { state.isAdjustingWhiteBalance = false }
            }
        case .lockWhiteBalance(let gains):
            update { state in
                state.whiteBalanceMode = .locked
                if let gains { state.whiteBalanceGains = clampGains(gains) }
                state.isAdjustingWhiteBalance = false
            }
        case .zoomFactor(let factor):
            update { state in
                state.videoZoomFactor = clamp(factor, zoomRange)
                state.zoomRamp = nil
            }
        case .rampZoom(let target, let rate):
            let now = deviceTime()
            update { state in
                // A ramp under way is replaced from where it is now.
                let current = state.zoomRamp.map { $0.factor(at: now).factor } ?? state.videoZoomFactor
                state.videoZoomFactor = current
                state.zoomRamp =
                    rate > 0
                    ? ZoomRamp(startTime: now, startFactor: current, targetFactor: clamp(target, zoomRange), rate: rate)
                    : nil
                if rate <= 0 { state.videoZoomFactor = clamp(target, zoomRange) }
            }
        case .cancelZoomRamp:
            let now = deviceTime()
            update { state in
                if let ramp = state.zoomRamp { state.videoZoomFactor = ramp.factor(at: now).factor }
                state.zoomRamp = nil
            }
        case .flashMode(let mode):
            update { $0.flashMode = mode }
        case .fireFlash:
            return  // handled above
        case .torch(let mode, let level):
            let (scene, isStreaming) = runtime.withLock { ($0.scene, $0.isStreaming) }
            update { state in
                state.torchMode = mode
                state.torchLevel = mode == .off ? 0 : clamp(level, 0...1)
                state.isTorchActive = VirtualAutoControls.isTorchLit(state, scene: scene, isStreaming: isStreaming)
            }
        }
        if let completion {
            let (runNow, time) = runtime.withLock { runtime -> (Bool, CMTime) in
                guard runtime.isStreaming else { return (true, .invalid) }
                // The capture thread may have rendered and delivered a frame with the change already (between
                // the update and this): that frame is the one to name.
                if let frame = runtime.recentFrames.first(where: { $0.revision >= revision }) {
                    return (true, frame.time)
                }
                runtime.pendingChanges.append((revision, completion))
                return (false, .invalid)
            }
            if runNow { completion(time) }
        }
    }

    // MARK: The scene

    /// What the camera looks at; its `camera` is always this camera's position.
    package var scene: VirtualScene {
        get { runtime.withLock { $0.scene } }
        set {
            var scene = newValue
            scene.camera = position
            runtime.withLock { $0.scene = scene }
        }
    }

    /// The device's time now: the host clock, or the latest frame's time when the stream runs ahead of it.
    package func deviceTime() -> CMTime {
        let (isFreeRunning, last) = runtime.withLock { ($0.isFreeRunning, $0.lastFrameTime) }
        if isFreeRunning, let last { return last }
        return CMClock.hostTimeNow
    }

    // MARK: The capture thread's side

    /// The stream starts: the torch lights if it should.
    func streamWillStart(isFreeRunning: Bool) {
        let scene = runtime.withLock { runtime in
            runtime.isStreaming = true
            runtime.isFreeRunning = isFreeRunning
            runtime.lastFrameTime = nil
            return runtime.scene
        }
        store.update { $0.isTorchActive = VirtualAutoControls.isTorchLit($0, scene: scene, isStreaming: true) }
    }

    /// Takes the completion handlers waiting for a frame, and whether the flash fires for it. Call before
    /// `advance`, so every handler taken belongs to a change the next snapshot of the state includes.
    func takeFrameRequests() -> (
        completions: [@Sendable (CMTime) -> Void], firesFlash: Bool, stills: [VirtualStillRequest]
    ) {
        runtime.withLock { runtime in
            defer {
                runtime.isFlashArmed = false
                runtime.pendingStills = []
            }
            if runtime.pendingCompletions.isEmpty { return ([], runtime.isFlashArmed, runtime.pendingStills) }
            defer { runtime.pendingCompletions = [] }
            return (runtime.pendingCompletions, runtime.isFlashArmed, runtime.pendingStills)
        }
    }

    /// Asks for the next frame again at `request.size` (and the flash for it); false when not streaming.
    func requestStill(_ request: VirtualStillRequest, firingFlash: Bool) -> Bool {
        let fires = firingFlash && capabilities.hasFlash
        return runtime.withLock { runtime in
            guard runtime.isStreaming else { return false }
            runtime.pendingStills.append(request)
            if fires { runtime.isFlashArmed = true }
            return true
        }
    }

    /// Runs the 3A for the frame at `time` and returns the state and scene to render it with, and the state's
    /// revision (for ``frameWasDelivered(revision:time:)``).
    func advance(
        time: CMTime, frameDuration: CMTime, aspect: Double
    ) -> (state: CameraControlState, scene: VirtualScene, revision: UInt64) {
        let scene = runtime.withLock { runtime in
            runtime.lastFrameTime = time
            return runtime.scene
        }
        let context = VirtualFrameContext(scene: scene, time: time, frameDuration: frameDuration, aspect: aspect)
        let capabilities = store.capabilities
        let (state, revision) = store.revisedUpdate {
            VirtualAutoControls.step(&$0, capabilities: capabilities, context: context)
        }
        return (state, scene, revision)
    }

    /// A frame rendered with the state of `revision` went out at `time`: takes the handlers of the changes it
    /// shows (they name `time`), and remembers it for a change whose handler comes after the frame.
    func frameWasDelivered(revision: UInt64, time: CMTime) -> [@Sendable (CMTime) -> Void] {
        runtime.withLock { runtime in
            runtime.recentFrames.append((revision, time))
            if runtime.recentFrames.count > 8 { runtime.recentFrames.removeFirst() }
            let shown = runtime.pendingChanges.filter { $0.revision <= revision }
            guard !shown.isEmpty else { return [] }
            runtime.pendingChanges.removeAll { $0.revision <= revision }
            return shown.map(\.completion)
        }
    }

    /// The stream has ended: the torch goes out and handlers still waiting run with `.invalid`.
    func streamDidStop() {
        let (completions, stills) = runtime.withLock { runtime in
            runtime.isStreaming = false
            runtime.isFlashArmed = false
            defer {
                runtime.pendingCompletions = []
                runtime.pendingChanges = []
                runtime.recentFrames = []
                runtime.pendingStills = []
            }
            return (runtime.pendingCompletions + runtime.pendingChanges.map(\.completion), runtime.pendingStills)
        }
        store.update { $0.isTorchActive = false }
        for completion in completions { completion(.invalid) }
        for still in stills { still.completion(nil, .invalid) }
    }
}
