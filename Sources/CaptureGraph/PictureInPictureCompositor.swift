import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo

/// The browser preview's picture in picture, in I420 (what the MJPEG encoder takes): the main camera's frame copied
/// into a picture of the compositor's own (the session's frame may be shared with other outputs, so it is never
/// drawn on), and each other camera's newest frame scaled by libswscale to its inset's rectangle and copied there,
/// on a white border. Rectangles are snapped to even pixels, since I420's chroma covers 2x2 pixels.
///
/// Threading: thread-bound, as its converters are: the main feed's queue only. Not `Sendable`.
package final class PictureInPictureCompositor {
    private var canvas: CVPixelBuffer?
    private var scalers: [PixelBufferConverter?] = []

    /// The border around each inset, in pixels (even).
    package static let border = 2

    package init() {}

    /// `main` with each inset's image drawn in its frame (in `main`'s pixels), or nil when a frame is not I420 or
    /// a buffer cannot be made. The picture returned is the compositor's and is reused by the next call.
    package func compose(_ main: CVPixelBuffer, insets: [(image: CVPixelBuffer, frame: CGRect)]) -> CVPixelBuffer? {
        let format = kCVPixelFormatType_420YpCbCr8Planar
        guard CVPixelBufferGetPixelFormatType(main) == format, let canvas = canvas(like: main) else { return nil }
        CVPixelBufferLockBaseAddress(canvas, [])
        defer { CVPixelBufferUnlockBaseAddress(canvas, []) }
        copy(main, into: canvas, at: (0, 0))
        if scalers.count != insets.count { scalers = Array(repeating: nil, count: insets.count) }
        for (index, inset) in insets.enumerated() {
            let rect = Self.evenRect(inset.frame, within: main)
            guard rect.width > 0, rect.height > 0, let scaled = scale(inset.image, to: rect, with: index) else {
                continue
            }
            let border = Self.border
            fill(
                canvas, x: rect.x - border, y: rect.y - border, width: rect.width + 2 * border,
                height: rect.height + 2 * border)
            copy(scaled, into: canvas, at: (rect.x, rect.y))
        }
        return canvas
    }

    private func canvas(like main: CVPixelBuffer) -> CVPixelBuffer? {
        let (width, height) = (CVPixelBufferGetWidth(main), CVPixelBufferGetHeight(main))
        if let canvas, CVPixelBufferGetWidth(canvas) == width, CVPixelBufferGetHeight(canvas) == height {
            return canvas
        }
        var made: CVPixelBuffer?
        guard
            CVPixelBufferCreate(nil, width, height, kCVPixelFormatType_420YpCbCr8Planar, nil, &made)
                == kCVReturnSuccess
        else { return nil }
        canvas = made
        return made
    }

    private func scale(_ image: CVPixelBuffer, to rect: PixelRect, with index: Int) -> CVPixelBuffer? {
        let source = PixelBufferConverter.Format(of: image)
        let destination = PixelBufferConverter.Format(
            pixelFormatType: kCVPixelFormatType_420YpCbCr8Planar, width: rect.width, height: rect.height)
        if scalers[index]?.source != source || scalers[index]?.destination != destination {
            scalers[index] = try? PixelBufferConverter(
                from: source, to: destination, matrix: YCbCrMatrix(attachedTo: image), scalingFilter: .automatic,
                minimumBufferCount: 1, bufferLimit: 2)
        }
        return try? scalers[index]?.convert(image)
    }

    struct PixelRect { var x, y, width, height: Int }

    /// `frame` on even pixels, clipped to the picture (the border's room kept inside it).
    static func evenRect(_ frame: CGRect, within picture: CVPixelBuffer) -> PixelRect {
        func even(_ value: CGFloat) -> Int { Int((value / 2).rounded()) * 2 }
        let maxX = CVPixelBufferGetWidth(picture) - border
        let maxY = CVPixelBufferGetHeight(picture) - border
        let x = max(border, even(frame.minX))
        let y = max(border, even(frame.minY))
        return PixelRect(
            x: x, y: y, width: max(0, min(maxX, even(frame.maxX)) - x), height: max(0, min(maxY, even(frame.maxY)) - y))
    }

    /// Copies every plane of I420 `source` into the locked `canvas` with its top-left corner at `origin` (even).
    private func copy(_ source: CVPixelBuffer, into canvas: CVPixelBuffer, at origin: (x: Int, y: Int)) {
        CVPixelBufferLockBaseAddress(source, .readOnly)
        defer { CVPixelBufferUnlockBaseAddress(source, .readOnly) }
        for plane in 0..<3 {
            let shift = plane == 0 ? 0 : 1
            let width = min(
                CVPixelBufferGetWidthOfPlane(source, plane),
                CVPixelBufferGetWidthOfPlane(canvas, plane) - (origin.x >> shift))
            let height = min(
                CVPixelBufferGetHeightOfPlane(source, plane),
                CVPixelBufferGetHeightOfPlane(canvas, plane) - (origin.y >> shift))
            guard width > 0, height > 0, let from = CVPixelBufferGetBaseAddressOfPlane(source, plane),
                let to = CVPixelBufferGetBaseAddressOfPlane(canvas, plane)
            else { continue }
            let fromStride = CVPixelBufferGetBytesPerRowOfPlane(source, plane)
            let toStride = CVPixelBufferGetBytesPerRowOfPlane(canvas, plane)
            for row in 0..<height {
                (to + (origin.y >> shift + row) * toStride + origin.x >> shift)
                    .copyMemory(from: from + row * fromStride, byteCount: width)
            }
        }
    }

    /// Paints a rectangle (even origin and size, inside the locked canvas) video-range white.
    private func fill(_ canvas: CVPixelBuffer, x: Int, y: Int, width: Int, height: Int) {
        for plane in 0..<3 {
            let shift = plane == 0 ? 0 : 1
            guard let base = CVPixelBufferGetBaseAddressOfPlane(canvas, plane) else { continue }
            let stride = CVPixelBufferGetBytesPerRowOfPlane(canvas, plane)
            let value: Int32 = plane == 0 ? 235 : 128
            for row in (y >> shift)..<((y + height) >> shift) {
                memset(base + row * stride + x >> shift, value, width >> shift)
            }
        }
    }
}
