import CaptureDrivers
import CaptureGraph
import Foundation
import MediaCodecs
import Synchronization

/// Captures photos from a session's video: JPEG, HEIC (where libheif can encode HEVC) or pixels, with EXIF, the
/// flash, and the connection's orientation recorded as the EXIF orientation (pixels stay as captured).
///
/// `capturePhoto(with:delegate:)` follows Apple's protocol: the delegate (held weakly, as Apple's; keep it alive
/// until `didFinishCaptureFor`) hears `willBeginCaptureFor`, `willCapturePhotoFor`, `didCapturePhotoFor`,
/// `didFinishProcessingPhoto` and `didFinishCaptureFor`, in that order, on the output's serial queue. The photo is
/// one of the stream's frames, so a recording or a data output of the same session loses nothing; with the flash
/// it is the frame the flash lit, brighter than the frames around it.
///
/// Size: the session's video format; the `.photo` preset streams the device's photo format (4032x3024 on the
/// virtual back camera).
///
/// Flash: `supportedFlashModes` are the device's (`[.off]` for a camera without a flash, such as the virtual front
/// camera). `.on` fires; `.auto` fires when the device says the scene is dark (`isFlashScene`).
///
/// Zero shutter lag (on by default where supported, as for apps linked on iOS 17): the photo is the frame that was
/// current when `capturePhoto` was called, kept by the output (it holds the newest frame of its connection, one
/// device buffer), not the next one; not for a flash that fires (the flash lights a later frame), a device in
/// `.custom` exposure, or a high-resolution still (rendered on request). Responsive capture: without it, a capture
/// asked for while an earlier one is still being taken or processed waits for that one to finish (Apple's
/// `captureReadiness` says `.notReadyWaitingForProcessing`), so it gets a later frame; with it, each capture takes its
/// frame at once and the processing queues.
///
/// Threading: thread safe. Delegate methods run on an internal serial queue, one capture after another.
open class AVCapturePhotoOutput: AVCaptureOutput, KeyValueObservable, @unchecked Sendable {
    /// The output's key-value observers (`isFlashScene`).
    public let keyValueObservers = KeyValueObserverRegistry()
    private let engine = StillCaptureEngine(label: "OpenAVCapture.AVCapturePhotoOutput")
    private let usedSettings = Mutex(Set<Int64>())
    private let highResolution = Mutex(false)
    private let sceneMonitoring = Mutex<UncheckedSendable<AVCapturePhotoSettings?>>(UncheckedSendable(nil))
    /// The camera whose state `isFlashScene` follows, and the token of that observation.
    private let sceneObservation = Mutex<(controls: (any CameraControlling)?, token: Int?)>((nil, nil))

    private let maxQualityPrioritization = Mutex(QualityPrioritization.balanced)
    /// What the application asked for; each counts only while supported.
    private let responsiveness = Mutex(
        (zeroShutterLag: true, responsive: false, fastPrioritization: false, deferredDelivery: false))
    /// Captures started and not finished, and those waiting for them (responsive capture off).
    private let inFlight = Mutex((count: 0, waiting: [@Sendable () -> Void]()))

    public override init() {
        super.init()
        engine.recentFrames.isEnabled = true
    }

    /// How much a photo may favour quality over speed, with Apple's raw values.
    public enum QualityPrioritization: Int, Sendable, Hashable, Comparable {
        case speed = 1
        case balanced = 2
        case quality = 3

        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The highest `photoQualityPrioritization` photo settings may ask for; `.balanced` by default, as Apple's.
    /// Every value gives the same photo here (see ``AVCapturePhotoSettings/photoQualityPrioritization``).
    open var maxPhotoQualityPrioritization: QualityPrioritization {
        get { maxQualityPrioritization.withLock { $0 } }
        set { maxQualityPrioritization.withLock { $0 = newValue } }
    }

    // MARK: What it can do

    /// The codecs a photo can be encoded with: JPEG, then HEVC (HEIC) where libheif has an HEVC encoder.
    open var availablePhotoCodecTypes: [AVVideoCodecType] { HEICEncoder.isAvailable ? [.jpeg, .hevc] : [.jpeg] }

    /// The pixel formats an uncompressed photo can have, NV12 first.
    open var availablePhotoPixelFormatTypes: [OSType] { VideoOutputPipeline.supportedPixelFormats }

    /// The file types `fileDataRepresentation()` can have.
    open var availablePhotoFileTypes: [AVFileType] { HEICEncoder.isAvailable ? [.jpg, .heic] : [.jpg] }

    /// The flash modes of the connected camera: `.off`, and `.on` and `.auto` when it has a flash.
    open var supportedFlashModes: [AVCaptureDevice.FlashMode] {
        guard let device else { return [] }
        return [AVCaptureDevice.FlashMode.off, .on, .auto].filter { $0 == .off || device.isFlashModeSupported($0) }
    }

    /// Whether photos may be taken at the device's highest still resolution (`isHighResolutionPhotoEnabled`).
    open var isHighResolutionCaptureEnabled: Bool {
        get { highResolution.withLock { $0 } }
        set { highResolution.withLock { $0 = newValue } }
    }

    /// The settings whose flash mode `isFlashScene` judges the scene for. With `.auto`, the output follows the
    /// camera's judgement of the scene (set it once the output has its video connection).
    open var photoSettingsForSceneMonitoring: AVCapturePhotoSettings? {
        get { sceneMonitoring.withLock { $0.value } }
        set {
            sceneMonitoring.withLock { $0 = UncheckedSendable(newValue) }
            followScene(newValue?.flashMode == .auto ? device?.backend.controls : nil)
        }
    }

    /// Whether the flash would fire for `.auto` now: the camera says the scene is dark. Key-value observable
    /// while `photoSettingsForSceneMonitoring` has `.auto`; changes are announced on the camera's capture thread.
    open var isFlashScene: Bool {
        guard let device, photoSettingsForSceneMonitoring?.flashMode == .auto else { return false }
        return StillCaptureEngine.firesFlash(.auto, device: device)
    }

    /// Observes `controls` (nil: nothing) for changes of the scene's darkness, announcing them as `isFlashScene`.
    private func followScene(_ controls: (any CameraControlling)?) {
        let token = controls?.addStateObserver { [weak self] old, new in
            guard let self, old.isFlashScene != new.isFlashScene else { return }
            keyValueObservers.notifyChange(
                \AVCapturePhotoOutput.isFlashScene, of: self, from: old.isFlashScene, to: new.isFlashScene)
        }
        let previous = sceneObservation.withLock { observation in
            defer { observation = (controls, token) }
            return observation
        }
        if let token = previous.token { previous.controls?.removeStateObserver(token) }
    }

    deinit {
        let observation = sceneObservation.withLock { $0 }
        if let token = observation.token { observation.controls?.removeStateObserver(token) }
    }

    /// The camera of the video connection.
    private var device: AVCaptureDevice? {
        // Only while in a session: a port's input is not kept alive by the port.
        guard session != nil else { return nil }
        return (connection(with: .video)?.inputPorts.first?.input as? AVCaptureDeviceInput)?.device
    }

    // MARK: Responsive capture

    /// Whether photos can be taken with zero shutter lag: the output is in a session with a camera.
    open var isZeroShutterLagSupported: Bool { device != nil }

    /// Whether photos are the frame current when `capturePhoto` is called (true by default while supported, as
    /// Apple's for apps linked on iOS 17). Setting true while unsupported traps (Apple raises
    /// NSInvalidArgumentException).
    open var isZeroShutterLagEnabled: Bool {
        get { isZeroShutterLagSupported && responsiveness.withLock { $0.zeroShutterLag } }
        set {
            precondition(
                !newValue || isZeroShutterLagSupported,
                "AVCapturePhotoOutput: isZeroShutterLagEnabled needs isZeroShutterLagSupported (add the output to a"
                    + " session with a camera first; Apple raises NSInvalidArgumentException)")
            responsiveness.withLock { $0.zeroShutterLag = newValue }
            engine.recentFrames.isEnabled = newValue
        }
    }

    /// Whether responsive capture can be enabled: with zero shutter lag enabled.
    open var isResponsiveCaptureSupported: Bool { isZeroShutterLagEnabled }

    /// Whether captures overlap: each takes its frame at once while earlier ones are still processed (false by
    /// default, as Apple's). Setting true while unsupported traps (Apple raises NSInvalidArgumentException).
    open var isResponsiveCaptureEnabled: Bool {
        get { isResponsiveCaptureSupported && responsiveness.withLock { $0.responsive } }
        set {
            precondition(
                !newValue || isResponsiveCaptureSupported,
                "AVCapturePhotoOutput: isResponsiveCaptureEnabled needs isResponsiveCaptureSupported (zero shutter lag"
                    + " enabled; Apple raises NSInvalidArgumentException)")
            responsiveness.withLock { $0.responsive = newValue }
        }
    }

    /// Whether fast capture prioritization can be enabled: with responsive capture enabled.
    open var isFastCapturePrioritizationSupported: Bool { isResponsiveCaptureEnabled }

    /// Whether captures in quick succession may favour speed over quality (false by default). Kept and ruled as
    /// Apple's; it changes nothing here, where every quality prioritization gives the same photo. Setting true
    /// while unsupported traps (Apple raises NSInvalidArgumentException).
    open var isFastCapturePrioritizationEnabled: Bool {
        get { isFastCapturePrioritizationSupported && responsiveness.withLock { $0.fastPrioritization } }
        set {
            precondition(
                !newValue || isFastCapturePrioritizationSupported,
                "AVCapturePhotoOutput: isFastCapturePrioritizationEnabled needs isFastCapturePrioritizationSupported"
                    + " (responsive capture enabled; Apple raises NSInvalidArgumentException)")
            responsiveness.withLock { $0.fastPrioritization = newValue }
        }
    }

    /// Whether photos can be delivered deferred: the output is in a session with a camera.
    open var isAutoDeferredPhotoDeliverySupported: Bool { device != nil }

    /// Whether JPEG and HEIC photos are delivered deferred (false by default, as Apple's): the delegate's
    /// `photoOutput(_:didFinishCapturingDeferredPhotoProxy:error:)` gets an ``AVCaptureDeferredPhotoProxy`` with a
    /// quick preview as soon as the frame is taken, instead of `didFinishProcessingPhoto`, and the encoding finishes
    /// later (the proxy's `fileDataRepresentation()` gives it). Uncompressed photos are never deferred: nothing is
    /// left to do. Setting true while unsupported traps (Apple raises NSInvalidArgumentException).
    open var isAutoDeferredPhotoDeliveryEnabled: Bool {
        get { isAutoDeferredPhotoDeliverySupported && responsiveness.withLock { $0.deferredDelivery } }
        set {
            precondition(
                !newValue || isAutoDeferredPhotoDeliverySupported,
                "AVCapturePhotoOutput: isAutoDeferredPhotoDeliveryEnabled needs isAutoDeferredPhotoDeliverySupported"
                    + " (add the output to a session with a camera first; Apple raises NSInvalidArgumentException)")
            responsiveness.withLock { $0.deferredDelivery = newValue }
        }
    }

    /// Runs `start` now, or, without responsive capture while another capture is in flight, once the captures
    /// before it have finished.
    private func startInTurn(_ start: @escaping @Sendable () -> Void) {
        let overlaps = isResponsiveCaptureEnabled
        let now = inFlight.withLock { state -> Bool in
            if state.count > 0 && !overlaps {
                state.waiting.append(start)
                return false
            }
            state.count += 1
            return true
        }
        if now { start() }
    }

    /// A capture finished: the next waiting one starts.
    private func captureFinished() {
        let next = inFlight.withLock { state -> (@Sendable () -> Void)? in
            guard !state.waiting.isEmpty else {
                state.count -= 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?()
    }

    // MARK: Capturing

    /// Takes a photo with `settings` and reports to `delegate`. Traps, as Apple's raises, when there is no active
    /// and enabled video connection, when `settings` were used before, when the flash mode is not among
    /// `supportedFlashModes`, when the format is not available, or when high resolution is asked for without
    /// `isHighResolutionCaptureEnabled`, or when `settings.metadata` holds keys other than `{GPS}`.
    open func capturePhoto(with settings: AVCapturePhotoSettings, delegate: any AVCapturePhotoCaptureDelegate) {
        let videoConnection = connection(with: .video)
        precondition(
            session != nil && (videoConnection.map { $0.isEnabled && $0.isActive } ?? false),
            "AVCapturePhotoOutput: capturePhoto needs an active and enabled video connection (Apple raises"
                + " NSInvalidArgumentException)")
        let encoding = checkedEncoding(of: settings)
        precondition(
            settings.photoQualityPrioritization <= maxPhotoQualityPrioritization,
            "AVCapturePhotoOutput: photoQualityPrioritization \(settings.photoQualityPrioritization) exceeds"
                + " maxPhotoQualityPrioritization \(maxPhotoQualityPrioritization) (Apple raises"
                + " NSInvalidArgumentException)")
        precondition(
            supportedFlashModes.contains(settings.flashMode),
            "AVCapturePhotoOutput: flashMode \(settings.flashMode) is not one of supportedFlashModes (Apple raises"
                + " NSInvalidArgumentException)")
        precondition(
            !settings.isHighResolutionPhotoEnabled || isHighResolutionCaptureEnabled,
            "AVCapturePhotoOutput: isHighResolutionPhotoEnabled needs isHighResolutionCaptureEnabled on the output"
                + " (Apple raises NSInvalidArgumentException)")
        // Apple documents no exception for metadata it will not write; we write the GPS dictionary only, so the
        // rest is left out and said once.
        let unknown = settings.metadata.keys.filter { $0 != kCGImagePropertyGPSDictionary }
        if !unknown.isEmpty {
            ToleratedMisuse.report(
                "AVCapturePhotoSettings.metadata",
                "AVCapturePhotoOutput: settings.metadata keys \(unknown.sorted()) are not written; only"
                    + " kCGImagePropertyGPSDictionary is")
        }
        let fresh = usedSettings.withLock { $0.insert(settings.uniqueID).inserted }
        precondition(
            fresh,
            "AVCapturePhotoOutput: settings \(settings.uniqueID) were already used; make new settings for every"
                + " capture, e.g. AVCapturePhotoSettings(from:) (Apple raises NSInvalidArgumentException)")

        let connection = videoConnection!
        let device = self.device
        let flashMode = LightMode(rawValue: settings.flashMode.rawValue) ?? .off
        let location = (settings.metadata[kCGImagePropertyGPSDictionary] as? [String: Any])
            .flatMap(StillImageMetadata.location(fromGPS:))
        let dimensions = StillCaptureEngine.dimensions(
            of: connection, highResolution: settings.isHighResolutionPhotoEnabled)
        let deferring = if case .uncompressed = encoding { false } else { isAutoDeferredPhotoDeliveryEnabled }
        let resolved = AVCaptureResolvedPhotoSettings(
            uniqueID: settings.uniqueID, photoDimensions: dimensions,
            isFlashEnabled: StillCaptureEngine.firesFlash(flashMode, device: device),
            deferredPhotoProxyDimensions: deferring
                ? StillCaptureEngine.previewSize(width: Int(dimensions.width), height: Int(dimensions.height))
                : CMVideoDimensions())
        let weakDelegate = WeakPhotoDelegate(delegate)
        engine.queue.async { weakDelegate.object?.photoOutput(self, willBeginCaptureFor: resolved) }
        var request = StillRequest(
            encoding: encoding, flashMode: flashMode, location: location, connection: connection,
            highResolution: settings.isHighResolutionPhotoEnabled,
            willCapture: { [weak self] in
                guard let self else { return }
                weakDelegate.object?.photoOutput(self, willCapturePhotoFor: resolved)
            },
            didCapture: { [weak self] in
                guard let self else { return }
                weakDelegate.object?.photoOutput(self, didCapturePhotoFor: resolved)
            },
            finish: { [weak self] result in
                guard let self else { return }
                guard let delegate = weakDelegate.object else { return captureFinished() }
                let failure: AVError?
                switch result {
                case .success(let still):
                    failure = nil
                    delegate.photoOutput(
                        self, didFinishProcessingPhoto: AVCapturePhoto(still: still, resolvedSettings: resolved),
                        error: nil)
                case .failure(let error):
                    failure = error
                    delegate.photoOutput(
                        self, didFinishProcessingPhoto: AVCapturePhoto(failedWith: resolved), error: error)
                }
                // Over before didFinishCaptureFor: a capture asked for from that call, or after it, starts at once.
                captureFinished()
                delegate.photoOutput(self, didFinishCaptureFor: resolved, error: failure)
            })
        if deferring {
            request.deferred = { [weak self] time, preview, pending in
                guard let self else { return }
                let proxy = AVCaptureDeferredPhotoProxy(
                    timestamp: time, preview: preview, pending: pending, resolvedSettings: resolved)
                weakDelegate.object?.photoOutput(self, didFinishCapturingDeferredPhotoProxy: proxy, error: nil)
                captureFinished()
                weakDelegate.object?.photoOutput(self, didFinishCaptureFor: resolved, error: nil)
            }
        }
        // Apple's manual exposure gets no zero shutter lag: the kept frame was exposed before the settings.
        request.zeroShutterLag = isZeroShutterLagEnabled && device?.exposureMode != .custom
        let taken = request
        let session = self.session
        startInTurn { [weak self] in self?.engine.capture(taken, session: session) }
    }

    /// The encoding `settings` ask for; traps when it is not available.
    private func checkedEncoding(of settings: AVCapturePhotoSettings) -> StillRequest.Encoding {
        if let pixelFormat = settings.pixelFormat {
            precondition(
                availablePhotoPixelFormatTypes.contains(pixelFormat),
                "AVCapturePhotoOutput: pixel format \(pixelFormat) is not one of availablePhotoPixelFormatTypes"
                    + " (Apple raises NSInvalidArgumentException)")
            return .uncompressed(pixelFormat)
        }
        let codec = settings.codec
        precondition(
            codec.map(availablePhotoCodecTypes.contains) ?? false,
            "AVCapturePhotoOutput: codec \(codec?.rawValue ?? "none") is not one of availablePhotoCodecTypes (Apple"
                + " raises NSInvalidArgumentException)")
        let quality = AVCaptureStillImageOutput.quality(in: settings.format ?? [:], name: "AVCapturePhotoOutput")
        return codec == .hevc ? .heic(quality: quality) : .jpeg(quality: quality)
    }

    // MARK: Graph hooks

    override package func accepts(_ mediaType: AVMediaType) -> Bool { mediaType == .video }

    override package func receive(_ sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        engine.receive(sampleBuffer, from: connection)
    }

    override package func sessionWillStopRunning() {
        engine.failAll(AVError(.sessionNotRunning, "the session stopped before the photo was taken"))
    }

    override package func inputDidFail(_ error: AVError, connection: AVCaptureConnection) {
        engine.failAll(error)
    }
}

/// The delegate, held weakly as Apple's photo output holds it.
private struct WeakPhotoDelegate: @unchecked Sendable {
    weak var object: (any AVCapturePhotoCaptureDelegate)?
    init(_ object: any AVCapturePhotoCaptureDelegate) { self.object = object }
}
