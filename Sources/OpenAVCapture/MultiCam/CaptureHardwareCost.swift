// What a set of cameras costs the machine, for AVCaptureMultiCamSession's `hardwareCost` and `systemPressureCost`.
//
// A simple model by pixel rate, standing in until the USB bandwidth model (bus budgets from sysfs) replaces this
// file with the same two functions.

import CaptureDrivers
import Foundation

/// The share of the machine's capture budgets that cameras' active formats need.
///
/// Value type namespace; safe to use from any thread (it reads each device's active format under the device's lock).
enum CaptureHardwareCost {
    /// The pixel rate the capture hardware is taken to carry in all: 3840x2160 at 60 fps, two 4K30 cameras.
    static let pixelRateBudget: Double = 3840 * 2160 * 60

    /// The pixel rate the machine is taken to decode and convert per core; a compressed frame's pixels count
    /// `decodeWeight` times, as decoding them costs several times a raw frame's hand-off.
    static let pressurePixelRatePerCore: Double = 1920 * 1080 * 60
    static let decodeWeight: Double = 3

    /// The share of the hardware budget the cameras' active formats need together (1.0 = all of it).
    static func hardwareCost(of cameras: [AVCaptureDevice]) -> Float {
        Float(cameras.reduce(0) { $0 + pixelRate(of: $1) } / pixelRateBudget)
    }

    /// The share of the machine's decode/convert budget they need together.
    static func systemPressureCost(of cameras: [AVCaptureDevice]) -> Float {
        let weighted = cameras.reduce(0.0) { sum, camera in
            sum + pixelRate(of: camera) * (isCompressed(camera.activeFormat) ? decodeWeight : 1)
        }
        let cores = Double(max(1, ProcessInfo.processInfo.activeProcessorCount))
        return Float(weighted / (pressurePixelRatePerCore * cores))
    }

    /// Pixels a second of the camera's active format at its highest active frame rate.
    private static func pixelRate(of camera: AVCaptureDevice) -> Double {
        guard let video = camera.activeFormat.video else { return 0 }
        let frameDuration = camera.activeVideoMinFrameDuration
        guard frameDuration.isNumeric, frameDuration.seconds > 0 else { return 0 }
        return Double(video.width) * Double(video.height) / frameDuration.seconds
    }

    private static func isCompressed(_ format: AVCaptureDevice.Format) -> Bool {
        let raw: Set<OSType> = [
            kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8BiPlanarFullRange,
            kCVPixelFormatType_422YpCbCr8_yuvs, kCVPixelFormatType_422YpCbCr8, kCVPixelFormatType_420YpCbCr8Planar,
        ]
        guard let video = format.video else { return false }
        return !raw.contains(video.mediaSubType)
    }
}
