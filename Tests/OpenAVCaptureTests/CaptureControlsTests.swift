import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing

/// `AVCaptureControl`s: sliders and pickers keep Apple's value rules, react to a person only in a session with a
/// controls delegate, and the system sliders drive the camera (read back from its frames).
@Suite(.serialized) struct CaptureControlsTests {
    @Test("A slider keeps its value in range and on its steps or values; code sets call no action")
    func sliderValues() {
        let stepped = AVCaptureSlider("Level", symbolName: "dial.low", in: 0...10, step: 2.5)
        #expect(stepped.value == 0)
        stepped.value = 6.1
        #expect(stepped.value == 5)
        stepped.value = 42
        #expect(stepped.value == 10)
        let listed = AVCaptureSlider("Speed", symbolName: "hare", values: [1, 0.5, 2])
        #expect(listed.value == 0.5)
        listed.value = 1.6
        #expect(listed.value == 2)
        #expect(listed.valueBounds == 0.5...2)
    }

    @Test("A person's change reaches the action only in a session with a controls delegate, and not when disabled")
    func userChanges() throws {
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [])
        let slider = AVCaptureSlider("Level", symbolName: "dial.low", in: 0...1)
        let picker = AVCaptureIndexPicker("Filter", symbolName: "camera.filters", localizedIndexTitles: ["A", "B", "C"])
        let seen = Mutex<[String]>([])
        let queue = DispatchQueue(label: "control-actions")
        slider.setActionQueue(queue) { value in seen.withLock { $0.append("slider \(value)") } }
        picker.setActionQueue(queue) { index in seen.withLock { $0.append("picker \(index)") } }
        #expect(session.supportsControls && session.canAddControl(slider))
        session.addControl(slider)
        session.addControl(picker)
        #expect(session.controls.count == 2 && !session.canAddControl(slider))
        slider.userDidSetValue(0.25)  // no controls delegate yet: not active
        let delegate = ControlsDelegate()
        session.setControlsDelegate(delegate, queue: queue)
        slider.userDidSetValue(0.75)
        picker.userDidSelectIndex(2)
        picker.userDidSelectIndex(7)  // out of range: ignored
        slider.isEnabled = false
        slider.userDidSetValue(0.5)
        session.userDidEngageControls()
        queue.sync {}  // the actions and the delegate call were queued before this
        #expect(seen.withLock { $0 } == ["slider 0.75", "picker 2"])
        #expect(slider.value == 0.75 && picker.selectedIndex == 2)
        #expect(delegate.activations.withLock { $0 } == 1)
        session.removeControl(slider)
        #expect(session.controls.count == 1)
        let other = try makeSession(devices: [VirtualDevices.front], outputs: [])
        #expect(other.canAddControl(slider))
    }

    @Test("The system zoom slider sets the camera's zoom; the frames show it (the moving object twice as wide)")
    func systemZoomSlider() throws {
        let camera = VirtualDevices.back
        defer {
            try? camera.lockForConfiguration()
            camera.videoZoomFactor = 1
            camera.unlockForConfiguration()
        }
        let frames = AVCaptureVideoDataOutput()
        let sizes = Mutex<[(zoom: Double, size: Double)]>([])
        let recorder = RecordingDelegate { sample, _ in
            guard let image = sample.imageBuffer else { return }
            for zoom in [1.0, 2.0] {
                if let size = VirtualFrameReader.measureObjectSize(
                    in: image, at: sample.presentationTimeStamp, zoomFactor: zoom)
                {
                    sizes.withLock { $0.append((zoom, size)) }
                }
            }
        }
        frames.setSampleBufferDelegate(recorder, queue: DispatchQueue(label: "zoom-frames"))
        let session = try makeSession(preset: .qvga320x240, devices: [camera], outputs: [frames])
        let reported = Mutex<[CGFloat]>([])
        let slider = AVCaptureSystemZoomSlider(device: camera) { factor in reported.withLock { $0.append(factor) } }
        #expect(!AVCaptureSession().canAddControl(slider), "the camera is not an input of an empty session")
        session.addControl(slider)
        let kept = ControlsDelegate()
        session.setControlsDelegate(kept, queue: DispatchQueue(label: "controls"))
        session.startRunning()
        defer { session.stopRunning() }
        slider.userDidSetValue(2)
        #expect(camera.videoZoomFactor == 2 && slider.value == 2)
        #expect(reported.withLock { $0 } == [2])
        // The zoom reaches the frames at the camera's next frames: wait for a frame measured at 2x.
        sizes.withLock { $0.removeAll() }
        // The object moves and may leave the frame at 2x: wait for a frame that shows it whole.
        let doubled = waitUntil(timeout: 10) {
            sizes.withLock { $0.contains { $0.zoom == 2 && abs($0.size - 0.2 * 240 * 2) <= 4 } }
        }
        #expect(doubled, "sizes measured: \(sizes.withLock { $0.suffix(6) })")
        slider.userDidSetValue(1000)
        #expect(camera.videoZoomFactor == camera.maxAvailableVideoZoomFactor)
    }

    @Test("What renderers show: titles, scales and value texts; a change on that scale goes through the control")
    func appearances() throws {
        let camera = VirtualDevices.back
        defer {
            try? camera.lockForConfiguration()
            camera.videoZoomFactor = 1
            camera.setExposureTargetBias(0, completionHandler: nil)
            camera.unlockForConfiguration()
        }
        let session = try makeSession(devices: [camera], outputs: [])
        let zoom = AVCaptureSystemZoomSlider(device: camera)
        let bias = AVCaptureSystemExposureBiasSlider(device: camera)
        let speed = AVCaptureSlider("Speed", symbolName: "hare", values: [0.5, 1, 2])
        speed.localizedValueFormat = "%@ times"
        let level = AVCaptureSlider("Level", symbolName: "dial.low", in: 0...1)
        level.localizedValueFormat = "%.2f"
        level.value = 0.25
        let picker = AVCaptureIndexPicker("Look", symbolName: "camera.filters", localizedIndexTitles: ["Vivid", "Mono"])
        for control in [zoom, bias, speed, level, picker] as [AVCaptureControl] { session.addControl(control) }
        #expect(zoom.appearance?.isEnabled == false, "no controls delegate yet: shown, but not live")
        let delegate = ControlsDelegate()
        session.setControlsDelegate(delegate, queue: DispatchQueue(label: "controls"))

        let zoomShown = try #require(zoom.appearance)
        #expect(zoomShown.title == "Zoom" && zoomShown.kind == .slider && zoomShown.isEnabled)
        #expect(zoomShown.minimum == 1 && zoomShown.maximum == Double(camera.maxAvailableVideoZoomFactor))
        #expect(zoomShown.valueText == "1.0x" && zoomShown.fraction == 0 && zoomShown.step == nil)
        zoom.userDidSetAppearanceValue(zoomShown.value(atFraction: 0.2))
        #expect(abs(camera.videoZoomFactor - (1 + 0.2 * (camera.maxAvailableVideoZoomFactor - 1))) < 1e-9)
        #expect(zoom.appearance?.valueText == String(format: "%.1fx", camera.videoZoomFactor))

        bias.userDidSetAppearanceValue(0.7)
        #expect(camera.exposureTargetBias == 0.7 && bias.appearance?.valueText == "+0.7 EV")
        #expect(bias.appearance?.title == "Exposure")
        #expect(abs((bias.appearance?.fraction ?? 0) - (0.7 + 8) / 16) < 1e-6)

        #expect(speed.appearance?.valueText == "0.5 times" && speed.appearance?.maximum == 2)
        speed.userDidSetAppearanceValue(1.4)
        #expect(speed.value == 1 && speed.appearance?.valueText == "1 times")
        #expect(level.appearance?.valueText == "0.25")
        #expect(abs((level.appearance?.value(movedBy: 1) ?? 0) - 0.3) < 1e-9, "a twentieth of the range up")
        #expect(picker.appearance?.kind == .picker && picker.appearance?.step == 1)
        picker.userDidSetAppearanceValue(0.8)
        #expect(picker.selectedIndex == 1 && picker.appearance?.valueText == "Mono")
        picker.userDidSetAppearanceValue(.nan)
        #expect(picker.selectedIndex == 1)
    }

    @Test("The system exposure bias slider sets the camera's target bias within its range")
    func systemExposureBiasSlider() throws {
        let camera = VirtualDevices.back
        defer {
            try? camera.lockForConfiguration()
            camera.setExposureTargetBias(0, completionHandler: nil)
            camera.unlockForConfiguration()
        }
        let session = try makeSession(devices: [camera], outputs: [])
        let slider = AVCaptureSystemExposureBiasSlider(device: camera)
        session.addControl(slider)
        let delegate = ControlsDelegate()
        session.setControlsDelegate(delegate, queue: DispatchQueue(label: "controls"))
        slider.userDidSetValue(1.5)
        #expect(camera.exposureTargetBias == 1.5 && slider.value == 1.5)
        slider.userDidSetValue(-100)
        #expect(camera.exposureTargetBias == camera.minExposureTargetBias)
    }
}

/// Counts activations.
final class ControlsDelegate: NSObject, AVCaptureSessionControlsDelegate, @unchecked Sendable {
    let activations = Mutex(0)
    func sessionControlsDidBecomeActive(_ session: AVCaptureSession) { activations.withLock { $0 += 1 } }
    func sessionControlsDidBecomeInactive(_ session: AVCaptureSession) {}
}
