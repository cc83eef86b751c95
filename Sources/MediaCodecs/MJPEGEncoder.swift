// MJPEGEncoder: frames as a USB webcam sends them in MJPEG mode, baseline JFIF 4:2:2, with TurboJPEG.

import CTurboJPEG
import Foundation
import OpenCoreVideo

/// Encodes packed 4:2:2 frames (YUYV) as the JPEG images of a webcam's MJPEG stream: baseline JFIF, full-range
/// BT.601, 4:2:2 chroma (what UVC cameras send), no EXIF.
///
/// Each frame is rewritten into three planes in one fixed-point table pass (the source's range and matrix to
/// JFIF's, with the tables ``JFIFPlanes`` uses for stills), then `tjCompressFromYUVPlanes` compresses them with
/// `TJSAMP_422`. The planes and TurboJPEG's output buffer are kept and reused, so a stream allocates nothing per
/// frame once the output has grown to the largest image; ``encode(_:matrix:_:)`` lends the image to a closure
/// instead of copying it out.
///
/// Inputs: `'yuvs'` (video range) and `'yuvf'` (full range), even width. Anything else is
/// ``MediaCodecsError/Kind/unsupportedConversion``.
///
/// Wraps `tjInitCompress`, `tjCompressFromYUVPlanes`, `tjGetErrorStr2`, `tjFree` and `tjDestroy`; the encoder is the
/// one owner of its handle and buffers and frees them in `deinit`.
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
    private var planes: [UInt8] = []
    private var tables: ConversionTables?

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
    /// - Throws: ``MediaCodecsError``: ``MediaCodecsError/Kind/unsupportedConversion`` for another pixel format or
    ///   an odd width, ``MediaCodecsError/Kind/unsupportedConfiguration`` with TurboJPEG's message when it fails.
    package func encode<Result>(
        _ image: CVPixelBuffer, matrix: YCbCrMatrix, _ body: (UnsafeRawBufferPointer) -> Result
    ) throws(MediaCodecsError) -> Result {
        let format = CVPixelBufferGetPixelFormatType(image)
        let width = CVPixelBufferGetWidth(image)
        let height = CVPixelBufferGetHeight(image)
        let operation = "encoding a \(width)x\(height) \(fourCharCodeDescription(format)) frame as 4:2:2 JPEG"
        guard Self.supportedPixelFormats.contains(format), width % 2 == 0, width > 0, height > 0 else {
            throw MediaCodecsError(
                .unsupportedConversion, while: operation, message: "the encoder takes YUYV ('yuvs', 'yuvf') of even width")
        }
        let key = ConversionTables.Key(fullRange: format == kCVPixelFormatType_422YpCbCr8FullRange, matrix: matrix)
        if tables?.key != key { tables = ConversionTables(key) }
        let chromaWidth = width / 2
        if planes.count < 2 * width * height { planes = [UInt8](repeating: 0, count: 2 * width * height) }
        var size = outputCapacity
        let status = planes.withUnsafeMutableBufferPointer { planeBytes -> Int32 in
            let luma = planeBytes.baseAddress!
            let cb = luma + width * height
            let cr = cb + chromaWidth * height
            image.withLockedPlanes(.readOnly) { locked in
                let source = locked[0]
                tables!.withPointers { t in
                    let job = PackedToPlanarJob(
                        source: source.baseAddress.assumingMemoryBound(to: UInt8.self), sourceStride: source.bytesPerRow,
                        luma: luma, cb: cb, cr: cr, width: width, tables: t)
                    // Bands on every core for HD frames, as JFIFPlanes does: the pass is a third of the encode time.
                    let bands = height >= 512 ? max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8)) : 1
                    DispatchQueue.concurrentPerform(iterations: bands) { band in
                        job.run(rows: (height * band / bands)..<(height * (band + 1) / bands))
                    }
                }
            }
            var sources: [UnsafePointer<UInt8>?] = [UnsafePointer(luma), UnsafePointer(cb), UnsafePointer(cr)]
            var strides: [Int32] = [Int32(width), Int32(chromaWidth), Int32(chromaWidth)]
            return tjCompressFromYUVPlanes(
                handle, &sources, Int32(width), &strides, Int32(height), Int32(TJSAMP_422.rawValue), &output, &size,
                quality, Int32(TJFLAG_FASTDCT))
        }
        guard status == 0, let output else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation, message: String(cString: tjGetErrorStr2(handle)))
        }
        outputCapacity = max(outputCapacity, size)
        return body(UnsafeRawBufferPointer(start: output, count: Int(size)))
    }
}

/// One YUYV frame's rewrite into JFIF planes, shared by the bands. `@unchecked Sendable`: each band reads the
/// shared source and tables and writes only its own rows, and `concurrentPerform` returns after all bands.
private struct PackedToPlanarJob: @unchecked Sendable {
    let source: UnsafePointer<UInt8>
    let sourceStride: Int
    let luma: UnsafeMutablePointer<UInt8>
    let cb: UnsafeMutablePointer<UInt8>
    let cr: UnsafeMutablePointer<UInt8>
    let width: Int
    let tables: ConversionTables.Pointers

    func run(rows: Range<Int>) {
        let t = tables
        let pairs = width / 2
        for row in rows {
            let input = source + row * sourceStride
            let lumaRow = luma + row * width
            let cbRow = cb + row * pairs
            let crRow = cr + row * pairs
            for pair in 0..<pairs {
                let y0 = Int(input[4 * pair])
                let inCb = Int(input[4 * pair + 1])
                let y1 = Int(input[4 * pair + 2])
                let inCr = Int(input[4 * pair + 3])
                let lumaOffset = t.yFromCb[inCb] &+ t.yFromCr[inCr]
                lumaRow[2 * pair] = clampedByte(t.luma[y0] &+ lumaOffset)
                lumaRow[2 * pair + 1] = clampedByte(t.luma[y1] &+ lumaOffset)
                cbRow[pair] = clampedByte(t.cbFromCb[inCb] &+ t.cbFromCr[inCr])
                crRow[pair] = clampedByte(t.crFromCb[inCb] &+ t.crFromCr[inCr])
            }
        }
    }
}
