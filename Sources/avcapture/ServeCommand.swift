import ArgumentParser
import CameraControllerExample
import Foundation
import OpenAVCapture
import OpenAVCaptureWeb

/// `avcapture serve`: the camera app in a browser. The page's controls drive the example's CameraController.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Serve the camera app to a browser: live preview, focus, photos, recording.",
        discussion: """
            Open the printed address. Tap the picture to focus, double-tap to expose; photos and movies go in the \
            working directory and are listed on the page for download. It listens on loopback only unless given \
            --token and --tls-cert/--tls-key (or --insecure); then every request must carry the token: the printed \
            address has it once, the page keeps it in a cookie, scripts send Authorization: Bearer T. /metrics \
            serves Prometheus metrics. With --hls the same \
            camera is also published as HLS (fragmented MP4 segments, H.264 and AAC), served at /live/stream.m3u8 \
            for players and other machines; its segments live in a temporary directory removed at exit. Several \
            --video options show the first camera and the others over it, picture in picture, in the page's \
            stream (each a quarter of the picture's width by default, bottom right, see --inset-corner and \
            --inset-width); the controls, photos, movies, HLS and RTSP are the first camera's.
            """)

    @OptionGroup var logging: LoggingOptions
    @Option(help: "Address and port to listen on, HOST:PORT (port 0 picks a free one).") var listen = "127.0.0.1:8080"
    @Option(help: "A secret every request must carry; required to listen beyond loopback.") var token: String?
    @OptionGroup var camera: PreviewCameraOptions
    @OptionGroup var microphone: MicrophoneOptions
    @Option(help: "How the picture fills the page.") var gravity: GravityChoice = .aspect
    @Option(help: "Session preset.") var preset: PresetChoice = .hd720
    @Option(help: "Viewers streaming at once; more are refused (503).") var maxViewers = 4
    @Flag(help: "Also publish the camera as HLS, served at /live/stream.m3u8.") var hls = false
    @OptionGroup var stream: HLSOptions
    @OptionGroup var security: ServeSecurityOptions
    @OptionGroup var metrics: MetricsOptions
    @OptionGroup(title: "RTSP") var rtsp: RTSPOptions

    func validate() throws {
        guard Self.parseListen(listen) != nil else {
            throw ValidationError("--listen '\(listen)' is not HOST:PORT, e.g. 127.0.0.1:8080 or [::1]:8080")
        }
        guard (1...64).contains(maxViewers) else { throw ValidationError("--max-viewers must be 1 ... 64") }
        if camera.isNone {
            throw ValidationError("the camera app needs a camera; --video none leaves none")
        }
        if !hls && stream.isGiven {
            throw ValidationError("--segment-duration and --playlist-size set the HLS stream; add --hls")
        }
    }

    /// A publishing output writing HLS into a new temporary directory, added to the camera app's session.
    private func addLiveStream(
        to session: AVCaptureSession
    ) throws -> (output: AVCapturePublishingOutput, directory: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "avcapture-serve-hls-\(getpid())-\(UUID().uuidString.prefix(8))")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw ToolFailure(
                .cannotCreate, "cannot make the HLS directory \(directory.path): \(error.localizedDescription)")
        }
        let output = AVCapturePublishingOutput(
            url: directory.appendingPathComponent(WebPreviewServer.livePlaylistName).path)
        stream.apply(to: output)
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        guard session.canAddOutput(output) else {
            try? FileManager.default.removeItem(at: directory)
            throw ToolFailure(.unavailable, "the camera app's session cannot take an HLS output")
        }
        session.addOutput(output)
        return (output, directory)
    }

    static func parseListen(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }

    func run() throws {
        try reportingFailures {
            let (host, port) = Self.parseListen(listen)!
            let cameraDevice = try DeviceSelector.device(camera.video, for: .video)
            let microphoneDevice = try DeviceSelector.device(microphone.audio, for: .audio)
            let directory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            let multiCam = camera.isPictureInPicture ? AVCaptureMultiCamSession() : nil
            if multiCam != nil, let cameraDevice { try PictureInPictureSetup.applySize(of: preset, to: cameraDevice) }
            let controller = CameraController(mediaDirectory: directory, session: multiCam ?? AVCaptureSession())
            let app = WebCameraApp(controller: controller)
            controller.delegate = app
            do {
                try controller.setupSession(
                    camera: cameraDevice, microphone: microphoneDevice, preset: preset.preset)
            } catch let error as AVError {
                throw ToolFailure(.unavailable, CaptureSetup.describe(error))
            }
            if microphoneDevice == nil, microphone.isNone {
                for input in controller.captureSession.inputs
                where (input as? AVCaptureDeviceInput)?.device.hasMediaType(.audio) == true {
                    controller.captureSession.removeInput(input)
                }
            }
            // The system zoom and exposure sliders, shown over the picture (preview) or as range inputs (serve).
            controller.addSystemControls()
            let live = try hls ? addLiveStream(to: controller.captureSession) : nil
            defer { if let live { try? FileManager.default.removeItem(at: live.directory) } }
            let layer = AVCaptureVideoPreviewLayer(session: controller.captureSession)
            layer.videoGravity = gravity.videoGravity
            let insets = try multiCam.map {
                try PictureInPictureSetup.insetLayers(
                    cameras: Array(camera.videos.dropFirst()), besides: controller.activeCamera, in: $0, preset: preset)
            } ?? []
            let server: WebPreviewServer
            do {
                var configuration = WebPreviewServer.Configuration(
                    host: host, port: port, token: token, maximumViewers: maxViewers, mediaDirectory: directory,
                    liveDirectory: live?.directory)
                security.apply(to: &configuration)
                configuration.metrics = CaptureMetrics()
                configuration.metrics?.watch(controller.captureSession)
                configuration.metrics?.watchFreeDisk(at: directory)
                server = try WebPreviewServer(
                    layer: layer, insets: insets, insetLayout: camera.layout, actions: app,
                    configuration: configuration,
                    log: { Terminal.error("avcapture serve: \($0)") })
            } catch {
                throw ToolFailure(.usage, "\(error)")
            }
            let exporter = try server.configuration.metrics.flatMap { try metrics.start(serving: $0) }
            defer { exporter?.stop() }
            let rtspServer = try rtsp.startServer(session: controller.captureSession)
            defer { rtspServer?.stop() }
            let watcher = SignalWatcher { _ in server.stop() }
            defer { withExtendedLifetime(watcher) {} }
            controller.startSession()
            let finished = DispatchSemaphore(value: 0)
            let failure = LockedBox<String?>(nil)
            let token = self.token
            Task {
                do {
                    try await server.run { url in
                        let query = token.map {
                            "?token=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
                        }
                        PreviewApp.say(
                            "listening on \(url.absoluteString)\(query ?? "")" + PictureInPictureSetup.describe(insets))
                    }
                } catch is CancellationError {
                } catch {
                    failure.value = "\(error)"
                }
                finished.signal()
            }
            finished.wait()
            app.finish()
            live?.output.stopPublishing()
            controller.stopSession()
            if let message = failure.value { throw ToolFailure(.unavailable, "the server stopped: \(message)") }
        }
    }
}

/// A value shared between a task and the thread waiting for it.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// The page's actions on the camera controller, and its reports printed one line each.
///
/// Threading: called from the server's tasks; the controller's own locking covers its calls, and this keeps none
/// of its own state but the recording's end signal.
final class WebCameraApp: CameraAppReports, WebCameraActions, @unchecked Sendable {
    func finish() { finishRecording() }

    func focus(atDevicePoint point: CGPoint) {
        controller.focus(at: point)
        PreviewApp.say("focus at \(PreviewApp.format(controller.activeCamera?.focusPointOfInterest ?? point))")
    }

    func expose(atDevicePoint point: CGPoint) {
        controller.expose(at: point)
        PreviewApp.say("expose at \(PreviewApp.format(controller.activeCamera?.exposurePointOfInterest ?? point))")
    }

    func resetFocusAndExposure() { controller.resetFocusAndExposureModes() }

    func switchCamera() -> Bool { controller.switchCameras() }

    func setFlashMode(_ mode: String) -> Bool {
        guard controller.cameraHasFlash else { return mode == "off" }
        controller.flashMode = ["on": .on, "auto": .auto][mode] ?? .off
        return true
    }

    func setTorchMode(_ mode: String) -> Bool {
        guard controller.cameraHasTorch else { return mode == "off" }
        controller.torchMode = ["on": .on, "auto": .auto][mode] ?? .off
        return true
    }

    func zoom(toValue value: Double) { controller.rampZoom(toValue: CGFloat(value)) }

    func takePhoto() { controller.captureStillImage() }

    func toggleRecording() {
        if controller.isRecording {
            controller.stopRecording()
        } else {
            controller.startRecording()
            PreviewApp.say("recording")
        }
    }

    func status() -> WebCameraStatus {
        let camera = controller.activeCamera
        let cameras = AVCaptureDevice.DiscoverySession(
            deviceTypes: [.builtInWideAngleCamera, .external], mediaType: .video, position: .unspecified
        ).devices.map(\.localizedName)
        let focus = camera?.focusPointOfInterest ?? CGPoint(x: 0.5, y: 0.5)
        let exposure = camera?.exposurePointOfInterest ?? CGPoint(x: 0.5, y: 0.5)
        return WebCameraStatus(
            camera: camera?.localizedName ?? "none", cameras: cameras, hasFlash: controller.cameraHasFlash,
            flashMode: PreviewApp.name(controller.flashMode), hasTorch: controller.cameraHasTorch,
            torchMode: PreviewApp.name(controller.torchMode), zoomValue: Double(controller.zoomValue),
            isRecording: controller.isRecording,
            recordedSeconds: controller.isRecording ? max(0, CMTimeGetSeconds(controller.recordedDuration)) : 0,
            audioLevel: controller.audioLevel, focusPoint: [Double(focus.x), Double(focus.y)],
            exposurePoint: [Double(exposure.x), Double(exposure.y)])
    }
}
