import ArgumentParser
import CameraControllerExample
import Foundation
import OpenAVCapture
import OpenAVCaptureUI

/// `avcapture preview`: the camera in a window, with the camera app's controls (the seed's camera controller does
/// the work; the window only shows the layer and reports clicks and keys).
struct PreviewCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preview", abstract: "Show a camera in a window, with the camera app's controls.",
        discussion: """
            Click to focus at a point, double-click to expose for it, R to reset both, F to cycle the flash mode, \
            T the torch, + and - to zoom (ramped), Space for a photo, Enter to start or stop recording, Esc or Q \
            to quit. The camera's zoom and exposure sliders (the session's capture controls) are drawn at the \
            bottom left of the picture: drag one, or choose one with Up and Down and move it with Left and Right. \
            Photos and movies go in the working directory, named by date. The window's title shows the \
            frame rate, dropped frames and the microphone's level; each action is also printed, one line each. \
            Several --video options show the first camera in the window and the others over it, picture in \
            picture (each a quarter of the window's width by default, bottom right, see --inset-corner and \
            --inset-width); the controls act on the first camera.
            """)

    @OptionGroup var logging: LoggingOptions
    @OptionGroup var camera: PreviewCameraOptions
    @OptionGroup var microphone: MicrophoneOptions
    @Option(help: "How the picture fills the window.") var gravity: GravityChoice = .aspect
    @Option(help: "Orientation (landscape-right is the sensor's).") var orientation: OrientationChoice = .landscapeRight
    @Flag(help: "Mirror the preview left to right (as a front camera's is).") var mirror = false
    @Option(help: "Session preset.") var preset: PresetChoice = .high
    @Option(help: "The window's size, WIDTHxHEIGHT.") var size: String = "960x540"

    func validate() throws {
        guard Self.parseSize(size) != nil else { throw ValidationError("--size '\(size)' is not WIDTHxHEIGHT, e.g. 960x540") }
        if camera.isNone { throw ValidationError("a preview needs a camera; --video none leaves none") }
    }

    static func parseSize(_ text: String) -> CGSize? {
        let parts = text.lowercased().split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, parts.allSatisfy({ (16...8192).contains($0) }) else { return nil }
        return CGSize(width: parts[0], height: parts[1])
    }

    func run() throws {
        try reportingFailures {
            let cameraDevice = try DeviceSelector.device(camera.video, for: .video)
            let microphoneDevice = try DeviceSelector.device(microphone.audio, for: .audio)
            let directory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            let multiCam = camera.isPictureInPicture ? AVCaptureMultiCamSession() : nil
            if multiCam != nil, let cameraDevice { try PictureInPictureSetup.applySize(of: preset, to: cameraDevice) }
            let controller = CameraController(mediaDirectory: directory, session: multiCam ?? AVCaptureSession())
            let app = PreviewApp(controller: controller)
            controller.delegate = app
            do {
                try controller.setupSession(
                    camera: cameraDevice, microphone: microphoneDevice ?? nil, preset: preset.preset)
            } catch let error as AVError {
                throw ToolFailure(.unavailable, CaptureSetup.describe(error))
            }
            if microphoneDevice == nil, microphone.isNone {
                // setupSession adds the default microphone when given none; --audio none means none.
                for input in controller.captureSession.inputs
                where (input as? AVCaptureDeviceInput)?.device.hasMediaType(.audio) == true {
                    controller.captureSession.removeInput(input)
                }
            }
            // The system zoom and exposure sliders, shown over the picture (preview) or as range inputs (serve).
            controller.addSystemControls()
            let layer = AVCaptureVideoPreviewLayer(session: controller.captureSession)
            layer.videoGravity = gravity.videoGravity
            let insets = try multiCam.map {
                try PictureInPictureSetup.insetLayers(
                    cameras: Array(camera.videos.dropFirst()), besides: controller.activeCamera, in: $0, preset: preset)
            } ?? []
            let videoOrientation = orientation.videoOrientation
            controller.captureOrientation = videoOrientation
            if let connection = layer.connection {
                if connection.isVideoOrientationSupported { connection.videoOrientation = videoOrientation }
                if mirror, connection.isVideoMirroringSupported {
                    connection.automaticallyAdjustsVideoMirroring = false
                    connection.isVideoMirrored = true
                }
            }
            let window = PreviewWindow(
                layer: layer, insets: insets, insetLayout: camera.layout,
                title: "avcapture preview: \(controller.activeCamera?.localizedName ?? "camera")",
                size: Self.parseSize(size)!)
            app.attach(window)
            let watcher = SignalWatcher { _ in window.stop() }
            controller.startSession()
            app.announceWhenShowing()
            defer { withExtendedLifetime(watcher) {} }
            do {
                try window.run()
            } catch {
                controller.stopSession()
                throw ToolFailure(.unavailable, "\(error)")
            }
            app.finish()
            controller.stopSession()
        }
    }
}

/// What the window's clicks and keys do, through the camera controller; prints one line per action.
///
/// Threading: events arrive on the window's thread, the controller's reports on its outputs' queues, the status
/// on a timer's queue; the little state it keeps is guarded by a lock.
final class PreviewApp: CameraAppReports, @unchecked Sendable {
    private weak var window: PreviewWindow?
    private let lock = NSLock()
    private var zoomTarget: CGFloat = 0
    private var lastDrawn = 0
    private var lastTick = Date()
    private var fps = 0.0
    private var statusTimer: (any DispatchSourceTimer)?

    func attach(_ window: PreviewWindow) {
        self.window = window
        window.setEventHandler { [weak self] event in self?.handle(event) }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "avcapture.preview.status"))
        timer.schedule(deadline: .now() + 0.5, repeating: 0.5)
        timer.setEventHandler { [weak self] in self?.updateStatus() }
        timer.resume()
        statusTimer = timer
    }

    /// Prints "showing …" once the first frame is on the screen (tests and scripts wait for it).
    func announceWhenShowing() {
        DispatchQueue.global().async { [weak self] in
            guard let window = self?.window, window.waitForFirstFrame(timeout: 30) else { return }
            let camera = self?.controller.activeCamera?.localizedName ?? "the camera"
            let insets = PictureInPictureSetup.describe(window.insets)
            Self.say("showing \(camera) (renderer \(window.rendererName))" + insets)
        }
    }

    /// Ends a recording in progress and waits for its file.
    func finish() {
        statusTimer?.cancel()
        finishRecording()
    }

    /// One line on stdout, written at once (unbuffered), so a script reading the pipe sees it as it happens.
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    private func handle(_ event: PreviewWindow.Event) {
        guard let window else { return }
        switch event {
        case .click(let point, let count):
            let devicePoint = window.layer.captureDevicePointConverted(fromLayerPoint: point)
            guard (0...1).contains(devicePoint.x), (0...1).contains(devicePoint.y) else { return }
            let box = CGRect(x: point.x - 50, y: point.y - 50, width: 100, height: 100)
            if count >= 2 {
                controller.expose(at: devicePoint)
                window.addMarker(.init(rect: box.insetBy(dx: -10, dy: -10), color: 0xFFA500, until: Date() + 1))
                Self.say("expose at \(Self.format(controller.activeCamera?.exposurePointOfInterest ?? devicePoint))")
            } else {
                controller.focus(at: devicePoint)
                window.addMarker(.init(rect: box, color: 0x3399FF, until: Date() + 1))
                Self.say("focus at \(Self.format(controller.activeCamera?.focusPointOfInterest ?? devicePoint))")
            }
        case .key("r"):
            controller.resetFocusAndExposureModes()
            Self.say("focus and exposure reset")
        case .key("f"):
            guard controller.cameraHasFlash else { return Self.say("this camera has no flash") }
            let next: [AVCaptureDevice.FlashMode: AVCaptureDevice.FlashMode] = [.off: .on, .on: .auto, .auto: .off]
            controller.flashMode = next[controller.flashMode] ?? .off
            Self.say("flash \(Self.name(controller.flashMode))")
        case .key("t"):
            guard controller.cameraHasTorch else { return Self.say("this camera has no torch") }
            let next: [AVCaptureDevice.TorchMode: AVCaptureDevice.TorchMode] = [.off: .on, .on: .auto, .auto: .off]
            controller.torchMode = next[controller.torchMode] ?? .off
            Self.say("torch \(Self.name(controller.torchMode))")
        case .key("+"), .key("-"):
            guard controller.cameraSupportsZoom else { return Self.say("this camera cannot zoom") }
            let step: CGFloat = event == .key("+") ? 0.25 : -0.25
            let target = lock.withLock {
                zoomTarget = max(0, min(1, zoomTarget + step))
                return zoomTarget
            }
            controller.rampZoom(toValue: target)
            Self.say(String(format: "zoom to %.2fx", pow(controller.maxZoomFactor, target)))
        case .key("space"):
            controller.captureStillImage()
        case .key("return"):
            if controller.isRecording {
                controller.stopRecording()
            } else {
                controller.startRecording()
                Self.say("recording")
            }
        case .key("escape"), .key("q"):
            window.stop()
        default:
            break
        }
    }

    private func updateStatus() {
        guard let window else { return }
        let statistics = window.statistics
        let now = Date()
        let rate = lock.withLock {
            let elapsed = now.timeIntervalSince(lastTick)
            if elapsed > 0 { fps = Double(statistics.framesDrawn - lastDrawn) / elapsed }
            (lastDrawn, lastTick) = (statistics.framesDrawn, now)
            return fps
        }
        var parts = [
            String(format: "%.1f fps", rate), "\(statistics.framesSkipped + statistics.framesDroppedUpstream) dropped",
        ]
        if let level = controller.audioLevel {
            parts.append(String(format: "%.0f dBFS", level))
            window.audioLevel = (max(-60, min(0, level)) + 60) / 60
        }
        if controller.isRecording {
            let seconds = Int(CMTimeGetSeconds(controller.recordedDuration).rounded(.down))
            parts.append(String(format: "REC %02d:%02d", seconds / 60, seconds % 60))
        }
        window.status = parts.joined(separator: " · ")
    }

    static func format(_ point: CGPoint) -> String { String(format: "(%.4f, %.4f)", point.x, point.y) }

    static func name(_ mode: AVCaptureDevice.FlashMode) -> String {
        switch mode {
        case .on: "on"
        case .auto: "auto"
        default: "off"
        }
    }

    static func name(_ mode: AVCaptureDevice.TorchMode) -> String {
        switch mode {
        case .on: "on"
        case .auto: "auto"
        default: "off"
        }
    }
}
