// AVAssetImageGenerator: pictures of an asset's video at given times (thumbnails), as pixel buffers or JPEG.

import CaptureGraph
import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// Makes still pictures of an asset's first video track at times you ask for.
///
/// There is no Core Graphics here, so no `CGImage`: Apple's async ``image(at:)`` gives the picture as a 32BGRA
/// `CVPixelBuffer` (the layout of a `CGImage` made from camera frames), and ``jpegData(at:)`` gives a JPEG file of
/// it. `copyCGImage(at:actualTime:)` and `generateCGImagesAsynchronously(forTimes:completionHandler:)` are not
/// offered.
///
/// The frame given is always the one shown at the time asked (decoded from the key frame before it), which is
/// within any tolerance; the tolerances are kept for Apple's API and change nothing (Apple may take a nearby key
/// frame instead, to decode less). `actualTime` says which frame it was.
/// ``maximumSize`` scales the picture down to fit, keeping its aspect; ``appliesPreferredTrackTransform`` turns it
/// by the track's rotation (multiples of 90°).
///
/// Threading: thread safe (`@unchecked Sendable`): the settings are guarded by a lock; each request decodes on a
/// task of its own.
open class AVAssetImageGenerator: NSObject, @unchecked Sendable {
    struct Settings {
        var appliesPreferredTrackTransform = false
        var maximumSize = CGSize.zero
        var toleranceBefore = CMTime.positiveInfinity
        var toleranceAfter = CMTime.positiveInfinity
    }

    /// The asset pictured.
    public let asset: AVAsset
    private let settings = Mutex(Settings())
    /// The settings now, for the synchronous `copyCGImage(at:actualTime:)`.
    var currentSettings: Settings { settings.withLock { $0 } }

    /// A generator of pictures of `asset`.
    public init(asset: AVAsset) {
        self.asset = asset
        super.init()
    }

    /// Whether pictures are turned by the track's ``AVAssetTrack/preferredTransform`` (false by default).
    public var appliesPreferredTrackTransform: Bool {
        get { settings.withLock { $0.appliesPreferredTrackTransform } }
        set { settings.withLock { $0.appliesPreferredTrackTransform = newValue } }
    }
    /// The largest picture made (`.zero`: the track's size); pictures are scaled down to fit, keeping their aspect.
    public var maximumSize: CGSize {
        get { settings.withLock { $0.maximumSize } }
        set { settings.withLock { $0.maximumSize = newValue } }
    }
    /// How far before the time asked the picture may be taken from.
    public var requestedTimeToleranceBefore: CMTime {
        get { settings.withLock { $0.toleranceBefore } }
        set { settings.withLock { $0.toleranceBefore = newValue } }
    }
    /// How far after the time asked the picture may be taken from.
    public var requestedTimeToleranceAfter: CMTime {
        get { settings.withLock { $0.toleranceAfter } }
        set { settings.withLock { $0.toleranceAfter = newValue } }
    }

    /// The picture at `time` as a 32BGRA pixel buffer, and the time of the frame it is.
    ///
    /// - Throws: the ``AVError`` that says why the file cannot be read, `.operationNotSupportedForAsset` when it has
    ///   no video, `.decodeFailed` when the frame cannot be decoded, `.invalidSourceMedia` past the end.
    public func image(at time: CMTime) async throws -> (image: CVPixelBuffer, actualTime: CMTime) {
        let settings = settings.withLock { $0 }
        let asset = asset
        let box = try await Task.detached { () throws -> PictureBox in
            try PictureBox(Self.picture(of: asset, at: time, settings: settings))
        }.value
        return (box.image, box.actualTime)
    }

    /// The picture at `time` as a JPEG file (quality 0.9), and the time of the frame it is.
    ///
    /// - Throws: as ``image(at:)``.
    public func jpegData(at time: CMTime) async throws -> (data: Data, actualTime: CMTime) {
        let (image, actualTime) = try await image(at: time)
        do {
            return (try JPEGEncoder().encode(image, quality: 0.9), actualTime)
        } catch {
            throw AVError(.unknown, "Encoding the picture as JPEG failed: \(error.message)")
        }
    }

    /// Hands a picture from the decoding task to the caller: no one else holds it.
    private struct PictureBox: @unchecked Sendable {
        var image: CVPixelBuffer
        var actualTime: CMTime
        init(_ picture: (CVPixelBuffer, CMTime)) {
            image = picture.0
            actualTime = picture.1
        }
    }

    static func picture(
        of asset: AVAsset, at time: CMTime, settings: Settings
    ) throws -> (
        CVPixelBuffer, CMTime
    ) {
        if asset.path != nil { _ = try asset.loadedContents() }
        guard let track = asset.tracks(withMediaType: .video).first else {
            throw AVError(.operationNotSupportedForAsset, "the asset has no video track to picture")
        }
        guard time.isNumeric else { throw AVError(.invalidSourceMedia, "the time asked is not a number") }
        let producer = try track.makeSampleProducer(
            timeRange: CMTimeRange(start: time, duration: .positiveInfinity),
            decoding: .video(pixelFormat: kCVPixelFormatType_32BGRA, width: nil, height: nil), pitch: .spectral)
        guard let sample = try producer.next(), let picture = sample.imageBuffer else {
            throw AVError(
                .invalidSourceMedia,
                "there is no frame at \(time.seconds) s (the asset lasts \(asset.duration.seconds) s)")
        }
        let actual = sample.presentationTimeStamp
        var result = picture
        if settings.appliesPreferredTrackTransform {
            let transform = track.preferredTransform
            let degrees = Int((atan2(Double(transform.b), Double(transform.a)) * 180 / .pi).rounded())
            let clockwise = ((degrees % 360) + 360) % 360
            if clockwise % 90 == 0, clockwise != 0,
                let turned = PixelTransform(rotationDegrees: clockwise, mirrored: false).apply(to: result)
            {
                result = turned
            }
        }
        result = try scaled(result, toFit: settings.maximumSize)
        return (result, actual)
    }

    private static func scaled(_ picture: CVPixelBuffer, toFit size: CGSize) throws -> CVPixelBuffer {
        let width = CVPixelBufferGetWidth(picture)
        let height = CVPixelBufferGetHeight(picture)
        guard size.width > 0 || size.height > 0 else { return picture }
        let limitWidth = size.width > 0 ? Double(size.width) : .infinity
        let limitHeight = size.height > 0 ? Double(size.height) : .infinity
        let scale = min(1, limitWidth / Double(width), limitHeight / Double(height))
        guard scale < 1 else { return picture }
        let target = PixelBufferConverter.Format(
            pixelFormatType: kCVPixelFormatType_32BGRA, width: max(1, Int((Double(width) * scale).rounded())),
            height: max(1, Int((Double(height) * scale).rounded())))
        do {
            return try PixelBufferConverter(from: .init(of: picture), to: target).convert(picture)
        } catch {
            throw AVError(.unknown, "Scaling the picture failed: \(error.message)")
        }
    }
}
