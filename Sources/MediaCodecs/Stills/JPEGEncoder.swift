// JPEGEncoder: still images to baseline JPEG with libjpeg-turbo's TurboJPEG, an EXIF segment put in front.

import CTurboJPEG
import Foundation
import OpenCoreVideo

/// Encodes pixel buffers as baseline 4:2:0 JPEG files with TurboJPEG, optionally with an EXIF APP1 segment.
///
/// Inputs: NV12 ('420v' video range, '420f' full range; the caller names the matrix, BT.709 for the virtual
/// cameras) goes through ``JFIFPlanes`` into `tjCompressFromYUVPlanes`; BGRA goes to `tjCompress2`, which converts
/// itself. Anything else is ``MediaCodecsError/Kind/unsupportedConversion``: convert to NV12 first.
///
/// The file: SOI, then the EXIF segment when given (as the first segment, where EXIF 2.3 puts it and where
/// Apple's cameras write it; TurboJPEG's JFIF APP0 is dropped then, since EXIF and JFIF do not go together),
/// then TurboJPEG's tables and scan. Made with one copy out of TurboJPEG's reused buffer.
///
/// Wraps `tjInitCompress`, `tjCompressFromYUVPlanes`, `tjCompress2`, `tjGetErrorStr2`, `tjFree` and `tjDestroy`.
/// The encoder owns its handle and its output buffer and frees both in `deinit`.
///
/// Threading: thread-bound; use one encoder from one thread at a time (a serial queue).
package final class JPEGEncoder {
    private let handle: tjhandle
    private let planes = JFIFPlanes()
    /// TurboJPEG's output buffer, reused between calls (it grows it when needed).
    private var output: UnsafeMutablePointer<UInt8>?
    private var outputCapacity: UInt = 0

    /// The pixel formats ``encode(_:quality:matrix:exif:)`` takes.
    package static let supportedPixelFormats: [OSType] = [
        kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8BiPlanarFullRange,
        kCVPixelFormatType_32BGRA,
    ]

    package init() throws(MediaCodecsError) {
        guard let handle = tjInitCompress() else {
            throw MediaCodecsError(
                .allocationFailed, while: "creating a TurboJPEG compressor", message: "tjInitCompress failed")
        }
        self.handle = handle
    }

    deinit {
        if let output { tjFree(output) }
        tjDestroy(handle)
    }

    /// The JPEG file of `image` at `quality` (0...1, as `AVVideoQualityKey`), with `exif` (an APP1 payload
    /// starting "Exif\0\0", as ``ExifWriter`` makes) as its first segment when given.
    package func encode(
        _ image: CVPixelBuffer, quality: Double, matrix: YCbCrMatrix = .itu709, exif: [UInt8]? = nil
    ) throws(MediaCodecsError) -> Data {
        let format = CVPixelBufferGetPixelFormatType(image)
        let width = CVPixelBufferGetWidth(image)
        let height = CVPixelBufferGetHeight(image)
        let operation = "encoding a \(width)x\(height) \(fourCharCodeDescription(format)) image as JPEG"
        guard Self.supportedPixelFormats.contains(format) else {
            throw MediaCodecsError(
                .unsupportedConversion, while: operation, message: "TurboJPEG is fed NV12 or BGRA; convert first")
        }
        let jpegQuality = Int32(min(100, max(1, (quality * 100).rounded())))
        let subsampling = Int32(TJSAMP_420.rawValue)
        // The fast integer DCT is a third quicker at 12 MP; its error only shows at the top qualities (TurboJPEG's
        // documentation), so those keep the accurate one.
        let flags = jpegQuality > 90 ? Int32(TJFLAG_ACCURATEDCT) : Int32(TJFLAG_FASTDCT)
        var size = outputCapacity
        let status = image.withLockedPlanes(.readOnly) { locked -> Int32 in
            if format == kCVPixelFormatType_32BGRA {
                let plane = locked[0]
                return tjCompress2(
                    handle, plane.baseAddress.assumingMemoryBound(to: UInt8.self), Int32(width),
                    Int32(plane.bytesPerRow), Int32(height), Int32(TJPF_BGRA.rawValue), &output, &size, subsampling,
                    jpegQuality, flags)
            }
            return planes.withPlanes(
                from: locked, fullRange: format == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange, matrix: matrix
            ) { pointers, strides in
                var sources: [UnsafePointer<UInt8>?] = pointers
                return tjCompressFromYUVPlanes(
                    handle, &sources, Int32(width), strides, Int32(height), subsampling, &output, &size, jpegQuality,
                    flags)
            }
        }
        guard status == 0, let output else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation, message: String(cString: tjGetErrorStr2(handle)))
        }
        outputCapacity = max(outputCapacity, size)
        return Self.assemble(UnsafeBufferPointer(start: output, count: Int(size)), exif: exif)
    }

    /// SOI, the EXIF segment, and the rest of TurboJPEG's file without its JFIF APP0.
    static func assemble(_ jpeg: UnsafeBufferPointer<UInt8>, exif: [UInt8]?) -> Data {
        guard let exif, jpeg.count > 4 else { return Data(jpeg) }
        var rest = 2
        // TurboJPEG writes FF E0 <length> "JFIF"… right after SOI; skip it when present.
        if jpeg[2] == 0xFF && jpeg[3] == 0xE0 && jpeg.count > 6 {
            rest = 4 + (Int(jpeg[4]) << 8 | Int(jpeg[5]))
        }
        let segmentLength = exif.count + 2
        var file = Data(capacity: jpeg.count + segmentLength + 4)
        file.append(contentsOf: [0xFF, 0xD8, 0xFF, 0xE1, UInt8(segmentLength >> 8), UInt8(segmentLength & 0xFF)])
        file.append(contentsOf: exif)
        file.append(contentsOf: UnsafeBufferPointer(rebasing: jpeg[rest...]))
        return file
    }

    /// The largest EXIF payload one APP1 segment holds (its length field counts itself).
    package static let maximumExifPayload = 65_533
}
