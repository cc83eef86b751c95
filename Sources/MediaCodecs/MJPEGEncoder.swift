// MJPEGEncoder: frames as a USB webcam sends them in MJPEG mode, baseline JFIF 4:2:2, with TurboJPEG.

import CTurboJPEG
import Foundation
import OpenCoreVideo

/// Encodes packed 4:2:2 frames (YUYV) as the JPEG images of a webcam's MJPEG stream: baseline JFIF, full-range
/// BT.601, 4:2:2 chroma (what UVC cameras send), no EXIF.
///
/// Each frame goes through BGRA: ``PixelBufferConverter`` (libswscale, the source's matrix and range) and then
/// `tjCompress2` with `TJSAMP_422`, which converts to JFIF's Y'CbCr itself. Why not straight from Y'CbCr planes
/// with a matrix pass of our own, as ``JPEGEncoder`` does for stills: the virtual webcam encodes every frame on its
/// capture thread, and that per-pixel pass in Swift took about 130 ms a 1080p frame in a debug build (the build
/// tests run), against about 10 ms for the whole encode this way (both measured on the build machine). The
/// converter's one BGRA buffer and TurboJPEG's output buffer are reused, so a stream allocates nothing per frame
/// once the output has grown to the largest image; ``encode(_:matrix:_:)`` lends the image to a closure instead of
/// copying it out.
///
/// Inputs: `'yuvs'` (video range) and `'yuvf'` (full range). Anything else is
/// ``MediaCodecsError/Kind/unsupportedConversion``.
///
/// Wraps `tjInitCompress`, `tjCompress2`, `tjGetErrorStr2`, `tjFree` and `tjDestroy`; the encoder is the one owner of
/// its handle and buffers and frees them in `deinit`.
///
/// Threading: thread-bound; use one encoder from one thread at a time (a camera's capture thread). Not `Sendable`.
package final class MJPEGEncoder {
    /// The pixel formats ``encode(_:matrix:_:)`` takes.
    package static let supportedPixelFormats: [OSType] = [
        kCVPixelFormatType_422YpCbCr8_yuvs, kCVPixelFormatType_422YpCbCr8FullRange,
    ]

    /// The JPEG quality, 1…100 (TurboJPEG's scale).
    package let quality: Int32
    private let handle: tjhandle
    private var output: UnsafeMutablePointer<UInt8>?
    private var outputCapacity: UInt = 0
    /// YUYV to BGRA for the current source format and matrix; remade when either changes.
    private var converter: (converter: PixelBufferConverter, matrix: YCbCrMatrix)?

    /// An encoder at `quality` (0…1; 0.85 by default, about what webcams send: the frame-index code and fine
    /// detail survive, a 1080p frame is a few hundred kilobytes).
    package init(quality: Double = 0.85) throws(MediaCodecsError) {
        guard let handle = tjInitCompress() else {
            throw MediaCodecsError(
                .allocationFailed, while: "creating a TurboJPEG compressor", message: "tjInitCompress failed")
        }
        self.handle = handle
        self.quality = Int32(min(100, max(1, (quality * 100).rounded())))
    }

    deinit {
        if let output { tjFree(output) }
        tjDestroy(handle)
    }

    /// Encodes `image` (its Y'CbCr made with `matrix`) and calls `body` with the JPEG file's bytes, valid only
    /// during the call.
    ///
    /// - Throws: ``MediaCodecsError``: ``MediaCodecsError/Kind/unsupportedConversion`` for another pixel format,
    ///   the converter's errors, ``MediaCodecsError/Kind/unsupportedConfiguration`` with TurboJPEG's message when it
    ///   fails.
    package func encode<Result>(
        _ image: CVPixelBuffer, matrix: YCbCrMatrix, _ body: (UnsafeRawBufferPointer) -> Result
    ) throws(MediaCodecsError) -> Result {
        let source = PixelBufferConverter.Format(of: image)
        let operation = "encoding a \(source) frame as 4:2:2 JPEG"
        guard Self.supportedPixelFormats.contains(source.pixelFormatType) else {
            throw MediaCodecsError(
                .unsupportedConversion, while: operation, message: "the encoder takes YUYV ('yuvs', 'yuvf')")
        }
        if converter?.converter.source != source || converter?.matrix != matrix {
            let bgra = PixelBufferConverter.Format(
                pixelFormatType: kCVPixelFormatType_32BGRA, width: source.width, height: source.height)
            converter = (
                try PixelBufferConverter(from: source, to: bgra, matrix: matrix, minimumBufferCount: 1, bufferLimit: 1),
                matrix
            )
        }
        // The BGRA buffer goes back to the converter's pool when this returns.
        let rgb = try converter!.converter.convert(image)
        var size = outputCapacity
        let status = rgb.withLockedPlanes(.readOnly) { planes -> Int32 in
            let plane = planes[0]
            return tjCompress2(
                handle, plane.baseAddress.assumingMemoryBound(to: UInt8.self), Int32(source.width),
                Int32(plane.bytesPerRow), Int32(source.height), Int32(TJPF_BGRA.rawValue), &output, &size,
                Int32(TJSAMP_422.rawValue), quality, Int32(TJFLAG_FASTDCT))
        }
        guard status == 0, let output else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation, message: String(cString: tjGetErrorStr2(handle)))
        }
        outputCapacity = max(outputCapacity, size)
        return body(UnsafeRawBufferPointer(start: output, count: Int(size)))
    }
}
