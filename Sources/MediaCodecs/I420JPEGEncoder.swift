// I420JPEGEncoder: preview frames as JPEG for a browser, straight from their planes, with TurboJPEG.

import CTurboJPEG
import OpenCoreVideo

/// Encodes I420 frames as JPEG straight from their planes (TurboJPEG's `tjCompressFromYUVPlanes`): no colour
/// conversion, one pass of DCT. The frames' levels are passed as they are (video range), so blacks show at 16 of
/// 255, slightly lifted; the picture's geometry and the virtual camera's frame-index code are exact.
///
/// Wraps `tjInitCompress`, `tjCompressFromYUVPlanes`, `tjFree`, `tjDestroy`; the encoder owns its handle and its
/// output buffer (reused frame to frame) and frees them in `deinit`.
///
/// Threading: thread-bound; one frame at a time (a preview feed's queue). Not `Sendable`.
package final class I420JPEGEncoder {
    private let handle: tjhandle
    private var output: UnsafeMutablePointer<UInt8>?
    private var capacity: UInt = 0
    private let quality: Int32

    /// An encoder at `quality` (1–100), or nil when TurboJPEG cannot start (`tjInitCompress` failed).
    package init?(quality: Int32 = 80) {
        guard let handle = tjInitCompress() else { return nil }
        self.handle = handle
        self.quality = quality
    }

    deinit {
        if let output { tjFree(output) }
        tjDestroy(handle)
    }

    /// The JPEG of an I420 frame, or nil for another format or when TurboJPEG fails.
    package func encode(_ image: CVPixelBuffer) -> [UInt8]? {
        guard CVPixelBufferGetPixelFormatType(image) == kCVPixelFormatType_420YpCbCr8Planar,
            CVPixelBufferGetPlaneCount(image) == 3
        else { return nil }
        CVPixelBufferLockBaseAddress(image, .readOnly)
        defer { CVPixelBufferUnlockBaseAddress(image, .readOnly) }
        var planes: [UnsafePointer<UInt8>?] = (0..<3).map { index in
            CVPixelBufferGetBaseAddressOfPlane(image, index).map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) }
        }
        var strides: [Int32] = (0..<3).map { Int32(CVPixelBufferGetBytesPerRowOfPlane(image, $0)) }
        var size = capacity
        let status = planes.withUnsafeMutableBufferPointer { planes in
            strides.withUnsafeMutableBufferPointer { strides in
                tjCompressFromYUVPlanes(
                    handle, planes.baseAddress, Int32(CVPixelBufferGetWidth(image)), strides.baseAddress,
                    Int32(CVPixelBufferGetHeight(image)), Int32(TJSAMP_420.rawValue), &output, &size, quality,
                    Int32(TJFLAG_FASTDCT))
            }
        }
        guard status == 0, let output else { return nil }
        capacity = max(capacity, size)
        return Array(UnsafeBufferPointer(start: output, count: Int(size)))
    }
}
