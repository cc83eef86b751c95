import CFFmpeg
import OpenCoreVideo

/// How one of our pixel formats looks to libswscale.
struct FFmpegPixelFormat {
    /// libswscale's format.
    let format: AVPixelFormat
    /// Whether the samples are Y'CbCr (else RGB or grey).
    let isYCbCr: Bool
    /// Whether the format is grey (luma only).
    let isGray: Bool
    /// Whether Y'CbCr or grey samples use the full 0–255 range (always true for RGB).
    let isFullRange: Bool
    /// The number of planes libswscale reads or writes (1 for packed formats).
    let planeCount: Int

    /// Y'CbCr or grey: the formats between which libswscale keeps the matrix.
    var isYCbCrOrGray: Bool { isYCbCr || isGray }

    /// The mapping of `pixelFormat`, or `nil` when it is not supported.
    init?(_ pixelFormat: OSType) {
        switch pixelFormat {
        case kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange: self.init(AV_PIX_FMT_NV12, yuv: true, full: false, 2)
        case kCVPixelFormatType_420YpCbCr8BiPlanarFullRange: self.init(AV_PIX_FMT_NV12, yuv: true, full: true, 2)
        case kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange: self.init(AV_PIX_FMT_P010LE, yuv: true, full: false, 2)
        case kCVPixelFormatType_420YpCbCr10BiPlanarFullRange: self.init(AV_PIX_FMT_P010LE, yuv: true, full: true, 2)
        case kCVPixelFormatType_420YpCbCr8Planar: self.init(AV_PIX_FMT_YUV420P, yuv: true, full: false, 3)
        case kCVPixelFormatType_420YpCbCr8PlanarFullRange: self.init(AV_PIX_FMT_YUV420P, yuv: true, full: true, 3)
        case kCVPixelFormatType_422YpCbCr8_yuvs: self.init(AV_PIX_FMT_YUYV422, yuv: true, full: false, 1)
        case kCVPixelFormatType_422YpCbCr8FullRange: self.init(AV_PIX_FMT_YUYV422, yuv: true, full: true, 1)
        case kCVPixelFormatType_422YpCbCr8: self.init(AV_PIX_FMT_UYVY422, yuv: true, full: false, 1)
        case kCVPixelFormatType_32BGRA: self.init(AV_PIX_FMT_BGRA, yuv: false, full: true, 1)
        case kCVPixelFormatType_32ARGB: self.init(AV_PIX_FMT_ARGB, yuv: false, full: true, 1)
        case kCVPixelFormatType_32ABGR: self.init(AV_PIX_FMT_ABGR, yuv: false, full: true, 1)
        case kCVPixelFormatType_32RGBA: self.init(AV_PIX_FMT_RGBA, yuv: false, full: true, 1)
        case kCVPixelFormatType_24RGB: self.init(AV_PIX_FMT_RGB24, yuv: false, full: true, 1)
        case kCVPixelFormatType_24BGR: self.init(AV_PIX_FMT_BGR24, yuv: false, full: true, 1)
        case kCVPixelFormatType_OneComponent8:
            self.init(format: AV_PIX_FMT_GRAY8, isYCbCr: false, isGray: true, isFullRange: true, planeCount: 1)
        default: return nil
        }
    }

    private init(_ format: AVPixelFormat, yuv: Bool, full: Bool, _ planeCount: Int) {
        self.init(format: format, isYCbCr: yuv, isGray: false, isFullRange: full, planeCount: planeCount)
    }

    private init(format: AVPixelFormat, isYCbCr: Bool, isGray: Bool, isFullRange: Bool, planeCount: Int) {
        self.format = format
        self.isYCbCr = isYCbCr
        self.isGray = isGray
        self.isFullRange = isFullRange
        self.planeCount = planeCount
    }

    /// Every supported format, in the documentation's order.
    static let supported: [OSType] = [
        kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8BiPlanarFullRange,
        kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr10BiPlanarFullRange,
        kCVPixelFormatType_420YpCbCr8Planar, kCVPixelFormatType_420YpCbCr8PlanarFullRange,
        kCVPixelFormatType_422YpCbCr8_yuvs, kCVPixelFormatType_422YpCbCr8FullRange, kCVPixelFormatType_422YpCbCr8,
        kCVPixelFormatType_32BGRA, kCVPixelFormatType_32ARGB, kCVPixelFormatType_32ABGR, kCVPixelFormatType_32RGBA,
        kCVPixelFormatType_24RGB, kCVPixelFormatType_24BGR, kCVPixelFormatType_OneComponent8,
    ]
}

/// A pixel format's four-character code as text ("420v"), or its number for the small Apple codes (24RGB is
/// 0x18, 32ARGB is 0x20).
func pixelFormatName(_ pixelFormat: OSType) -> String {
    let bytes = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: pixelFormat >> $0) }
    guard bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else {
        switch pixelFormat {
        case kCVPixelFormatType_24RGB: return "24RGB"
        case kCVPixelFormatType_32ARGB: return "32ARGB"
        default: return "0x" + String(pixelFormat, radix: 16)
        }
    }
    return String(decoding: bytes, as: UTF8.self)
}
