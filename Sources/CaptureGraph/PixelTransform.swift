import CaptureDrivers
import Foundation
import OpenCoreMedia
import OpenCoreVideo

/// Rotation (clockwise, multiples of 90°) and left-right mirroring of a pixel buffer, applied to the pixels data
/// outputs receive, as Apple does: rotate first, then mirror the rotated picture.
///
/// Supports every format whose planes have whole pixels per sample group: NV12 ('420v'/'420f'), I420 ('y420'),
/// 32-bit RGB ('BGRA', ARGB), 24-bit RGB, and 8-bit grey. Packed 4:2:2 ('yuvs', '2vuy') is not transformed
/// (`supports` says false): its groups share chroma along rows; the output converts to a planar format first.
///
/// Threading: use one instance from one thread at a time (its pool is thread safe; its state is not).
package final class PixelTransform {
    package let rotation: Int
    package let mirrored: Bool
    private var pool: CVPixelBufferPool?

    /// A transform by `rotationDegrees` (0, 90, 180 or 270) clockwise, then mirrored when `mirrored`.
    package init(rotationDegrees: Int, mirrored: Bool) {
        precondition([0, 90, 180, 270].contains(rotationDegrees), "rotation is a multiple of 90° below 360°")
        self.rotation = rotationDegrees
        self.mirrored = mirrored
    }

    package var isIdentity: Bool { rotation == 0 && !mirrored }

    /// Whether a buffer of this pixel format can be transformed.
    package func supports(_ pixelFormat: OSType) -> Bool {
        guard PixelFormatDescription.describing(pixelFormat) != nil else { return false }
        return isIdentity || Self.canTurn(pixelFormat)
    }

    /// Whether frames of `pixelFormat` can be rotated and mirrored as they are.
    package static func canTurn(_ pixelFormat: OSType) -> Bool {
        guard let description = PixelFormatDescription.describing(pixelFormat) else { return false }
        let packed422 = pixelFormat == kCVPixelFormatType_422YpCbCr8_yuvs || pixelFormat == kCVPixelFormatType_422YpCbCr8
        // Each packed 4:2:2 group holds two lumas in order; moving groups would swap them. Convert first.
        return !packed422 && !description.planes.isEmpty
    }

    /// The transformed picture in a buffer from the transform's pool, or nil when the pool is exhausted (the
    /// consumer holds every buffer) or the format is unsupported.
    package func apply(to source: CVPixelBuffer) -> CVPixelBuffer? {
        if isIdentity { return source }
        let width = CVPixelBufferGetWidth(source)
        let height = CVPixelBufferGetHeight(source)
        let format = CVPixelBufferGetPixelFormatType(source)
        guard supports(format), let description = PixelFormatDescription.describing(format) else { return nil }
        let quarterTurn = rotation % 180 != 0
        let (outWidth, outHeight) = quarterTurn ? (height, width) : (width, height)
        if pool?.width != outWidth || pool?.height != outHeight || pool?.pixelFormatType != format {
            pool = try? CVPixelBufferPool(
                width: outWidth, height: outHeight, pixelFormatType: format, minimumBufferCount: 2,
                bytesPerRowAlignment: 64)
        }
        guard let pool, case .success(let destination) = pool.pixelBuffer(allocationThreshold: 6) else { return nil }
        CVPixelBufferLockBaseAddress(source, .readOnly)
        CVPixelBufferLockBaseAddress(destination, [])
        defer {
            CVPixelBufferUnlockBaseAddress(destination, [])
            CVPixelBufferUnlockBaseAddress(source, .readOnly)
        }
        let planeCount = max(1, CVPixelBufferGetPlaneCount(source))
        for plane in 0..<planeCount {
            let isPlanar = CVPixelBufferIsPlanar(source)
            guard
                let from = isPlanar
                    ? CVPixelBufferGetBaseAddressOfPlane(source, plane) : CVPixelBufferGetBaseAddress(source),
                let to = isPlanar
                    ? CVPixelBufferGetBaseAddressOfPlane(destination, plane) : CVPixelBufferGetBaseAddress(destination)
            else { return nil }
            let sourceStride = isPlanar ? CVPixelBufferGetBytesPerRowOfPlane(source, plane) : CVPixelBufferGetBytesPerRow(source)
            let destinationStride =
                isPlanar ? CVPixelBufferGetBytesPerRowOfPlane(destination, plane) : CVPixelBufferGetBytesPerRow(destination)
            let planeWidth = isPlanar ? CVPixelBufferGetWidthOfPlane(source, plane) : width
            let planeHeight = isPlanar ? CVPixelBufferGetHeightOfPlane(source, plane) : height
            let bytesPerGroup = description.planes[plane].bytesPerBlock
            let pixelsPerGroup = description.planes[plane].pixelsPerBlock
            transformPlane(
                from: from, sourceStride: sourceStride, to: to, destinationStride: destinationStride,
                columns: (planeWidth + pixelsPerGroup - 1) / pixelsPerGroup, rows: planeHeight,
                bytesPerElement: bytesPerGroup)
        }
        return destination
    }

    /// Moves each element (a pixel, or a chroma pair, or a packed 4:2:2 group) of a plane to its place.
    private func transformPlane(
        from source: UnsafeMutableRawPointer, sourceStride: Int, to destination: UnsafeMutableRawPointer,
        destinationStride: Int, columns: Int, rows: Int, bytesPerElement: Int
    ) {
        let quarterTurn = rotation % 180 != 0
        let outColumns = quarterTurn ? rows : columns
        let outRows = quarterTurn ? columns : rows
        for outY in 0..<outRows {
            let destinationRow = destination + outY * destinationStride
            for outX in 0..<outColumns {
                // Undo the mirror (it was applied last), then the rotation, to find the source element.
                let unmirroredX = mirrored ? outColumns - 1 - outX : outX
                let (x, y): (Int, Int)
                switch rotation {
                case 90: (x, y) = (outY, rows - 1 - unmirroredX)
                case 180: (x, y) = (columns - 1 - unmirroredX, rows - 1 - outY)
                case 270: (x, y) = (columns - 1 - outY, unmirroredX)
                default: (x, y) = (unmirroredX, outY)
                }
                (destinationRow + outX * bytesPerElement).copyMemory(
                    from: source + y * sourceStride + x * bytesPerElement, byteCount: bytesPerElement)
            }
        }
    }
}
