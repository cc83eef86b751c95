import CaptureDrivers
import Foundation
import MediaCodecs

/// What a still's metadata says: when it was taken, the flash, the orientation.
extension StillCaptureEngine {
    /// The wall-clock moment of a host-clock time: now, less how long ago the frame was stamped.
    package static func wallClockDate(of time: CMTime) -> Date {
        let age = (CMClock.hostTimeNow - time).seconds
        return Date(timeIntervalSinceNow: age.isFinite ? -max(0, age) : 0)
    }

    /// EXIF's Flash record for a still.
    static func flashRecord(_ mode: LightMode, fired: Bool, device: AVCaptureDevice?) -> StillImageMetadata.Flash {
        guard device?.hasFlash ?? false else { return .noFlashFunction }
        switch mode {
        case .off: return .off
        case .on: return .on(fired: fired)
        case .auto: return .auto(fired: fired)
        }
    }

    /// EXIF's orientation for pixels that the connection would rotate by `rotation` degrees clockwise and then
    /// mirror: what a viewer must do to the stored (unrotated) pixels to show them as the connection would.
    package static func exifOrientation(rotation: Int, mirrored: Bool) -> Int {
        switch (rotation, mirrored) {
        case (90, false): 6
        case (180, false): 3
        case (270, false): 8
        case (0, true): 2
        case (90, true): 5
        case (180, true): 4
        case (270, true): 7
        default: 1
        }
    }
}
