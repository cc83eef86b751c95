import CLinuxMedia
import OpenCoreMedia
import OpenCoreVideo

/// A V4L2 pixel format: the four-character code the kernel uses (`V4L2_PIX_FMT_*`), and what it becomes for us.
///
/// Value type; safe to use from any thread.
package struct V4L2PixelFormat: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The corresponding C constant is `V4L2_PIX_FMT_YUYV`.
    package static let yuyv = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_YUYV)
    /// The corresponding C constant is `V4L2_PIX_FMT_UYVY`.
    package static let uyvy = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_UYVY)
    /// The corresponding C constant is `V4L2_PIX_FMT_NV12`.
    package static let nv12 = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_NV12)
    /// The corresponding C constant is `V4L2_PIX_FMT_P010`: NV12's layout with each sample in the high 10 bits of a
    /// little-endian 16-bit word (`v4l2-ctl --list-formats` shows 'P010', "10-bit Y/UV 4:2:0"), as HDR-capable
    /// capture cards and ISPs deliver it. Apple's `'x420'`.
    package static let p010 = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_P010)
    /// The corresponding C constant is `V4L2_PIX_FMT_YUV420` ('YU12').
    package static let yuv420 = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_YUV420)
    /// The corresponding C constant is `V4L2_PIX_FMT_NV12M`: NV12 with luma and chroma in two buffers, as
    /// multi-planar (SoC, ISP) drivers deliver it.
    package static let nv12m = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_NV12M)
    /// The corresponding C constant is `V4L2_PIX_FMT_YUV420M` ('YM12'): YU12 with each plane in its own buffer.
    package static let yuv420m = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_YUV420M)
    /// The corresponding C constant is `V4L2_PIX_FMT_GREY`.
    package static let grey = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_GREY)
    /// The corresponding C constant is `V4L2_PIX_FMT_RGB24`.
    package static let rgb24 = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_RGB24)
    /// The corresponding C constant is `V4L2_PIX_FMT_BGR24`.
    package static let bgr24 = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_BGR24)
    /// The corresponding C constant is `V4L2_PIX_FMT_MJPEG`.
    package static let mjpeg = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_MJPEG)
    /// The corresponding C constant is `V4L2_PIX_FMT_JPEG` (some cameras say JPEG for MJPEG).
    package static let jpeg = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_JPEG)
    /// The corresponding C constant is `V4L2_PIX_FMT_H264` (Annex B byte stream).
    package static let h264 = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_H264)
    /// The corresponding C constant is `V4L2_PIX_FMT_HEVC` (Annex B byte stream), what HEVC encoders give.
    package static let hevc = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_HEVC)
    /// The corresponding C constant is `V4L2_PIX_FMT_FWHT`: the kernel's test codec (`vicodec`), each frame a
    /// header and its coefficients. Only memory-to-memory encoders give it; no camera does.
    package static let fwht = Self(rawValue: CLinuxMedia_V4L2_PIX_FMT_FWHT)

    /// The four characters, as `v4l2-ctl` prints them.
    package var description: String {
        String(decoding: (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (8 * $0)) }, as: UTF8.self)
    }

    /// What the format becomes: a CoreVideo pixel format delivered in place, a codec delivered compressed, or
    /// nothing (a format we do not offer).
    package var mediaSubType: FourCharCode? {
        switch self {
        case .yuyv: kCVPixelFormatType_422YpCbCr8_yuvs
        case .uyvy: kCVPixelFormatType_422YpCbCr8
        case .nv12, .nv12m: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
        case .p010: kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange
        case .yuv420, .yuv420m: kCVPixelFormatType_420YpCbCr8Planar
        case .grey: kCVPixelFormatType_OneComponent8
        case .rgb24: kCVPixelFormatType_24RGB
        case .bgr24: kCVPixelFormatType_24BGR
        case .mjpeg, .jpeg: kCMVideoCodecType_JPEG
        case .h264: kCMVideoCodecType_H264
        default: nil
        }
    }

    /// The pixel format frames are delivered in when the driver reports the range (see
    /// `V4L2Colorimetry.isFullRange`): Apple's full-range twin where it has one (`'420f'`, `'f420'`, `'yuvf'`),
    /// else ``mediaSubType`` (UYVY has no full-range code in Apple's API; grey and RGB are full range already).
    package func mediaSubType(fullRange: Bool) -> FourCharCode? {
        guard fullRange else { return mediaSubType }
        switch self {
        case .nv12, .nv12m: return kCVPixelFormatType_420YpCbCr8BiPlanarFullRange
        case .yuv420, .yuv420m: return kCVPixelFormatType_420YpCbCr8PlanarFullRange
        case .yuyv: return kCVPixelFormatType_422YpCbCr8FullRange
        case .p010: return kCVPixelFormatType_420YpCbCr10BiPlanarFullRange
        default: return mediaSubType
        }
    }

    /// How many memory buffers one frame takes on a multi-planar queue: one per image plane for the `…M` formats,
    /// one for every other format (its planes follow each other in that buffer).
    package var memoryPlaneCount: Int {
        switch self {
        case .nv12m: 2
        case .yuv420m: 3
        default: 1
        }
    }

    /// Whether frames arrive compressed (delivered as a block buffer, not a pixel buffer).
    package var isCompressed: Bool { self == .mjpeg || self == .jpeg || self == .h264 }

    /// The order formats are listed in for one size: the formats a delegate takes without conversion first (NV12,
    /// then the packed 4:2:2 ones, …), compressed ones last, so presets that take the first match prefer them. P010
    /// comes after the 8-bit Y'CbCr formats: twice the bytes, and every 8-bit output converts it.
    package var listingRank: Int {
        switch self {
        case .nv12, .nv12m: 0
        case .yuyv: 1
        case .uyvy: 2
        case .yuv420, .yuv420m: 3
        case .p010: 4
        case .bgr24: 5
        case .rgb24: 6
        case .grey: 7
        case .mjpeg, .jpeg: 8
        case .h264: 9
        default: 10
        }
    }
}
