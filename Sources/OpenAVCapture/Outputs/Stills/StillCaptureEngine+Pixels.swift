import CaptureGraph
import Foundation

/// A still's pixels in buffers of its own: converted, copied, or scaled down for a deferred photo's preview.
extension StillCaptureEngine {
    /// The frame in `pixelFormat`, in a buffer of its own (never the device's, which goes back to its pool).
    static func convert(
        _ image: CVPixelBuffer, to pixelFormat: OSType, work: Work, width: Int? = nil, height: Int? = nil
    ) throws(AVError) -> CVPixelBuffer {
        let target = VideoOutputPipeline.Target(
            pixelFormat: pixelFormat, width: width ?? CVPixelBufferGetWidth(image),
            height: height ?? CVPixelBufferGetHeight(image))
        guard let converted = work.converters.convert(image, to: target) else {
            throw AVError(.unknown, "converting the still to \(pixelFormat) failed")
        }
        return try Self.detachedCopy(converted)
    }

    /// A deferred photo's quick preview: the frame at a quarter of its width and height (even sizes), in BGRA, in a
    /// buffer of its own; nil when the conversion fails (the proxy then has no preview).
    static func preview(of frame: CMSampleBuffer, work: Work) -> CVPixelBuffer? {
        guard let image = frame.imageBuffer else { return nil }
        let size = previewSize(width: CVPixelBufferGetWidth(image), height: CVPixelBufferGetHeight(image))
        let (width, height) = (Int(size.width), Int(size.height))
        return try? convert(image, to: kCVPixelFormatType_32BGRA, work: work, width: width, height: height)
    }

    /// The size of a deferred photo's preview of a `width` x `height` photo: a quarter each way, even, at least 2.
    static func previewSize(width: Int, height: Int) -> CMVideoDimensions {
        CMVideoDimensions(width: Int32(max(2, width / 4 & ~1)), height: Int32(max(2, height / 4 & ~1)))
    }

    /// A copy in a buffer of its own: a still may be kept for as long as its owner likes.
    static func detachedCopy(_ image: CVPixelBuffer) throws(AVError) -> CVPixelBuffer {
        var copy: CVPixelBuffer?
        let width = CVPixelBufferGetWidth(image)
        let height = CVPixelBufferGetHeight(image)
        guard
            CVPixelBufferCreate(nil, width, height, CVPixelBufferGetPixelFormatType(image), nil, &copy)
                == kCVReturnSuccess,
            let copy
        else { throw AVError(.outOfMemory, "no memory for a \(width)x\(height) still") }
        image.withLockedPlanes(.readOnly) { from in
            copy.withLockedPlanes { to in
                for plane in 0..<from.count {
                    let rowBytes = min(from[plane].bytesPerRow, to[plane].bytesPerRow)
                    for row in 0..<from[plane].height {
                        to[plane].row(row).baseAddress!.copyMemory(
                            from: from[plane].row(row).baseAddress!, byteCount: rowBytes)
                    }
                }
            }
        }
        CVBufferPropagateAttachments(image, copy)
        return copy
    }
}
