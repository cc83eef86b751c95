import CaptureDrivers
import Foundation
import Synchronization

/// What one photo capture asks for: the format (a codec or a pixel format), the flash, high resolution, and
/// metadata to write into the file. Use a settings object for one capture only: `capturePhoto` traps on reuse,
/// as Apple's raises; `init(from:)` copies one with a new `uniqueID`.
///
/// Location: as with Apple's, a photo gets a location through `metadata`, an ImageIO `{GPS}` dictionary under
/// `kCGImagePropertyGPSDictionary` (Latitude, LatitudeRef, Longitude, LongitudeRef, and optionally Altitude,
/// AltitudeRef, TimeStamp, DateStamp); it is written as EXIF GPS tags and returned in `AVCapturePhoto.metadata`.
///
/// Threading: not synchronized; configure it on one thread, then hand it to `capturePhoto(with:delegate:)`.
open class AVCapturePhotoSettings: NSObject, @unchecked Sendable {
    private static let nextID = Atomic<Int64>(1)

    /// Identifies these settings; the resolved settings and the photo carry the same value.
    public let uniqueID: Int64
    /// The format asked for: `[AVVideoCodecKey: .jpeg or .hevc]` (with optional `AVVideoCompressionPropertiesKey:
    /// [AVVideoQualityKey: 0...1]`), or `[kCVPixelBufferPixelFormatTypeKey: …]`.
    public let format: [String: Any]?
    /// The flash mode for this photo; must be one of the output's `supportedFlashModes`.
    public var flashMode: AVCaptureDevice.FlashMode = .off
    /// Whether to capture at the device's highest still resolution; needs the output's
    /// `isHighResolutionCaptureEnabled`.
    public var isHighResolutionPhotoEnabled = false
    /// How much to favour quality over speed for this photo; at most the output's `maxPhotoQualityPrioritization`
    /// (`capturePhoto` traps otherwise, as Apple raises). `.balanced` by default, as Apple's. Every value gives the
    /// same photo here: no camera on Linux offers multi-frame fusion, the only thing Apple's setting trades.
    public var photoQualityPrioritization: AVCapturePhotoOutput.QualityPrioritization = .balanced
    /// Metadata to write into the photo: `kCGImagePropertyGPSDictionary` is honoured; any other key traps at
    /// `capturePhoto`, so nothing is silently dropped.
    public var metadata: [String: Any] = [:]

    /// JPEG at quality 0.9, as Apple's default settings on devices without HEVC stills.
    public convenience override init() {
        self.init(format: [AVVideoCodecKey: AVVideoCodecType.jpeg])
    }

    /// Settings for `format`; nil means JPEG. Unknown keys trap, as Apple's raises.
    public init(format: [String: Any]?) {
        uniqueID = Self.nextID.add(1, ordering: .relaxed).oldValue
        let effective = format ?? [AVVideoCodecKey: AVVideoCodecType.jpeg]
        requireKnownSettingKeys(
            effective, [AVVideoCodecKey, AVVideoCompressionPropertiesKey, kCVPixelBufferPixelFormatTypeKey],
            owner: "AVCapturePhotoSettings format")
        precondition(
            (effective[AVVideoCodecKey] == nil) != (effective[kCVPixelBufferPixelFormatTypeKey] == nil),
            "AVCapturePhotoSettings: a format has either AVVideoCodecKey or kCVPixelBufferPixelFormatTypeKey (Apple"
                + " raises NSInvalidArgumentException)")
        self.format = effective
        super.init()
    }

    /// A copy of `photoSettings` with a new `uniqueID`, for the next capture.
    public convenience init(from photoSettings: AVCapturePhotoSettings) {
        self.init(format: photoSettings.format)
        flashMode = photoSettings.flashMode
        isHighResolutionPhotoEnabled = photoSettings.isHighResolutionPhotoEnabled
        metadata = photoSettings.metadata
    }

    /// The file type of the photo's `fileDataRepresentation()`: `.jpg`, `.heic`, or nil for pixels.
    public var processedFileType: AVFileType? {
        switch codec {
        case .jpeg?: .jpg
        case .hevc?: .heic
        default: nil
        }
    }

    /// The codec of `format`, if it names one.
    var codec: AVVideoCodecType? {
        codecSetting(format?[AVVideoCodecKey])
    }

    /// The pixel format of `format`, if it names one.
    var pixelFormat: OSType? {
        integerSetting(format?[kCVPixelBufferPixelFormatTypeKey]).map { OSType(truncatingIfNeeded: $0) }
    }
}

/// The settings a capture will use, with what the output decided: the photo's size and whether the flash fires.
///
/// Threading: immutable after creation; safe to share.
open class AVCaptureResolvedPhotoSettings: NSObject, @unchecked Sendable {
    /// The `uniqueID` of the settings these were resolved from.
    public let uniqueID: Int64
    /// The photo's width and height, as stored (before EXIF orientation).
    public let photoDimensions: CMVideoDimensions
    /// Whether the flash fires for the photo.
    public let isFlashEnabled: Bool
    /// How many photos the capture delivers: 1.
    public let expectedPhotoCount: Int
    /// The size of the deferred photo proxy's preview when the photo is delivered deferred; zero otherwise.
    public let deferredPhotoProxyDimensions: CMVideoDimensions

    init(
        uniqueID: Int64, photoDimensions: CMVideoDimensions, isFlashEnabled: Bool,
        deferredPhotoProxyDimensions: CMVideoDimensions = CMVideoDimensions()
    ) {
        self.uniqueID = uniqueID
        self.photoDimensions = photoDimensions
        self.isFlashEnabled = isFlashEnabled
        self.deferredPhotoProxyDimensions = deferredPhotoProxyDimensions
        self.expectedPhotoCount = 1
        super.init()
    }
}

/// One captured photo: its file (JPEG or HEIC) or its pixels, its metadata, its time.
///
/// Threading: immutable after creation; safe to share.
open class AVCapturePhoto: NSObject, @unchecked Sendable {
    /// The presentation time of the frame the photo was taken from, on the session's clock.
    public let timestamp: CMTime
    /// The settings the photo was taken with.
    public let resolvedSettings: AVCaptureResolvedPhotoSettings
    /// The pixels, for an uncompressed format; nil for JPEG and HEIC.
    public let pixelBuffer: CVPixelBuffer?
    /// A small picture of the photo: a deferred photo proxy's quick preview (BGRA, a quarter of the photo's width and
    /// height); nil for other photos (Apple's needs `previewPhotoFormat`, which is not offered here).
    public let previewPixelBuffer: CVPixelBuffer?
    /// ImageIO's properties: orientation, size, `{Exif}`, `{TIFF}`, and `{GPS}` with a location. The file's EXIF
    /// says the same.
    public let metadata: [String: Any]
    /// Always false: no RAW capture here.
    public let isRawPhoto = false
    /// 1: one photo per capture.
    public let photoCount = 1
    private let file: Data?

    init(still: StillImage, resolvedSettings: AVCaptureResolvedPhotoSettings) {
        timestamp = still.timestamp
        self.resolvedSettings = resolvedSettings
        pixelBuffer = still.pixelBuffer
        previewPixelBuffer = nil
        metadata = still.properties
        file = still.fileData
        super.init()
    }

    /// A deferred photo's proxy: its time and preview, and no file of its own.
    init(proxyAt timestamp: CMTime, preview: CVPixelBuffer?, resolvedSettings: AVCaptureResolvedPhotoSettings) {
        self.timestamp = timestamp
        self.resolvedSettings = resolvedSettings
        pixelBuffer = nil
        previewPixelBuffer = preview
        metadata = [:]
        file = nil
        super.init()
    }

    /// The empty photo `didFinishProcessingPhoto` gets with an error.
    init(failedWith resolvedSettings: AVCaptureResolvedPhotoSettings) {
        timestamp = .invalid
        self.resolvedSettings = resolvedSettings
        pixelBuffer = nil
        previewPixelBuffer = nil
        metadata = [:]
        file = nil
        super.init()
    }

    /// The photo as a file of the settings' `processedFileType` (JPEG or HEIC, EXIF included), or nil for pixels.
    public func fileDataRepresentation() -> Data? { file }
}

/// Follows one photo capture, in Apple's order: `willBeginCaptureFor`, `willCapturePhotoFor`, `didCapturePhotoFor`,
/// `didFinishProcessingPhoto` (or, for a deferred photo, `didFinishCapturingDeferredPhotoProxy`), `didFinishCaptureFor`.
/// Every method is optional. On failure (the session stopped,
/// the device went away) `didFinishProcessingPhoto` and `didFinishCaptureFor` get the error.
///
/// Threading: the methods run on an internal serial queue of the output, one capture after another.
public protocol AVCapturePhotoCaptureDelegate: NSObjectProtocol {
    func photoOutput(
        _ output: AVCapturePhotoOutput, willBeginCaptureFor resolvedSettings: AVCaptureResolvedPhotoSettings)
    func photoOutput(
        _ output: AVCapturePhotoOutput, willCapturePhotoFor resolvedSettings: AVCaptureResolvedPhotoSettings)
    func photoOutput(
        _ output: AVCapturePhotoOutput, didCapturePhotoFor resolvedSettings: AVCaptureResolvedPhotoSettings)
    func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishProcessingPhoto photo: AVCapturePhoto, error: (any Error)?)
    func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishCaptureFor resolvedSettings: AVCaptureResolvedPhotoSettings,
        error: (any Error)?)
    func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishCapturingDeferredPhotoProxy deferredPhotoProxy: AVCaptureDeferredPhotoProxy?,
        error: (any Error)?)
}

extension AVCapturePhotoCaptureDelegate {
    /// Does nothing unless the delegate implements it (Apple\'s method is optional).
    public func photoOutput(
        _ output: AVCapturePhotoOutput, willBeginCaptureFor resolvedSettings: AVCaptureResolvedPhotoSettings
    ) {}
    /// Does nothing unless the delegate implements it (Apple\'s method is optional).
    public func photoOutput(
        _ output: AVCapturePhotoOutput, willCapturePhotoFor resolvedSettings: AVCaptureResolvedPhotoSettings
    ) {}
    /// Does nothing unless the delegate implements it (Apple\'s method is optional).
    public func photoOutput(
        _ output: AVCapturePhotoOutput, didCapturePhotoFor resolvedSettings: AVCaptureResolvedPhotoSettings
    ) {}
    /// Does nothing unless the delegate implements it (Apple\'s method is optional).
    public func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishProcessingPhoto photo: AVCapturePhoto, error: (any Error)?
    ) {}
    /// Does nothing unless the delegate implements it (Apple\'s method is optional).
    public func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishCaptureFor resolvedSettings: AVCaptureResolvedPhotoSettings,
        error: (any Error)?
    ) {}
    /// Does nothing unless the delegate implements it (Apple\'s method is optional).
    public func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishCapturingDeferredPhotoProxy deferredPhotoProxy: AVCaptureDeferredPhotoProxy?,
        error: (any Error)?
    ) {}
}
