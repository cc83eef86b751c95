import CaptureDrivers
import Foundation

/// A session preset: a quality level or a size the session streams video at, with Apple's raw values.
/// Apple spells it `AVCaptureSession.Preset`; the session type adds that name.
///
/// How a preset picks a device format (`format(in:)`): the sized presets pick a format of exactly that size that
/// streams at 30 fps or more (the device's native format first, then a compressed one), else the fastest of that
/// size; `.high` the largest
/// video format up to 1920x1080; `.medium` 640x480 (or the nearest smaller); `.low` the smallest; `.photo` the
/// device's photo format (4032x3024 on the virtual back camera), else its largest; `.inputPriority` leaves the
/// device's `activeFormat` alone. Microphones support every preset: presets do not constrain audio.
///
/// Value type; safe to use from any thread.
public struct AVCaptureSessionPreset: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let high = Self("AVCaptureSessionPresetHigh")
    public static let medium = Self("AVCaptureSessionPresetMedium")
    public static let low = Self("AVCaptureSessionPresetLow")
    public static let photo = Self("AVCaptureSessionPresetPhoto")
    public static let inputPriority = Self("AVCaptureSessionPresetInputPriority")
    public static let qvga320x240 = Self("AVCaptureSessionPreset320x240")
    public static let cif352x288 = Self("AVCaptureSessionPreset352x288")
    public static let vga640x480 = Self("AVCaptureSessionPreset640x480")
    public static let qHD960x540 = Self("AVCaptureSessionPreset960x540")
    public static let hd1280x720 = Self("AVCaptureSessionPreset1280x720")
    public static let hd1920x1080 = Self("AVCaptureSessionPreset1920x1080")
    public static let hd4K3840x2160 = Self("AVCaptureSessionPreset3840x2160")
    public static let iFrame960x540 = Self("AVCaptureSessionPresetiFrame960x540")
    public static let iFrame1280x720 = Self("AVCaptureSessionPresetiFrame1280x720")

    /// The size a sized preset asks for.
    package var size: (width: Int32, height: Int32)? {
        switch self {
        case .qvga320x240: (320, 240)
        case .cif352x288: (352, 288)
        case .vga640x480: (640, 480)
        case .qHD960x540, .iFrame960x540: (960, 540)
        case .hd1280x720, .iFrame1280x720: (1280, 720)
        case .hd1920x1080: (1920, 1080)
        case .hd4K3840x2160: (3840, 2160)
        default: nil
        }
    }

    /// The format of `device` this preset streams, or nil when the device cannot honour it. For microphones and
    /// `.inputPriority`, the device's active format.
    package func format(in device: AVCaptureDevice) -> AVCaptureDevice.Format? {
        guard device.hasMediaType(.video), self != .inputPriority else { return device.activeFormat }
        let video = device.formats.filter { $0.video.map { !$0.isPhotoFormat } ?? false }
        func area(_ format: AVCaptureDevice.Format) -> Int64 {
            Int64(format.video!.width) * Int64(format.video!.height)
        }
        func atLeast30(_ format: AVCaptureDevice.Format) -> Bool { format.video!.maxFrameRate >= 29.97 }
        if let (width, height) = size {
            // Native formats come before compressed ones in a driver's list, so `first` prefers them. A camera
            // whose format of that size cannot reach 30 fps (vivid's 640x480 tops out at 25) streams it at its
            // fastest rather than not at all.
            let sized = video.filter { $0.video!.width == width && $0.video!.height == height }
            return sized.first(where: atLeast30)
                ?? sized.reduce(nil) { best, format in
                    guard let best else { return format }
                    return format.video!.maxFrameRate > best.video!.maxFrameRate ? format : best
                }
        }
        switch self {
        case .high:
            return video.filter { $0.video!.width <= 1920 && $0.video!.height <= 1080 && atLeast30($0) }
                .max { area($0) < area($1) }
        case .medium:
            return video.filter { $0.video!.width <= 640 && $0.video!.height <= 480 }.max { area($0) < area($1) }
        case .low:
            return video.min { area($0) < area($1) }
        case .photo:
            return device.formats.first { $0.video?.isPhotoFormat ?? false }
                ?? video.max { area($0) < area($1) }
        default:
            return nil
        }
    }
}
