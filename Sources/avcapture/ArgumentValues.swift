// The values avcapture's options take, typed: each a closed list that help and shell completions show, or a
// quantity with ffmpeg's suffixes. One spelling per value across commands (kebab-case); older spellings
// (`landscapeRight`, `timeDomain`) are still read.

import ArgumentParser
import Foundation
import OpenAVCapture

/// A closed list of values written in kebab-case. Reading ignores case, `-` and `_`, so `landscapeRight`,
/// `landscape_right` and `LANDSCAPE-RIGHT` are all `landscape-right`; `aliases` adds other words for a value.
protocol KebabChoice: CaseIterable, ExpressibleByArgument, RawRepresentable where RawValue == String {
    /// Other spellings accepted for a value, by their key (lowercase, no `-` or `_`).
    static var aliases: [String: Self] { get }
}

extension KebabChoice {
    static var aliases: [String: Self] { [:] }

    init?(argument: String) {
        let key = Self.key(argument)
        guard let value = Self.allCases.first(where: { Self.key($0.rawValue) == key }) ?? Self.aliases[key] else {
            return nil
        }
        self = value
    }

    private static func key(_ text: String) -> String { text.lowercased().filter { $0 != "-" && $0 != "_" } }
}

/// `--orientation`: which way up the picture is, as the connection's rotation angle says.
enum OrientationChoice: String, KebabChoice {
    case portrait, portraitUpsideDown = "portrait-upside-down", landscapeLeft = "landscape-left"
    case landscapeRight = "landscape-right"

    var rotationAngle: CGFloat {
        switch self {
        case .portrait: 90
        case .portraitUpsideDown: 270
        case .landscapeLeft: 180
        case .landscapeRight: 0
        }
    }

    var videoOrientation: AVCaptureVideoOrientation {
        switch self {
        case .portrait: .portrait
        case .portraitUpsideDown: .portraitUpsideDown
        case .landscapeLeft: .landscapeLeft
        case .landscapeRight: .landscapeRight
        }
    }
}

/// `--gravity`: how the picture fills a window or page.
enum GravityChoice: String, KebabChoice {
    case aspect, fill, resize

    var videoGravity: AVLayerVideoGravity {
        switch self {
        case .aspect: .resizeAspect
        case .fill: .resizeAspectFill
        case .resize: .resize
        }
    }
}

/// `record --codec`.
enum VideoCodecChoice: String, KebabChoice {
    case h264, hevc, prores, jpeg

    var codecType: AVVideoCodecType {
        switch self {
        case .h264: .h264
        case .hevc: .hevc
        case .prores: .proRes422
        case .jpeg: .jpeg
        }
    }
}

/// `photo --flash`.
enum FlashChoice: String, KebabChoice {
    case off, on, auto

    var mode: AVCaptureDevice.FlashMode {
        switch self {
        case .off: .off
        case .on: .on
        case .auto: .auto
        }
    }
}

/// `--pitch` of play and export: how sound played at another rate is stretched.
enum PitchChoice: String, KebabChoice {
    case timeDomain = "time-domain", spectral, varispeed

    var algorithm: AVAudioTimePitchAlgorithm {
        switch self {
        case .timeDomain: .timeDomain
        case .spectral: .spectral
        case .varispeed: .varispeed
        }
    }
}

/// `--preset`: a session preset by its short name or its size.
enum PresetChoice: String, KebabChoice {
    case high, medium, low, photo
    case qvga = "320x240", cif = "352x288", vga = "640x480", qHD = "960x540", hd720 = "1280x720"
    case hd1080 = "1920x1080", uhd = "3840x2160"

    var preset: AVCaptureSession.Preset {
        switch self {
        case .high: .high
        case .medium: .medium
        case .low: .low
        case .photo: .photo
        case .qvga: .qvga320x240
        case .cif: .cif352x288
        case .vga: .vga640x480
        case .qHD: .qHD960x540
        case .hd720: .hd1280x720
        case .hd1080: .hd1920x1080
        case .uhd: .hd4K3840x2160
        }
    }
}

/// A camera's pixel format or codec by the name ffmpeg and v4l2-ctl users type (`-input_format mjpeg`), or by
/// the four characters `avcapture formats` prints (`420v`, `yuvs`, `jpeg`, `avc1`).
enum PixelFormatChoice: String, KebabChoice {
    case mjpeg, yuyv, uyvy, nv12, i420, p010, grey, rgb24, bgr24, bgra, h264, hevc

    static let aliases: [String: Self] = [
        "jpeg": .mjpeg, "mjpg": .mjpeg, "dmb1": .mjpeg, "yuvs": .yuyv, "yuy2": .yuyv, "yuyv422": .yuyv,
        "yuvf": .yuyv, "2vuy": .uyvy, "uyvy422": .uyvy, "420v": .nv12, "420f": .nv12, "y420": .i420, "f420": .i420,
        "yu12": .i420, "yuv420p": .i420, "x420": .p010, "xf20": .p010, "gray": .grey, "l008": .grey, "avc1": .h264,
        "hvc1": .hevc, "bgr": .bgr24, "rgb": .rgb24, "24": .rgb24,
    ]

    /// The media subtypes `AVCaptureDevice.Format` carries for it (both ranges where Apple has two codes).
    var mediaSubTypes: Set<FourCharCode> {
        switch self {
        case .mjpeg: [kCMVideoCodecType_JPEG, Self.code("dmb1")]
        case .yuyv: [kCVPixelFormatType_422YpCbCr8_yuvs, kCVPixelFormatType_422YpCbCr8FullRange]
        case .uyvy: [kCVPixelFormatType_422YpCbCr8]
        case .nv12: [kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8BiPlanarFullRange]
        case .i420: [kCVPixelFormatType_420YpCbCr8Planar, kCVPixelFormatType_420YpCbCr8PlanarFullRange]
        case .p010: [kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr10BiPlanarFullRange]
        case .grey: [kCVPixelFormatType_OneComponent8]
        case .rgb24: [kCVPixelFormatType_24RGB]
        case .bgr24: [kCVPixelFormatType_24BGR]
        case .bgra: [kCVPixelFormatType_32BGRA]
        case .h264: [kCMVideoCodecType_H264]
        case .hevc: [kCMVideoCodecType_HEVC]
        }
    }

    /// The name for a media subtype, for `formats`' listing; nil for one with no name here.
    static func named(_ subType: FourCharCode) -> Self? { allCases.first { $0.mediaSubTypes.contains(subType) } }

    private static func code(_ text: String) -> FourCharCode { text.utf8.reduce(0) { $0 << 8 | FourCharCode($1) } }
}

/// `--format`: a camera format by the index `avcapture formats` prints (`4`, `4@15`), or by size, rate and pixel
/// format, each part but the size optional: `1280x720`, `1280x720@30`, `1280x720@30:mjpeg`, `1280x720:yuyv`.
enum FormatSpecification: ExpressibleByArgument, Equatable {
    case index(Int, framesPerSecond: Double?)
    case size(width: Int32, height: Int32, framesPerSecond: Double?, pixelFormat: PixelFormatChoice?)

    init?(argument: String) {
        if let match = argument.wholeMatch(of: /(\d+)(?:@(\d+(?:\.\d+)?))?/) {
            guard let index = Int(match.1) else { return nil }
            let rate = match.2.flatMap { Double($0) }
            if let rate, !(rate > 0) { return nil }
            self = .index(index, framesPerSecond: rate)
            return
        }
        guard let match = argument.wholeMatch(of: /(\d+)[xX](\d+)(?:@(\d+(?:\.\d+)?))?(?::([A-Za-z0-9_-]+))?/),
            let width = Int32(match.1), let height = Int32(match.2), width > 0, height > 0
        else { return nil }
        let rate = match.3.flatMap { Double($0) }
        if let rate, !(rate > 0) { return nil }
        var pixelFormat: PixelFormatChoice?
        if let name = match.4 {
            guard let choice = PixelFormatChoice(argument: String(name)) else { return nil }
            pixelFormat = choice
        }
        self = .size(width: width, height: height, framesPerSecond: rate, pixelFormat: pixelFormat)
    }
}

/// A number of bytes or bits per second with ffmpeg's suffixes (`av_strtod`): k, M, G, T are powers of 1000
/// (`6M` is 6 000 000), Ki, Mi, Gi, Ti powers of 1024 (`2Gi` is 2 147 483 648); a trailing `B` on a size is
/// allowed and changes nothing (`500MB` is `500M`). Fractions are fine (`1.5G`).
struct Quantity: ExpressibleByArgument, Equatable, CustomStringConvertible {
    var value: Int64

    init(_ value: Int64) { self.value = value }

    init?(argument: String) {
        guard let match = argument.wholeMatch(of: /(\d+(?:\.\d+)?)([kKMGT]i?)?[bB]?/),
            let number = Double(match.1)
        else { return nil }
        let unit = match.2.map(String.init) ?? ""
        let powers = ["": 0, "k": 1, "K": 1, "M": 2, "G": 3, "T": 4]
        guard let power = powers[unit.hasSuffix("i") ? String(unit.dropLast()) : unit] else { return nil }
        let scaled = number * pow(unit.hasSuffix("i") ? 1024 : 1000, Double(power))
        guard scaled < 9.2e18 else { return nil }
        value = Int64(scaled.rounded())
    }

    var description: String { String(value) }
}

/// `record --keep`: a number of files (`10`), or a total size (`2G`: anything with a unit, as `Quantity` reads it).
enum KeepLimit: ExpressibleByArgument, Equatable {
    case files(Int)
    case bytes(Int64)

    init?(argument: String) {
        if let count = Int(argument) {
            guard count > 0 else { return nil }
            self = .files(count)
        } else {
            guard let size = Quantity(argument: argument), size.value > 0 else { return nil }
            self = .bytes(size.value)
        }
    }
}

/// `record --screen [N]`: a display by its index in `avcapture devices`, or the main one.
enum ScreenChoice: ExpressibleByArgument, Equatable, CustomStringConvertible {
    case main
    case index(Int)
    /// A window the ScreenCast portal's dialog lets the user choose (Wayland).
    case window

    init?(argument: String) {
        if argument.lowercased() == "main" {
            self = .main
        } else if argument.lowercased() == "window" {
            self = .window
        } else if let index = Int(argument), index >= 0 {
            self = .index(index)
        } else {
            return nil
        }
    }

    var description: String {
        switch self {
        case .main: "main"
        case .index(let index): String(index)
        case .window: "window"
        }
    }
}
