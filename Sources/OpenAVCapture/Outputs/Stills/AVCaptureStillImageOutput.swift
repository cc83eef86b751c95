import CaptureDrivers
import CaptureGraph
import Foundation
import MediaCodecs
import Synchronization

/// Captures still images from a session's video, Apple's older still output (deprecated there in favour of
/// `AVCapturePhotoOutput`, still what many apps and the seeds use).
///
/// `captureStillImageAsynchronously(from:completionHandler:)` takes the next frame of the connection (the one the
/// flash lit, with the device's `flashMode` `.on`, or `.auto` in a dark scene), and hands the completion handler a
/// sample buffer: a JPEG file (the default, `AVVideoCodecKey: .jpeg`) or the pixels (`kCVPixelBufferPixelFormatTypeKey`),
/// with ImageIO's `{Exif}`, `{TIFF}` and orientation properties attached (`CMGetAttachment(buffer, key:
/// kCGImagePropertyExifDictionary, …)`). The JPEG carries the same values as EXIF. Pixels are as captured: the
/// connection's orientation and mirroring become the EXIF orientation, as Apple's JPEG stills do.
///
/// The still's size is the session's video format (the `.photo` preset streams the device's photo format, 4032x3024
/// on the virtual back camera). Taking stills does not disturb the session's other outputs: the still is one of
/// the stream's frames, encoded on the output's own queue.
///
/// Threading: thread safe. The completion handler runs on an internal serial queue, one still at a time.
/// `isCapturingStillImage` is key-value observable; it changes on that queue and on the caller's thread.
open class AVCaptureStillImageOutput: AVCaptureOutput, KeyValueObservable, @unchecked Sendable {
    /// The output's key-value observers (`isCapturingStillImage`).
    public let keyValueObservers = KeyValueObserverRegistry()
    private let engine = StillCaptureEngine(label: "OpenAVCapture.AVCaptureStillImageOutput")
    private let settings = Mutex<UncheckedSendable<[String: Any]>>(
        UncheckedSendable([AVVideoCodecKey: AVVideoCodecType.jpeg]))
    private let capturing = Mutex(0)

    public override init() { super.init() }

    /// The pixel formats an uncompressed still can have (`kCVPixelBufferPixelFormatTypeKey`), NV12 first.
    open var availableImageDataCVPixelFormatTypes: [NSNumber] {
        VideoOutputPipeline.supportedPixelFormats.map { NSNumber(value: $0) }
    }

    /// The codecs a compressed still can have: JPEG.
    open var availableImageDataCodecTypes: [AVVideoCodecType] { [.jpeg] }

    /// What stills are delivered as: `[AVVideoCodecKey: AVVideoCodecType.jpeg]` (the default), optionally with
    /// `AVVideoCompressionPropertiesKey: [AVVideoQualityKey: 0...1]` (0.9 if absent), or
    /// `[kCVPixelBufferPixelFormatTypeKey: one of availableImageDataCVPixelFormatTypes]` for pixels. Anything else
    /// traps, as Apple's raises.
    open var outputSettings: [String: Any]! {
        get { settings.withLock { $0.value } }
        set {
            let value = newValue ?? [AVVideoCodecKey: AVVideoCodecType.jpeg]
            _ = Self.encoding(for: value, formats: VideoOutputPipeline.supportedPixelFormats)
            settings.withLock { $0 = UncheckedSendable(value) }
        }
    }

    /// Whether a still is being taken. Key-value observable.
    open var isCapturingStillImage: Bool { capturing.withLock { $0 > 0 } }

    /// Whether stills are taken at the device's high-resolution still size (`activeFormat`'s
    /// `highResolutionStillImageDimensions`, 4032x3024 on the virtual back camera) rather than the stream's, where
    /// the camera can read one (the virtual cameras can; others give the stream's size).
    open var isHighResolutionStillImageOutputEnabled: Bool {
        get { highResolution.withLock { $0 } }
        set { highResolution.withLock { $0 = newValue } }
    }
    private let highResolution = Mutex(false)

    /// Takes a still from `connection` and calls `handler` with it, or with an error (`AVError.sessionNotRunning`
    /// when the session is not running). Traps when the connection is not this output's, or is inactive or
    /// disabled, as Apple's raises.
    open func captureStillImageAsynchronously(
        from connection: AVCaptureConnection,
        completionHandler handler: @escaping @Sendable (CMSampleBuffer?, (any Error)?) -> Void
    ) {
        precondition(
            connections.contains { $0 === connection },
            "AVCaptureStillImageOutput: captureStillImageAsynchronously(from:) needs one of this output's"
                + " connections (Apple raises NSInvalidArgumentException)")
        precondition(
            session != nil && connection.isEnabled && connection.isActive,
            "AVCaptureStillImageOutput: captureStillImageAsynchronously(from:) needs an active, enabled connection"
                + " (Apple raises NSInvalidArgumentException)")
        let encoding = Self.encoding(for: outputSettings, formats: VideoOutputPipeline.supportedPixelFormats)
        let device = (connection.inputPorts.first?.input as? AVCaptureDeviceInput)?.device
        let flashMode = device.map { LightMode(rawValue: $0.flashMode.rawValue) ?? .off } ?? .off
        changeCapturing(by: 1)
        let request = StillRequest(
            encoding: encoding, flashMode: flashMode, location: nil, connection: connection,
            highResolution: isHighResolutionStillImageOutputEnabled,
            finish: { [weak self] result in
                // Done before the handler runs, so the handler sees isCapturingStillImage false.
                self?.changeCapturing(by: -1)
                switch result {
                case .success(let still): handler(still.sampleBuffer, nil)
                case .failure(let error): handler(nil, error)
                }
            })
        engine.capture(request, session: session)
    }

    /// The JPEG file in a still's sample buffer, as it was encoded (no recompression). Traps for a buffer that
    /// holds no JPEG, as Apple's raises.
    open class func jpegStillImageNSDataRepresentation(_ jpegSampleBuffer: CMSampleBuffer) -> Data? {
        precondition(
            jpegSampleBuffer.formatDescription?.mediaSubType.rawValue == kCMVideoCodecType_JPEG,
            "AVCaptureStillImageOutput: jpegStillImageNSDataRepresentation(_:) needs a JPEG sample buffer (Apple"
                + " raises NSInvalidArgumentException)")
        return jpegSampleBuffer.dataBuffer?.dataBytes()
    }

    private func changeCapturing(by delta: Int) {
        let (old, new) = capturing.withLock { count in
            let old = count > 0
            count += delta
            return (old, count > 0)
        }
        if old != new {
            keyValueObservers.notifyChange(
                \AVCaptureStillImageOutput.isCapturingStillImage, of: self, from: old, to: new)
        }
    }

    /// What `settings` ask for; traps for anything unsupported.
    static func encoding(for settings: [String: Any], formats: [OSType]) -> StillRequest.Encoding {
        if let format = settings[kCVPixelBufferPixelFormatTypeKey] {
            precondition(
                settings.count == 1,
                "AVCaptureStillImageOutput: uncompressed outputSettings take only kCVPixelBufferPixelFormatTypeKey"
                    + " (Apple raises NSInvalidArgumentException)")
            let code = integerSetting(format).map { OSType(truncatingIfNeeded: $0) }
            precondition(
                code.map(formats.contains) ?? false,
                "AVCaptureStillImageOutput: pixel format \(format) is not one of availableImageDataCVPixelFormatTypes"
                    + " (Apple raises NSInvalidArgumentException)")
            return .uncompressed(code!)
        }
        requireKnownSettingKeys(
            settings, [AVVideoCodecKey, AVVideoCompressionPropertiesKey],
            owner: "AVCaptureStillImageOutput outputSettings")
        let codec = codecSetting(settings[AVVideoCodecKey])
        precondition(
            codec == .jpeg,
            "AVCaptureStillImageOutput: AVVideoCodecKey must be AVVideoCodecType.jpeg, one of"
                + " availableImageDataCodecTypes (Apple raises NSInvalidArgumentException)")
        return .jpeg(quality: quality(in: settings, name: "AVCaptureStillImageOutput"))
    }

    /// `AVVideoQualityKey` of the compression properties, 0...1 (0.9 when absent); traps outside that range.
    static func quality(in settings: [String: Any], name: String) -> Double {
        let properties = settings[AVVideoCompressionPropertiesKey] as? [String: Any] ?? [:]
        guard let value = properties[AVVideoQualityKey] else { return 0.9 }
        let quality = doubleSetting(value) ?? -1
        precondition(
            (0...1).contains(quality),
            "\(name): AVVideoQualityKey must be a number in 0...1 (Apple raises NSInvalidArgumentException)")
        return quality
    }

    // MARK: Graph hooks

    override package func accepts(_ mediaType: AVMediaType) -> Bool { mediaType == .video }

    override package func receive(_ sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        engine.receive(sampleBuffer, from: connection)
    }

    override package func sessionWillStopRunning() {
        engine.failAll(AVError(.sessionNotRunning, "the session stopped before the still was taken"))
    }

    override package func inputDidFail(_ error: AVError, connection: AVCaptureConnection) {
        engine.failAll(error)
    }
}
