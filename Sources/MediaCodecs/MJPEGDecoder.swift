// MJPEGDecoder: a camera's Motion JPEG frames to full-range NV12 with libjpeg-turbo's TurboJPEG.

import CTurboJPEG
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// Decodes JPEG images (a camera's MJPEG frames) into full-range NV12 (`'420f'`) pixel buffers with TurboJPEG,
/// the faster of our two MJPEG paths (``VideoDecoder`` with FFmpeg's `mjpeg` is the other; the `MJPEGDecode`
/// benchmark measures both).
///
/// `tjDecompressToYUVPlanes` writes luma straight into the pixel buffer's Y plane and chroma into two scratch
/// planes, which are then interleaved into the CbCr plane: 4:2:0 images as they are, 4:2:2 images (most USB
/// cameras) with each pair of chroma rows averaged, greyscale images with neutral chroma. JPEG's own range is full,
/// so `'420f'` needs no range conversion. Other subsamplings (4:4:4, 4:4:0, 4:1:1) are
/// ``MediaCodecsError/Kind/unsupportedConversion``: the graph falls back to ``VideoDecoder`` for them.
///
/// Buffers come from a `CVPixelBufferPool` (remade when the size changes) with at most
/// ``bufferLimit`` held downstream; beyond that a frame is ``MediaCodecsError/Kind/outOfBuffers``.
///
/// Wraps `tjInitDecompress`, `tjDecompressHeader3`, `tjPlaneWidth`, `tjPlaneHeight`, `tjDecompressToYUVPlanes`,
/// `tjGetErrorStr2` and `tjDestroy`; the decoder is the one owner of its handle.
///
/// Threading: thread-bound; use it from one thread at a time. Not `Sendable`. Debug builds trap when two threads
/// use it at once.
package final class MJPEGDecoder {
    /// The most buffers held downstream before a frame is refused.
    package let bufferLimit: Int
    private let handle: tjhandle
    private var pool: CVPixelBufferPool?
    private var poolSize: (width: Int, height: Int)?
    private var chroma: [UInt8] = []
    #if DEBUG
        private let isBusy = Atomic<Bool>(false)
    #endif

    /// A decoder.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/allocationFailed`` when TurboJPEG cannot make
    ///   a handle.
    package init(bufferLimit: Int = 6) throws(MediaCodecsError) {
        guard let handle = tjInitDecompress() else {
            throw MediaCodecsError(
                .allocationFailed, while: "creating a TurboJPEG decompressor", message: "tjInitDecompress failed")
        }
        self.handle = handle
        self.bufferLimit = bufferLimit
    }

    deinit {
        tjDestroy(handle)
    }

    /// The image in `data` as a full-range NV12 pixel buffer.
    ///
    /// - Throws: ``MediaCodecsError``: a damaged image is
    ///   ``MediaCodecsError/Kind/formatMismatch`` with TurboJPEG's message, an unsupported subsampling
    ///   ``MediaCodecsError/Kind/unsupportedConversion``, an exhausted pool ``MediaCodecsError/Kind/outOfBuffers``.
    package func decode(_ data: CMBlockBuffer) throws(MediaCodecsError) -> CVPixelBuffer {
        #if DEBUG
            precondition(!isBusy.exchange(true, ordering: .acquiring), "MJPEGDecoder is thread-bound")
            defer { isBusy.store(false, ordering: .releasing) }
        #endif
        var result: Result<CVPixelBuffer, MediaCodecsError> = .failure(
            MediaCodecsError(.formatMismatch, while: "decoding a JPEG image", message: "the image is empty"))
        data.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            result = Result { () throws(MediaCodecsError) in
                try decode(base.assumingMemoryBound(to: UInt8.self), size: bytes.count)
            }
        }
        return try result.get()
    }

    private func decode(_ jpeg: UnsafePointer<UInt8>, size: Int) throws(MediaCodecsError) -> CVPixelBuffer {
        let operation = "decoding a JPEG image"
        var width: Int32 = 0
        var height: Int32 = 0
        var subsampling: Int32 = 0
        var colorspace: Int32 = 0
        guard tjDecompressHeader3(handle, jpeg, UInt(size), &width, &height, &subsampling, &colorspace) == 0 else {
            throw MediaCodecsError(.formatMismatch, while: operation, message: errorMessage())
        }
        let sampling = TJSAMP(UInt32(subsampling))
        guard sampling == TJSAMP_420 || sampling == TJSAMP_422 || sampling == TJSAMP_GRAY else {
            throw MediaCodecsError(
                .unsupportedConversion, while: operation,
                message: "TurboJPEG subsampling \(subsampling) is not 4:2:0, 4:2:2 or grey")
        }
        let output = try takeBuffer(width: Int(width), height: Int(height))
        // JPEG (JFIF) numbers are BT.601, full range, whatever the size.
        YCbCrMatrix.itu601.attach(to: output)
        let chromaWidth = Int(tjPlaneWidth(1, width, subsampling))
        let chromaHeight = Int(tjPlaneHeight(1, height, subsampling))
        if sampling != TJSAMP_GRAY && chroma.count < 2 * chromaWidth * chromaHeight {
            chroma = [UInt8](repeating: 0, count: 2 * chromaWidth * chromaHeight)
        }
        let status: Int32 = output.withLockedPlanes { planes in
            let luma = planes[0].baseAddress.assumingMemoryBound(to: UInt8.self)
            let interleaved = planes[1]
            let outputRows = (Int(height) + 1) / 2
            let outputPairs = (Int(width) + 1) / 2
            if sampling == TJSAMP_GRAY {
                var lumaPlane: UnsafeMutablePointer<UInt8>? = luma
                var stride = Int32(planes[0].bytesPerRow)
                let status = tjDecompressToYUVPlanes(handle, jpeg, UInt(size), &lumaPlane, width, &stride, height, 0)
                for row in 0..<outputRows { interleaved.row(row).initializeMemory(as: UInt8.self, repeating: 128) }
                return status
            }
            return chroma.withUnsafeMutableBufferPointer { scratch in
                let cb = scratch.baseAddress!
                let cr = cb + chromaWidth * chromaHeight
                var destinations: [UnsafeMutablePointer<UInt8>?] = [luma, cb, cr]
                var strides: [Int32] = [Int32(planes[0].bytesPerRow), Int32(chromaWidth), Int32(chromaWidth)]
                let status = tjDecompressToYUVPlanes(
                    handle, jpeg, UInt(size), &destinations, width, &strides, height, 0)
                guard status == 0 else { return status }
                let pairs = min(outputPairs, chromaWidth)
                for row in 0..<outputRows {
                    let target = interleaved.baseAddress.advanced(by: row * interleaved.bytesPerRow)
                    // 4:2:2: two chroma rows per output row, averaged (rounded); 4:2:0: its one row, which is its
                    // own mean.
                    let (first, second) =
                        sampling == TJSAMP_420
                        ? (min(row, chromaHeight - 1), min(row, chromaHeight - 1))
                        : (min(2 * row, chromaHeight - 1), min(2 * row + 1, chromaHeight - 1))
                    Self.interleaveAveraging(
                        (UnsafePointer(cb + first * chromaWidth), UnsafePointer(cb + second * chromaWidth)),
                        (UnsafePointer(cr + first * chromaWidth), UnsafePointer(cr + second * chromaWidth)),
                        into: target, pairs: pairs)
                }
                return 0
            }
        }
        guard status == 0 else {
            throw MediaCodecsError(.formatMismatch, while: operation, message: errorMessage())
        }
        return output
    }

    private func takeBuffer(width: Int, height: Int) throws(MediaCodecsError) -> CVPixelBuffer {
        let operation = "taking a \(width)x\(height) 420f buffer for a decoded JPEG"
        if poolSize == nil || poolSize! != (width, height) {
            do {
                pool = try CVPixelBufferPool(
                    width: width, height: height, pixelFormatType: kCVPixelFormatType_420YpCbCr8BiPlanarFullRange,
                    minimumBufferCount: 2, bytesPerRowAlignment: CVPixelBuffer.planeAlignment)
            } catch {
                throw MediaCodecsError(.allocationFailed, while: operation, message: "CVReturn \(error.status)")
            }
            poolSize = (width, height)
        }
        switch pool!.pixelBuffer(allocationThreshold: bufferLimit) {
        case .success(let buffer): return buffer
        case .failure(let error):
            if error.status == kCVReturnWouldExceedAllocationThreshold {
                throw MediaCodecsError(
                    .outOfBuffers, while: operation, message: "\(bufferLimit) buffers are held downstream")
            }
            throw MediaCodecsError(.allocationFailed, while: operation, message: "CVReturn \(error.status)")
        }
    }

    // The chroma rows are written 16 pairs at a time with SIMD vectors: byte by byte, this loop was 2.5 % of a
    // 1080p MJPEG recording's CPU (perf, the side-by-side job), as much as the framework's own Swift. A Cb, Cr pair
    // is one little-endian UInt16, Cb in the low byte, so widening Cb and shifting Cr up interleaves them.

    /// Writes `pairs` Cb, Cr pairs into `target`, interleaved, each the rounded mean of the same sample in two rows
    /// of its plane (4:2:2 to 4:2:0; the same row twice copies it).
    private static func interleaveAveraging(
        _ cb: (UnsafePointer<UInt8>, UnsafePointer<UInt8>), _ cr: (UnsafePointer<UInt8>, UnsafePointer<UInt8>),
        into target: UnsafeMutableRawPointer, pairs: Int
    ) {
        var x = 0
        while x + 16 <= pairs {
            let blue = mean(
                UnsafeRawPointer(cb.0 + x).loadUnaligned(as: SIMD16<UInt8>.self),
                UnsafeRawPointer(cb.1 + x).loadUnaligned(as: SIMD16<UInt8>.self))
            let red = mean(
                UnsafeRawPointer(cr.0 + x).loadUnaligned(as: SIMD16<UInt8>.self),
                UnsafeRawPointer(cr.1 + x).loadUnaligned(as: SIMD16<UInt8>.self))
            target.storeBytes(of: pairsOf(blue, red), toByteOffset: 2 * x, as: SIMD16<UInt16>.self)
            x += 16
        }
        let bytes = target.assumingMemoryBound(to: UInt8.self)
        while x < pairs {
            bytes[2 * x] = UInt8((UInt16(cb.0[x]) + UInt16(cb.1[x]) + 1) >> 1)
            bytes[2 * x + 1] = UInt8((UInt16(cr.0[x]) + UInt16(cr.1[x]) + 1) >> 1)
            x += 1
        }
    }

    /// (a + b + 1) / 2 in each lane, without widening: a | b is the sum less the bits both carry, once.
    @inline(__always)
    private static func mean(_ a: SIMD16<UInt8>, _ b: SIMD16<UInt8>) -> SIMD16<UInt8> {
        (a | b) &- ((a ^ b) &>> 1)
    }

    /// Each lane's Cb, Cr as the two bytes of a little-endian UInt16: the pairs in memory order.
    @inline(__always)
    private static func pairsOf(_ cb: SIMD16<UInt8>, _ cr: SIMD16<UInt8>) -> SIMD16<UInt16> {
        SIMD16<UInt16>(truncatingIfNeeded: cb) | (SIMD16<UInt16>(truncatingIfNeeded: cr) &<< 8)
    }

    private func errorMessage() -> String {
        guard let message = tjGetErrorStr2(handle) else { return "TurboJPEG failed" }
        return String(cString: message)
    }
}
