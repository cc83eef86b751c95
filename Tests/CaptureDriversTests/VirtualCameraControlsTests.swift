import CaptureDrivers
import Foundation
import OpenCoreMedia
import Synchronization
import Testing

/// Runs the 3A step function over frames of a 640x480 stream at 30 fps, without threads.
private struct Simulation {
    var state: CameraControlState
    var scene = VirtualScene()
    let capabilities = VirtualCameraControls.capabilities(position: .back)
    var frame: Int64 = 30 * 1000 + 1
    static let width = 640
    static let height = 480

    init() {
        state = VirtualCameraControls.initialState(scene: VirtualScene())
    }

    var time: CMTime { CMTime(value: frame, timescale: 30) }

    /// One frame: the step, then the state the frame is rendered with.
    mutating func step() -> CameraControlState {
        frame += 1
        let context = VirtualFrameContext(
            scene: scene, time: time, frameDuration: CMTime(value: 1, timescale: 30),
            aspect: Double(Self.width) / Double(Self.height))
        VirtualAutoControls.step(&state, capabilities: capabilities, context: context)
        return state
    }

    mutating func run(frames: Int) {
        for _ in 0..<frames { _ = step() }
    }

    /// The current frame as the renderer draws it, away from any whole second.
    func render(index: UInt32 = 1) -> TestFrame {
        let parameters = VirtualFrameParameters(
            time: VirtualClockTime(value: frame % 30 == 0 ? frame + 1 : frame, timescale: 30),
            duration: VirtualClockTime(value: 1, timescale: 30), index: index, scene: scene,
            optics: VirtualAutoControls.optics(for: state))
        return TestFrame(parameters, width: Self.width, height: Self.height)
    }

    func grayBrightness() -> Double {
        let rect = VirtualFrameLayout(width: Self.width, height: Self.height).grayPatchRect!
        return render().withLuma { VirtualPictureReader.measureLinearBrightness($0, in: rect) } ?? .nan
    }

    func focusSharpness() -> Double {
        let rect = VirtualFrameLayout(width: Self.width, height: Self.height).focusTargetRect!
        return render().withLuma { VirtualPictureReader.measureFocusSharpness($0, in: rect) }
    }
}

@Suite("The virtual camera's simulated 3A and controls")
struct VirtualCameraControlsTests {
    @Test("the initial state is converged on the default scene")
    func initialState() {
        var simulation = Simulation()
        let before = simulation.state
        #expect(before.focusMode == .continuousAutoFocus && before.exposureMode == .continuousAutoExposure)
        #expect(before.whiteBalanceMode == .continuousAutoWhiteBalance && before.videoZoomFactor == 1)
        #expect(before.exposureDuration == 1.0 / 60 && before.iso == 100 && before.lensPosition == 0.5)
        simulation.run(frames: 5)
        #expect(simulation.state == before, "a converged camera's state does not change")
        #expect(abs(simulation.grayBrightness() - 0.18) < 0.01)
    }

    @Test(
        "auto exposure converges within 15 frames after a 4x light change, adjusting meanwhile", arguments: [4.0, 0.25])
    func exposureConverges(lightFactor: Double) {
        var simulation = Simulation()
        simulation.scene.light *= lightFactor
        var adjusting: [Bool] = []
        for _ in 0..<15 { adjusting.append(simulation.step().isAdjustingExposure) }
        #expect(adjusting.first == true, "adjusting after the change")
        #expect(adjusting.last == false, "converged within 15 frames: \(adjusting)")
        let settled = adjusting.firstIndex(of: false) ?? adjusting.count
        #expect(adjusting[settled...].allSatisfy { !$0 }, "stays converged")
        #expect(abs(simulation.state.exposureTargetOffset) <= 0.05)
        // The grey card reads 18 % again.
        #expect(abs(simulation.grayBrightness() / 0.18 - 1) < 0.05)
        #expect(simulation.state.exposureDuration <= 1.0 / 30 + 1e-12)
    }

    @Test(".autoExpose locks once converged; .custom and .locked only meter")
    func autoExposeLocks() {
        var simulation = Simulation()
        simulation.state.exposureMode = .autoExpose
        simulation.scene.light = 2
        simulation.run(frames: 20)
        #expect(simulation.state.exposureMode == .locked)
        let locked = simulation.state
        simulation.scene.light = 1
        simulation.run(frames: 3)
        #expect(simulation.state.exposureDuration == locked.exposureDuration)
        #expect(abs(simulation.state.exposureTargetOffset + 1) < 0.06, "one stop under, metered")
        #expect(!simulation.state.isAdjustingExposure)
    }

    @Test("+1 EV of bias doubles the grey patch's linear brightness")
    func biasDoublesBrightness() {
        var simulation = Simulation()
        let base = simulation.grayBrightness()
        simulation.state.exposureTargetBias = 1
        simulation.run(frames: 20)
        let biased = simulation.grayBrightness()
        #expect(abs(biased / base - 2) < 0.2, "ratio \(biased / base)")
        #expect(abs(simulation.state.exposureTargetOffset) <= 0.05)
    }

    @Test("zoom 2x through the controls doubles the object's measured size")
    func zoomDoublesObject() throws {
        let controls = VirtualCameraControls(position: .back, maxZoomFactor: 16)
        var simulation = Simulation()
        func objectWidth() throws -> Double {
            let frame = simulation.render()
            let layout = VirtualFrameLayout(
                width: Simulation.width, height: Simulation.height, zoomFactor: simulation.state.videoZoomFactor)
            let object = layout.object(atSeconds: simulation.time.seconds)
            let columns = Int(object.centerX - object.diameter)..<Int(object.centerX + object.diameter)
            return try #require(
                frame.withLuma {
                    VirtualPictureReader.measureObjectSize($0, row: Int(object.centerY), columns: columns)
                })
        }
        simulation.frame = 30 * 1000 + 10
        let one = try objectWidth()
        controls.apply(.zoomFactor(2), completion: nil)
        simulation.state.videoZoomFactor = controls.state.videoZoomFactor
        let two = try objectWidth()
        #expect(abs(two / one - 2) < 0.1, "ratio \(two / one)")
        controls.apply(.zoomFactor(100), completion: nil)
        #expect(controls.state.videoZoomFactor == 16, "clamped to the camera's maximum")
    }

    @Test("focus locked far from the target blurs it; continuous auto focus brings it back")
    func focus() {
        var simulation = Simulation()
        let sharp = simulation.focusSharpness()
        simulation.state.focusMode = .locked
        simulation.state.lensPosition = 1
        simulation.run(frames: 10)
        #expect(simulation.state.lensPosition == 1 && !simulation.state.isAdjustingFocus)
        let blurred = simulation.focusSharpness()
        #expect(blurred < sharp * 0.6, "sharp \(sharp), locked far \(blurred)")
        simulation.state.focusMode = .continuousAutoFocus
        #expect(simulation.step().isAdjustingFocus)
        simulation.run(frames: 20)
        #expect(!simulation.state.isAdjustingFocus)
        #expect(abs(simulation.state.lensPosition - 0.5) <= 0.01)
        #expect(simulation.focusSharpness() > sharp * 0.95)

        // A target moved by a test is followed; .autoFocus locks when there; smooth focus is slower.
        simulation.scene.focusTargetLensPosition = 0.2
        simulation.state.focusMode = .autoFocus
        simulation.run(frames: 30)
        #expect(simulation.state.focusMode == .locked && abs(simulation.state.lensPosition - 0.2) <= 0.01)
        var fast = Simulation()
        var smooth = Simulation()
        smooth.state.isSmoothAutoFocusEnabled = true
        fast.scene.focusTargetLensPosition = 0.9
        smooth.scene.focusTargetLensPosition = 0.9
        fast.run(frames: 3)
        smooth.run(frames: 3)
        #expect(fast.state.lensPosition > smooth.state.lensPosition)
    }

    @Test("auto white balance moves the gains to the illuminant's grey-world gains")
    func whiteBalance() {
        var simulation = Simulation()
        simulation.scene.illuminant = VirtualRGB(red: 1, green: 0.8, blue: 0.5)
        let target = VirtualAutoControls.grayWorldGains(simulation.scene, maximumGain: 4)
        #expect(target == ColorGains(red: 1, green: 1.25, blue: 2))
        let first = simulation.step()
        #expect(first.isAdjustingWhiteBalance)
        #expect(first.whiteBalanceGains.blue > 1 && first.whiteBalanceGains.blue < 2)
        simulation.run(frames: 25)
        #expect(!simulation.state.isAdjustingWhiteBalance)
        #expect(abs(simulation.state.whiteBalanceGains.blue - 2) < 0.02)
        #expect(abs(simulation.state.whiteBalanceGains.green - 1.25) < 0.02)
        // The grey patch is neutral again.
        let rect = VirtualFrameLayout(width: Simulation.width, height: Simulation.height).grayPatchRect!
        let chroma = simulation.render().meanChroma(rect)
        #expect(abs(chroma.cb - 128) < 1.5 && abs(chroma.cr - 128) < 1.5)
        // A deep colour is capped at the maximum gain.
        simulation.scene.illuminant = VirtualRGB(red: 1, green: 1, blue: 0.1)
        #expect(VirtualAutoControls.grayWorldGains(simulation.scene, maximumGain: 4).blue == 4)
    }

    @Test("a zoom ramp follows ZoomRamp frame by frame and ends on arrival; cancelling freezes it")
    func zoomRamp() {
        var simulation = Simulation()
        let ramp = ZoomRamp(startTime: simulation.time, startFactor: 1, targetFactor: 4, rate: 4)
        simulation.state.zoomRamp = ramp
        var previous = 1.0
        var arrivedAt: Int?
        for n in 1...30 {
            let state = simulation.step()
            #expect(state.videoZoomFactor == ramp.factor(at: simulation.time).factor)
            #expect(state.videoZoomFactor >= previous)
            previous = state.videoZoomFactor
            if state.zoomRamp == nil && arrivedAt == nil { arrivedAt = n }
        }
        #expect(previous == 4)
        // Two powers of two at 4 per second: half a second, 15 frames.
        #expect(arrivedAt == 15)

        let controls = VirtualCameraControls(position: .front, maxZoomFactor: 4)
        controls.apply(.rampZoom(to: 4, rate: 1), completion: nil)
        #expect(controls.state.isRampingVideoZoom)
        controls.apply(.cancelZoomRamp, completion: nil)
        let frozen = controls.state
        #expect(!frozen.isRampingVideoZoom && frozen.videoZoomFactor >= 1 && frozen.videoZoomFactor < 1.5)
    }

    @Test("requests change the state and observers hear each change")
    func requestsAndObservers() {
        let controls = VirtualCameraControls(position: .back, maxZoomFactor: 16)
        let changes = Mutex<[CameraControlState]>([])
        let token = controls.addStateObserver { _, new in changes.withLock { $0.append(new) } }
        controls.apply(.lockFocus(lensPosition: 0.25), completion: nil)
        controls.apply(.customExposure(duration: 1.0 / 1000, iso: nil), completion: nil)
        controls.apply(.exposureTargetBias(20), completion: nil)
        controls.apply(.lockWhiteBalance(ColorGains(red: 2, green: 1, blue: 9)), completion: nil)
        controls.apply(.flashMode(.auto), completion: nil)
        controls.apply(.exposurePointOfInterest(NormalizedPoint(x: 0.1, y: 0.9)), completion: nil)
        let state = controls.state
        #expect(state.focusMode == .locked && state.lensPosition == 0.25)
        #expect(state.exposureMode == .custom && state.exposureDuration == 1.0 / 1000 && state.iso == 100)
        #expect(state.exposureTargetBias == 8, "clamped to the bias range")
        #expect(state.whiteBalanceMode == .locked && state.whiteBalanceGains == ColorGains(red: 2, green: 1, blue: 4))
        #expect(state.flashMode == .auto && state.exposurePointOfInterest == NormalizedPoint(x: 0.1, y: 0.9))
        #expect(changes.withLock { $0.count } == 6)
        controls.removeStateObserver(token)
        controls.apply(.flashMode(.off), completion: nil)
        #expect(changes.withLock { $0.count } == 6)
    }

    @Test("completion handlers: .invalid at once when not streaming, else the PTS of the first frame with the change")
    func completionHandlers() throws {
        let camera = VirtualCamera(position: .back)
        let controls = try #require(camera.controls)
        let idle = Mutex<[CMTime]>([])
        controls.apply(.lockFocus(lensPosition: 0.5), completion: { time in idle.withLock { $0.append(time) } })
        #expect(idle.withLock { $0 } == [.invalid])

        camera.clockMode = .freeRunning
        let recorder = StreamRecorder()
        try camera.start(camera.configuration(fps: 30), sink: recorder.sink)
        recorder.wait(forEvents: 3)
        // Much less light: the first frame with the change is far darker than every frame before it.
        let synced = Mutex<[CMTime]>([])
        controls.apply(
            .customExposure(duration: 1.0 / 960, iso: 100), completion: { time in synced.withLock { $0.append(time) } })
        let seen = recorder.wait { _ in !synced.withLock { $0.isEmpty } }
        let count = recorder.events.count
        recorder.wait(forEvents: count + 2)
        camera.stop()
        #expect(seen)
        let time = try #require(synced.withLock { $0.first })
        #expect(synced.withLock { $0.count } == 1)
        let frames = recorder.frames.filter { !$0.isFlash }
        for frame in frames {
            let brightness = try #require(frame.grayBrightness)
            if frame.presentationTime < time {
                #expect(brightness > 0.1, "before the change, frame \(frame.sequence): \(brightness)")
            } else {
                #expect(brightness < 0.03, "with the change, frame \(frame.sequence): \(brightness)")
            }
        }
        #expect(
            frames.contains { $0.presentationTime == time } || recorder.frames.contains { $0.presentationTime == time })
    }

    @Test("the torch is active only while streaming, and brightens the scene")
    func torch() throws {
        let camera = VirtualCamera(position: .back)
        let controls = try #require(camera.controls)
        controls.apply(.exposureMode(.locked), completion: nil)
        controls.apply(.torch(.on, level: 1), completion: nil)
        #expect(controls.state.torchMode == .on && !controls.state.isTorchActive)
        camera.clockMode = .freeRunning
        let recorder = StreamRecorder()
        try camera.start(camera.configuration(fps: 30), sink: recorder.sink)
        #expect(controls.state.isTorchActive)
        recorder.wait(forEvents: 3)
        camera.stop()
        #expect(!controls.state.isTorchActive)
        let lit = try #require(recorder.frames.first { !$0.isFlash }?.grayBrightness)
        #expect(abs(lit / 0.18 - 1.5) < 0.1, "the torch adds half the normal light: \(lit)")

        // .auto lights only in a dark scene.
        controls.apply(.torch(.auto, level: 1), completion: nil)
        let dark = StreamRecorder()
        try camera.start(camera.configuration(fps: 30), sink: dark.sink)
        #expect(!controls.state.isTorchActive)
        var scene = camera.scene
        scene.light = 0.1
        camera.scene = scene
        dark.wait(forEvents: 2)
        let count = dark.events.count
        dark.wait(forEvents: count + 1)
        #expect(controls.state.isTorchActive)
        camera.stop()
        #expect(!controls.state.isTorchActive)
    }
}
