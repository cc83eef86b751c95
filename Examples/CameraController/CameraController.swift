// The camera app's controller, written as it is on iOS: one class owns the session, its camera input, a photo
// output and a movie file output, and offers what the app's buttons and gestures do. It imports only
// OpenAVCaptureShim (AVFoundation on Apple's platforms), so this same file builds there.
//
// Both of avcapture's front ends (`avcapture preview`, the window; `avcapture serve`, the browser) drive the
// engine through it, so this example is proven by being used.

import OpenAVCaptureShim

/// What the controller tells the app: failures to show, and the files it made.
public protocol CameraControllerDelegate: AnyObject {
    /// The device could not be configured as asked (locked elsewhere, a mode it lacks).
    func deviceConfigurationFailed(with error: any Error)
    /// A photo or a recording failed.
    func mediaCaptureFailed(with error: any Error)
    /// A photo was written.
    func cameraController(_ controller: CameraController, didSavePhotoAt url: URL)
    /// A recording was finished and written.
    func cameraController(_ controller: CameraController, didFinishRecordingTo url: URL)
}

/// The session and everything the camera app's controls do with it.
///
/// Threading: configuration (`setupSession`, `switchCameras`) and start/stop run on the caller's thread as the seed
/// does; control methods (focus, exposure, flash, torch, zoom) lock the device for configuration and may be
/// called from any thread, one at a time. Delegate calls arrive on the outputs' queues.
public final class CameraController: NSObject, @unchecked Sendable {
    public let captureSession: AVCaptureSession
    public weak var delegate: (any CameraControllerDelegate)?
    /// Where photos and movies go, named by date.
    public var mediaDirectory: URL
    /// The orientation stills and movies are recorded in (the device's orientation on a phone).
    public var captureOrientation: AVCaptureVideoOrientation = .landscapeRight

    private var activeVideoInput: AVCaptureDeviceInput?
    private let photoOutput = AVCapturePhotoOutput()
    private let movieOutput = AVCaptureMovieFileOutput()
    private let videoQueue = DispatchQueue(label: "CameraController.video")
    private var photoDelegates: [Int64: PhotoCaptureDelegate] = [:]
    private let lock = NSLock()
    private var exposureObservation: NSKeyValueObservation?
    /// The system sliders `addSystemControls()` put in the session, moved to the new camera by a switch.
    private var systemControls: [AnyObject] = []
    private let controlsQueue = DispatchQueue(label: "CameraController.controls")

    /// A controller of `session`: a plain `AVCaptureSession`, or an `AVCaptureMultiCamSession` to which a
    /// picture-in-picture app adds its other cameras (the controller's camera, microphone and outputs are connected
    /// automatically, so they are the session's first).
    public init(mediaDirectory: URL, session: AVCaptureSession = AVCaptureSession()) {
        self.mediaDirectory = mediaDirectory
        captureSession = session
    }

    // MARK: Session

    /// Adds the camera (`camera`, or the default one), a microphone when there is one, and the photo and movie
    /// outputs.
    public func setupSession(camera: AVCaptureDevice? = nil, microphone: AVCaptureDevice? = nil, preset: AVCaptureSession.Preset = .high) throws {
        captureSession.beginConfiguration()
        defer { captureSession.commitConfiguration() }
        if captureSession.canSetSessionPreset(preset) { captureSession.sessionPreset = preset }
        guard let videoDevice = camera ?? AVCaptureDevice.default(for: .video) else {
            throw AVError(.deviceNotConnected)
        }
        let videoInput = try AVCaptureDeviceInput(device: videoDevice)
        guard captureSession.canAddInput(videoInput) else { throw AVError(.sessionConfigurationChanged) }
        captureSession.addInput(videoInput)
        activeVideoInput = videoInput
        if let audioDevice = microphone ?? AVCaptureDevice.default(for: .audio) {
            let audioInput = try AVCaptureDeviceInput(device: audioDevice)
            if captureSession.canAddInput(audioInput) { captureSession.addInput(audioInput) }
        }
        if captureSession.canAddOutput(photoOutput) { captureSession.addOutput(photoOutput) }
        if captureSession.canAddOutput(movieOutput) { captureSession.addOutput(movieOutput) }
    }

    public func startSession() {
        if !captureSession.isRunning {
            videoQueue.sync { self.captureSession.startRunning() }
        }
    }

    public func stopSession() {
        if captureSession.isRunning {
            videoQueue.sync { self.captureSession.stopRunning() }
        }
    }

    // MARK: Cameras

    public var activeCamera: AVCaptureDevice? { activeVideoInput?.device }

    /// The first other camera, if the device has one.
    public var inactiveCamera: AVCaptureDevice? {
        guard cameraCount > 1 else { return nil }
        return cameras.first { $0.uniqueID != activeCamera?.uniqueID }
    }

    private var cameras: [AVCaptureDevice] {
        AVCaptureDevice.DiscoverySession(
            deviceTypes: [.builtInWideAngleCamera, .external], mediaType: .video, position: .unspecified
        ).devices
    }

    public var canSwitchCameras: Bool { cameraCount > 1 }
    public var cameraCount: Int { cameras.count }

    /// Replaces the camera with the other one; false when there is none or it cannot be added (the old one
    /// stays).
    @discardableResult
    public func switchCameras() -> Bool {
        guard canSwitchCameras, let device = inactiveCamera, let current = activeVideoInput else { return false }
        let videoInput: AVCaptureDeviceInput
        do {
            videoInput = try AVCaptureDeviceInput(device: device)
        } catch {
            delegate?.deviceConfigurationFailed(with: error)
            return false
        }
        captureSession.beginConfiguration()
        captureSession.removeInput(current)
        if captureSession.canAddInput(videoInput) {
            captureSession.addInput(videoInput)
            activeVideoInput = videoInput
        } else {
            captureSession.addInput(current)
        }
        captureSession.commitConfiguration()
        let switched = activeVideoInput === videoInput
        #if os(Linux) || os(iOS)
            if switched, #available(iOS 18.0, *), !lock.withLock({ systemControls.isEmpty }) { addSystemControls() }
        #endif
        return switched
    }

    // MARK: Focus and exposure

    public var cameraSupportsTapToFocus: Bool { activeCamera?.isFocusPointOfInterestSupported ?? false }

    /// Focuses once at a point of the device's picture ((0,0) top left, (1,1) bottom right).
    public func focus(at point: CGPoint) {
        guard let device = activeCamera, device.isFocusPointOfInterestSupported,
            device.isFocusModeSupported(.autoFocus)
        else { return }
        configure(device) {
            $0.focusPointOfInterest = point
            $0.focusMode = .autoFocus
        }
    }

    public var cameraSupportsTapToExpose: Bool { activeCamera?.isExposurePointOfInterestSupported ?? false }

    /// Exposes for a point, then locks the exposure once the camera has settled (the seed's KVO dance).
    public func expose(at point: CGPoint) {
        guard let device = activeCamera, device.isExposurePointOfInterestSupported,
            device.isExposureModeSupported(.continuousAutoExposure)
        else { return }
        configure(device) {
            $0.exposurePointOfInterest = point
            $0.exposureMode = .continuousAutoExposure
        }
        guard device.isExposureModeSupported(.locked) else { return }
        exposureObservation = device.observe(\.isAdjustingExposure, options: [.new]) { [weak self] device, _ in
            guard !device.isAdjustingExposure, device.isExposureModeSupported(.locked) else { return }
            self?.exposureObservation?.invalidate()
            self?.exposureObservation = nil
            self?.configure(device) { $0.exposureMode = .locked }
        }
    }

    /// Continuous autofocus and auto exposure at the centre again.
    public func resetFocusAndExposureModes() {
        guard let device = activeCamera else { return }
        let centre = CGPoint(x: 0.5, y: 0.5)
        configure(device) { device in
            if device.isFocusPointOfInterestSupported { device.focusPointOfInterest = centre }
            if device.isFocusModeSupported(.continuousAutoFocus) { device.focusMode = .continuousAutoFocus }
            if device.isExposurePointOfInterestSupported { device.exposurePointOfInterest = centre }
            if device.isExposureModeSupported(.continuousAutoExposure) {
                device.exposureMode = .continuousAutoExposure
            }
        }
    }

    // MARK: Flash and torch

    public var cameraHasFlash: Bool { activeCamera?.hasFlash ?? false }

    /// The flash mode the next photo uses (`.off` when the camera has none).
    public var flashMode: AVCaptureDevice.FlashMode {
        get { lock.withLock { storedFlashMode } }
        set {
            guard photoOutput.supportedFlashModes.contains(newValue) else { return }
            lock.withLock { storedFlashMode = newValue }
        }
    }
    private var storedFlashMode: AVCaptureDevice.FlashMode = .off

    public var cameraHasTorch: Bool { activeCamera?.hasTorch ?? false }

    public var torchMode: AVCaptureDevice.TorchMode {
        get { activeCamera?.torchMode ?? .off }
        set {
            guard let device = activeCamera, device.isTorchModeSupported(newValue) else { return }
            configure(device) { $0.torchMode = newValue }
        }
    }

    // MARK: Zoom

    public var cameraSupportsZoom: Bool { (activeCamera?.activeFormat.videoMaxZoomFactor ?? 1) > 1 }

    /// The largest zoom the app offers: the camera's, capped at 4x as the seed does.
    public var maxZoomFactor: CGFloat { min(activeCamera?.activeFormat.videoMaxZoomFactor ?? 1, 4) }

    /// Sets the zoom at once, `value` from 0 (1x) to 1 (`maxZoomFactor`).
    public func setZoomValue(_ value: CGFloat) {
        guard let device = activeCamera, !device.isRampingVideoZoom else { return }
        configure(device) { $0.videoZoomFactor = pow(self.maxZoomFactor, max(0, min(1, value))) }
    }

    /// Ramps the zoom smoothly toward `value` (0 ... 1), as holding a zoom button does.
    public func rampZoom(toValue value: CGFloat) {
        guard let device = activeCamera else { return }
        let factor = pow(maxZoomFactor, max(0, min(1, value)))
        configure(device) { $0.ramp(toVideoZoomFactor: factor, withRate: 1) }
    }

    public func cancelZoom() {
        guard let device = activeCamera else { return }
        configure(device) { $0.cancelVideoZoomRamp() }
    }

    /// The zoom now as a value 0 ... 1.
    public var zoomValue: CGFloat {
        guard let device = activeCamera, maxZoomFactor > 1 else { return 0 }
        return log(device.videoZoomFactor) / log(maxZoomFactor)
    }

    // MARK: Capture controls

    #if os(Linux) || os(iOS)
        /// Shows the system zoom and exposure sliders for the camera among the session's controls (iOS 18's
        /// Camera Control; the preview window and the web page draw them here), with the controller as the controls
        /// delegate. A later `switchCameras()` moves them to the new camera.
        @available(iOS 18.0, *)
        public func addSystemControls() {
            guard captureSession.supportsControls, let device = activeCamera else { return }
            captureSession.beginConfiguration()
            for case let control as AVCaptureControl in lock.withLock({ systemControls }) {
                captureSession.removeControl(control)
            }
            let controls: [AVCaptureControl] = [
                AVCaptureSystemZoomSlider(device: device), AVCaptureSystemExposureBiasSlider(device: device),
            ]
            let added = controls.filter { captureSession.canAddControl($0) }
            for control in added { captureSession.addControl(control) }
            captureSession.commitConfiguration()
            lock.withLock { systemControls = added }
            captureSession.setControlsDelegate(self, queue: controlsQueue)
        }
    #endif

    // MARK: Stills

    /// Takes a photo in `captureOrientation` with the flash mode set, and writes it to `mediaDirectory`.
    public func captureStillImage() {
        guard let connection = photoOutput.connection(with: .video) else { return }
        if connection.isVideoOrientationSupported { connection.videoOrientation = captureOrientation }
        let settings = AVCapturePhotoSettings(format: [AVVideoCodecKey: AVVideoCodecType.jpeg])
        if photoOutput.supportedFlashModes.contains(flashMode) { settings.flashMode = flashMode }
        let url = uniqueURL(extension: "jpg", prefix: "photo")
        let captureDelegate = PhotoCaptureDelegate(url: url) { [weak self] result in
            guard let self else { return }
            _ = self.lock.withLock { self.photoDelegates.removeValue(forKey: settings.uniqueID) }
            switch result {
            case .success(let url): self.delegate?.cameraController(self, didSavePhotoAt: url)
            case .failure(let error): self.delegate?.mediaCaptureFailed(with: error)
            }
        }
        lock.withLock { photoDelegates[settings.uniqueID] = captureDelegate }
        photoOutput.capturePhoto(with: settings, delegate: captureDelegate)
    }

    // MARK: Recording

    public var isRecording: Bool { movieOutput.isRecording }

    /// Starts a movie in `mediaDirectory`.
    public func startRecording() {
        guard !isRecording, let connection = movieOutput.connection(with: .video) else { return }
        if connection.isVideoOrientationSupported { connection.videoOrientation = captureOrientation }
        movieOutput.startRecording(to: uniqueURL(extension: "mov", prefix: "movie"), recordingDelegate: self)
    }

    public func stopRecording() {
        if isRecording { movieOutput.stopRecording() }
    }

    /// How long the recording in progress has run.
    public var recordedDuration: CMTime { movieOutput.recordedDuration }

    /// The microphone's level now, in dBFS (the app's meter), or nil without a microphone.
    public var audioLevel: Float? { movieOutput.connection(with: .audio)?.audioChannels.first?.averagePowerLevel }

    // MARK: Helpers

    private func configure(_ device: AVCaptureDevice, _ change: (AVCaptureDevice) -> Void) {
        do {
            try device.lockForConfiguration()
            change(device)
            device.unlockForConfiguration()
        } catch {
            delegate?.deviceConfigurationFailed(with: error)
        }
    }

    /// `prefix-2025-01-31-120000-123.ext`: the date, to the millisecond, so two quick photos differ.
    private func uniqueURL(extension pathExtension: String, prefix: String) -> URL {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd-HHmmss-SSS"
        return mediaDirectory.appendingPathComponent("\(prefix)-\(formatter.string(from: Date())).\(pathExtension)")
    }
}

extension CameraController: AVCaptureFileOutputRecordingDelegate {
    public func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        if let error {
            delegate?.mediaCaptureFailed(with: error)
        } else {
            delegate?.cameraController(self, didFinishRecordingTo: outputFileURL)
        }
    }
}

#if os(Linux) || os(iOS)
    /// The controls need a delegate to become active; the app has nothing to hide or show around them.
    @available(iOS 18.0, *)
    extension CameraController: AVCaptureSessionControlsDelegate {
        public func sessionControlsDidBecomeActive(_ session: AVCaptureSession) {}
        public func sessionControlsWillEnterFullscreenAppearance(_ session: AVCaptureSession) {}
        public func sessionControlsWillExitFullscreenAppearance(_ session: AVCaptureSession) {}
        public func sessionControlsDidBecomeInactive(_ session: AVCaptureSession) {}
    }
#endif

/// One photo's delegate: writes the file and reports, then is released.
private final class PhotoCaptureDelegate: NSObject, AVCapturePhotoCaptureDelegate, @unchecked Sendable {
    let url: URL
    let completion: (Result<URL, any Error>) -> Void

    init(url: URL, completion: @escaping (Result<URL, any Error>) -> Void) {
        self.url = url
        self.completion = completion
    }

    func photoOutput(_ output: AVCapturePhotoOutput, didFinishProcessingPhoto photo: AVCapturePhoto, error: (any Error)?) {
        if let error { return completion(.failure(error)) }
        guard let data = photo.fileDataRepresentation() else { return completion(.failure(AVError(.unknown))) }
        do {
            try data.write(to: url)
            completion(.success(url))
        } catch {
            completion(.failure(error))
        }
    }
}
