// Pixel format codes with Apple's values (CVPixelBuffer.h), and the geometry table every buffer is laid out from.

// MARK: - Pixel format constants

/// 24-bit RGB, packed, 3 bytes per pixel ordered R G B. Apple's value is the number 24 (`0x18`), not a
/// four-character code.
public let kCVPixelFormatType_24RGB: OSType = 0x0000_0018

/// 24-bit BGR, packed, 3 bytes per pixel ordered B G R (`'24BG'`).
public let kCVPixelFormatType_24BGR: OSType = 0x3234_4247

/// 32-bit ARGB, 4 bytes per pixel ordered A R G B. Apple's value is the number 32 (`0x20`), not a
/// four-character code.
public let kCVPixelFormatType_32ARGB: OSType = 0x0000_0020

/// 32-bit BGRA, 4 bytes per pixel ordered B G R A (`'BGRA'`); the usual RGB format of capture outputs.
public let kCVPixelFormatType_32BGRA: OSType = 0x4247_5241

/// 32-bit ABGR, 4 bytes per pixel ordered A B G R (`'ABGR'`).
public let kCVPixelFormatType_32ABGR: OSType = 0x4142_4752

/// 32-bit RGBA, 4 bytes per pixel ordered R G B A (`'RGBA'`).
public let kCVPixelFormatType_32RGBA: OSType = 0x5247_4241

/// Y'CbCr 8-bit 4:2:2, packed, ordered Cb Y'0 Cr Y'1 (`'2vuy'`; UYVY in V4L2 and FFmpeg).
public let kCVPixelFormatType_422YpCbCr8: OSType = 0x3276_7579

/// Y'CbCr 8-bit 4:2:2, packed, ordered Y'0 Cb Y'1 Cr (`'yuvs'`; YUYV in V4L2, the commonest webcam format).
public let kCVPixelFormatType_422YpCbCr8_yuvs: OSType = 0x7975_7673

/// Y'CbCr 8-bit 4:2:2, packed, ordered Y'0 Cb Y'1 Cr, full range (`'yuvf'`).
public let kCVPixelFormatType_422YpCbCr8FullRange: OSType = 0x7975_7666

/// Y'CbCr 8-bit 4:2:0, three planes Y', Cb, Cr, video range (`'y420'`; I420 in V4L2 and FFmpeg).
public let kCVPixelFormatType_420YpCbCr8Planar: OSType = 0x7934_3230

/// Y'CbCr 8-bit 4:2:0, three planes Y', Cb, Cr, full range (`'f420'`).
public let kCVPixelFormatType_420YpCbCr8PlanarFullRange: OSType = 0x6634_3230

/// Y'CbCr 8-bit 4:2:0, two planes: Y', then interleaved CbCr; video range, luma 16–235 (`'420v'`; NV12).
///
/// The native format of the virtual cameras and of most capture pipelines.
public let kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange: OSType = 0x3432_3076

/// Y'CbCr 8-bit 4:2:0, two planes: Y', then interleaved CbCr; full range, luma 0–255 (`'420f'`; NV12).
public let kCVPixelFormatType_420YpCbCr8BiPlanarFullRange: OSType = 0x3432_3066

/// One 8-bit component per pixel, black is zero (`'L008'`; grey).
public let kCVPixelFormatType_OneComponent8: OSType = 0x4C30_3038

/// Two 8-bit components per pixel, black is zero (`'2C08'`).
public let kCVPixelFormatType_TwoComponent8: OSType = 0x3243_3038

/// Y'CbCr 10-bit 4:2:0, two planes like NV12, each sample in the high 10 bits of a little-endian 16-bit word;
/// video range (`'x420'`; V4L2's and FFmpeg's P010).
public let kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange: OSType = 0x7834_3230
/// Y'CbCr 10-bit 4:2:0 laid out as ``kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange``, full range (`'xf20'`).
public let kCVPixelFormatType_420YpCbCr10BiPlanarFullRange: OSType = 0x7866_3230

/// Depth in metres, one 32-bit float per pixel (`'fdep'`). Only depth cameras make it; none here do.
public let kCVPixelFormatType_DepthFloat32: OSType = 0x6664_6570
/// Depth in metres, one 16-bit float per pixel (`'hdep'`).
public let kCVPixelFormatType_DepthFloat16: OSType = 0x6864_6570
/// Disparity (1/metres), one 32-bit float per pixel (`'fdis'`).
public let kCVPixelFormatType_DisparityFloat32: OSType = 0x6664_6973
/// Disparity (1/metres), one 16-bit float per pixel (`'hdis'`).
public let kCVPixelFormatType_DisparityFloat16: OSType = 0x6864_6973

// MARK: - Geometry table

/// How one pixel format is laid out in memory: its planes and, for each, the bytes per block of pixels and the
/// chroma subsampling. Every buffer's plane widths, heights and row sizes are computed from this table.
///
/// Threading: an immutable value.
package struct PixelFormatDescription: Sendable, Hashable, CustomStringConvertible {
    /// The layout of one plane (or, for a non-planar format, of the whole image).
    package struct Plane: Sendable, Hashable {
        /// Bytes in one block of `pixelsPerBlock` samples: 4 for BGRA, 2 for an NV12 CbCr pair, 4 for a `yuvs`
        /// pair of pixels (Y'0 Cb Y'1 Cr).
        package var bytesPerBlock: Int
        /// Samples a block covers horizontally: 2 for the packed 4:2:2 formats, 1 otherwise.
        package var pixelsPerBlock: Int
        /// The image's width divided by this is the plane's width, rounded up: 2 for 4:2:0 and 4:2:2 chroma planes.
        package var horizontalSubsampling: Int
        /// The image's height divided by this is the plane's height, rounded up: 2 for 4:2:0 chroma planes.
        package var verticalSubsampling: Int

        package init(bytesPerBlock: Int, pixelsPerBlock: Int = 1, horizontalSubsampling: Int = 1,
                     verticalSubsampling: Int = 1) {
            self.bytesPerBlock = bytesPerBlock
            self.pixelsPerBlock = pixelsPerBlock
            self.horizontalSubsampling = horizontalSubsampling
            self.verticalSubsampling = verticalSubsampling
        }

        /// The plane's width in samples for an image `width` pixels wide; odd widths round up.
        package func width(forImageWidth width: Int) -> Int {
            (width + horizontalSubsampling - 1) / horizontalSubsampling
        }

        /// The plane's height in rows for an image `height` pixels high; odd heights round up.
        package func height(forImageHeight height: Int) -> Int {
            (height + verticalSubsampling - 1) / verticalSubsampling
        }

        /// The bytes that a row of `planeWidth` samples occupies, before any padding for alignment; `nil` on
        /// overflow.
        package func minimumBytesPerRow(forPlaneWidth planeWidth: Int) -> Int? {
            let blocks = (planeWidth + pixelsPerBlock - 1) / pixelsPerBlock
            let (bytes, overflow) = blocks.multipliedReportingOverflow(by: bytesPerBlock)
            return overflow ? nil : bytes
        }

        /// Average bytes per sample of the plane: 1 for Y', 2 for NV12 CbCr pairs and for `yuvs`, 4 for BGRA.
        package var bytesPerPixel: Double { Double(bytesPerBlock) / Double(pixelsPerBlock) }
    }

    /// The format's code, such as ``kCVPixelFormatType_32BGRA``.
    package let pixelFormat: OSType
    /// A short name for messages and documentation: the constant's name without `kCVPixelFormatType_`.
    package let name: String
    /// Whether the format has planes: ``CVPixelBufferGetPlaneCount(_:)`` is `planes.count` when true and 0 when
    /// false.
    package let isPlanar: Bool
    /// The planes in order; a non-planar format has exactly one entry that describes the whole image.
    package let planes: [Plane]

    package var description: String { name }

    /// The most planes any format has; a buffer stores its plane geometry inline for this many.
    package static let maximumPlaneCount = 3

    /// The description of `pixelFormat`, or `nil` if OpenCoreVideo does not know the format.
    package static func describing(_ pixelFormat: OSType) -> PixelFormatDescription? {
        switch pixelFormat {
        case kCVPixelFormatType_24RGB: return rgb24
        case kCVPixelFormatType_24BGR: return bgr24
        case kCVPixelFormatType_32ARGB: return argb32
        case kCVPixelFormatType_32BGRA: return bgra32
        case kCVPixelFormatType_32ABGR: return abgr32
        case kCVPixelFormatType_32RGBA: return rgba32
        case kCVPixelFormatType_422YpCbCr8: return uyvy
        case kCVPixelFormatType_422YpCbCr8_yuvs: return yuvs
        case kCVPixelFormatType_422YpCbCr8FullRange: return yuvf
        case kCVPixelFormatType_420YpCbCr8Planar: return i420
        case kCVPixelFormatType_420YpCbCr8PlanarFullRange: return i420FullRange
        case kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange: return nv12
        case kCVPixelFormatType_420YpCbCr8BiPlanarFullRange: return nv12FullRange
        case kCVPixelFormatType_OneComponent8: return oneComponent8
        case kCVPixelFormatType_TwoComponent8: return twoComponent8
        case kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange: return p010
        case kCVPixelFormatType_420YpCbCr10BiPlanarFullRange: return p010FullRange
        case kCVPixelFormatType_DepthFloat32: return depthFloat32
        case kCVPixelFormatType_DepthFloat16: return depthFloat16
        case kCVPixelFormatType_DisparityFloat32: return disparityFloat32
        case kCVPixelFormatType_DisparityFloat16: return disparityFloat16
        default: return nil
        }
    }

    /// Every format OpenCoreVideo can allocate, in the order of the documentation's table.
    package static let all: [PixelFormatDescription] = [
        bgra32, argb32, abgr32, rgba32, rgb24, bgr24,
        nv12, nv12FullRange, i420, i420FullRange,
        yuvs, yuvf, uyvy,
        oneComponent8, twoComponent8,
        p010, p010FullRange, depthFloat32, depthFloat16, disparityFloat32, disparityFloat16,
    ]

    private static func packed(_ format: OSType, _ name: String, bytesPerBlock: Int, pixelsPerBlock: Int = 1)
        -> PixelFormatDescription
    {
        PixelFormatDescription(
            pixelFormat: format, name: name, isPlanar: false,
            planes: [Plane(bytesPerBlock: bytesPerBlock, pixelsPerBlock: pixelsPerBlock)])
    }

    private static let luma = Plane(bytesPerBlock: 1)
    private static let chroma420 = Plane(bytesPerBlock: 1, horizontalSubsampling: 2, verticalSubsampling: 2)
    private static let interleavedChroma420 = Plane(
        bytesPerBlock: 2, horizontalSubsampling: 2, verticalSubsampling: 2)

    private static let rgb24 = packed(kCVPixelFormatType_24RGB, "24RGB", bytesPerBlock: 3)
    private static let bgr24 = packed(kCVPixelFormatType_24BGR, "24BGR", bytesPerBlock: 3)
    private static let argb32 = packed(kCVPixelFormatType_32ARGB, "32ARGB", bytesPerBlock: 4)
    private static let bgra32 = packed(kCVPixelFormatType_32BGRA, "32BGRA", bytesPerBlock: 4)
    private static let abgr32 = packed(kCVPixelFormatType_32ABGR, "32ABGR", bytesPerBlock: 4)
    private static let rgba32 = packed(kCVPixelFormatType_32RGBA, "32RGBA", bytesPerBlock: 4)
    private static let uyvy = packed(kCVPixelFormatType_422YpCbCr8, "422YpCbCr8", bytesPerBlock: 4, pixelsPerBlock: 2)
    private static let yuvs = packed(
        kCVPixelFormatType_422YpCbCr8_yuvs, "422YpCbCr8_yuvs", bytesPerBlock: 4, pixelsPerBlock: 2)
    private static let yuvf = packed(
        kCVPixelFormatType_422YpCbCr8FullRange, "422YpCbCr8FullRange", bytesPerBlock: 4, pixelsPerBlock: 2)
    private static let oneComponent8 = packed(kCVPixelFormatType_OneComponent8, "OneComponent8", bytesPerBlock: 1)
    private static let twoComponent8 = packed(kCVPixelFormatType_TwoComponent8, "TwoComponent8", bytesPerBlock: 2)
    private static let depthFloat32 = packed(kCVPixelFormatType_DepthFloat32, "DepthFloat32", bytesPerBlock: 4)
    private static let depthFloat16 = packed(kCVPixelFormatType_DepthFloat16, "DepthFloat16", bytesPerBlock: 2)
    private static let disparityFloat32 = packed(
        kCVPixelFormatType_DisparityFloat32, "DisparityFloat32", bytesPerBlock: 4)
    private static let disparityFloat16 = packed(
        kCVPixelFormatType_DisparityFloat16, "DisparityFloat16", bytesPerBlock: 2)
    private static let p010 = PixelFormatDescription(
        pixelFormat: kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange, name: "420YpCbCr10BiPlanarVideoRange",
        isPlanar: true,
        planes: [
            Plane(bytesPerBlock: 2), Plane(bytesPerBlock: 4, horizontalSubsampling: 2, verticalSubsampling: 2),
        ])
    private static let p010FullRange = PixelFormatDescription(
        pixelFormat: kCVPixelFormatType_420YpCbCr10BiPlanarFullRange, name: "420YpCbCr10BiPlanarFullRange",
        isPlanar: true,
        planes: [
            Plane(bytesPerBlock: 2), Plane(bytesPerBlock: 4, horizontalSubsampling: 2, verticalSubsampling: 2),
        ])
    private static let i420 = PixelFormatDescription(
        pixelFormat: kCVPixelFormatType_420YpCbCr8Planar, name: "420YpCbCr8Planar", isPlanar: true,
        planes: [luma, chroma420, chroma420])
    private static let i420FullRange = PixelFormatDescription(
        pixelFormat: kCVPixelFormatType_420YpCbCr8PlanarFullRange, name: "420YpCbCr8PlanarFullRange",
        isPlanar: true, planes: [luma, chroma420, chroma420])
    private static let nv12 = PixelFormatDescription(
        pixelFormat: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, name: "420YpCbCr8BiPlanarVideoRange",
        isPlanar: true, planes: [luma, interleavedChroma420])
    private static let nv12FullRange = PixelFormatDescription(
        pixelFormat: kCVPixelFormatType_420YpCbCr8BiPlanarFullRange, name: "420YpCbCr8BiPlanarFullRange",
        isPlanar: true, planes: [luma, interleavedChroma420])
}

/// The four-character code of `string`, first character in the most significant byte; `nil` unless `string` is
/// exactly four ASCII characters. `fourCharCode("BGRA") == kCVPixelFormatType_32BGRA`.
package func fourCharCode(_ string: String) -> FourCharCode? {
    let bytes = Array(string.utf8)
    guard bytes.count == 4, bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
    return bytes.reduce(0) { $0 << 8 | FourCharCode($1) }
}

/// A readable form of a pixel format code: `'BGRA'` for four printable characters, else hexadecimal (`0x00000020`).
package func fourCharCodeDescription(_ code: FourCharCode) -> String {
    let bytes = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: code >> $0) }
    if bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
        return "'" + String(decoding: bytes, as: UTF8.self) + "'"
    }
    let hex = String(code, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, 8 - hex.count)) + hex
}
