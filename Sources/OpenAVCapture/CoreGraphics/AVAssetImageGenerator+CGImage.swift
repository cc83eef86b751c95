import OpenCoreMedia
import OpenCoreVideo

extension AVAssetImageGenerator {
    /// The picture at `requestedTime` as a ``CGImage`` (8-bit BGRA, sRGB), synchronously; `actualTime` receives the
    /// time of the frame it is. Apple's `copyCGImage(at:actualTime:)` (deprecated there for `image(at:)`, still
    /// common in apps); the picture is the one ``image(at:)`` gives.
    ///
    /// - Throws: as ``image(at:)``.
    public func copyCGImage(at requestedTime: CMTime, actualTime: UnsafeMutablePointer<CMTime>?) throws -> CGImage {
        let (picture, time) = try Self.picture(of: asset, at: requestedTime, settings: currentSettings)
        actualTime?.pointee = time
        guard let image = CGImage(copying: picture, colorSpace: CGColorSpaceCreateDeviceRGB()) else {
            throw AVError(.decodeFailed, "the picture at \(time.seconds) s could not be read as 32-bit BGRA")
        }
        return image
    }
}

/// How an image is turned from its stored pixels to be shown, as EXIF numbers it (1 upright … 8). Apple's ImageIO
/// `CGImagePropertyOrientation`; the same numbers are the `kCGImagePropertyOrientation` values our stills carry.
///
/// Value type; safe to use from any thread.
public enum CGImagePropertyOrientation: UInt32, Sendable {
    case up = 1
    case upMirrored = 2
    case down = 3
    case downMirrored = 4
    case leftMirrored = 5
    case right = 6
    case rightMirrored = 7
    case left = 8
}
