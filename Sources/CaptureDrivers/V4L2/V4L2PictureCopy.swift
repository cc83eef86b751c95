import OpenCoreVideo

/// Copies a pixel buffer into an OUTPUT buffer of a memory-to-memory device, laid out as the negotiated V4L2 format
/// says: rows `bytesPerLine` apart, the chroma planes after luma in one memory plane (single-planar formats) or each
/// in its own (`…M` formats).
enum V4L2PictureCopy {
    /// One image plane: which memory plane, where in it, how many rows of how many bytes, and its row pitch.
    private struct Region {
        var memoryPlane: Int
        var offset: Int
        var rows: Int
        var rowBytes: Int
        var bytesPerLine: Int
    }

    /// Copies `picture` into `memory` (the buffer's mappings, by memory plane); returns the bytes used in each.
    static func copy(
        _ picture: CVPixelBuffer, into memory: [V4L2MappedBuffers.Mapping], format: V4L2ChosenFormat, width: Int,
        height: Int
    ) throws(V4L2EncoderError) -> [Int] {
        let subType = CVPixelBufferGetPixelFormatType(picture)
        let wanted = [
            format.pixelFormat.mediaSubType(fullRange: false), format.pixelFormat.mediaSubType(fullRange: true),
        ]
        guard wanted.contains(subType) else {
            throw .pictureMismatch(
                "pixel format \(fourCharCodeDescription(subType)), the encoder takes \(format.pixelFormat)")
        }
        guard CVPixelBufferGetWidth(picture) == width, CVPixelBufferGetHeight(picture) == height else {
            throw .pictureMismatch(
                "\(CVPixelBufferGetWidth(picture))x\(CVPixelBufferGetHeight(picture)), the encoder takes "
                    + "\(width)x\(height)")
        }
        let regions = layout(format, width: width, height: height)
        guard regions.count == max(1, CVPixelBufferGetPlaneCount(picture)) else {
            throw .pictureMismatch(
                "\(CVPixelBufferGetPlaneCount(picture)) planes, \(format.pixelFormat) has \(regions.count)")
        }
        var used = Array(repeating: 0, count: memory.count)
        for region in regions {
            guard region.memoryPlane < memory.count,
                region.offset + region.bytesPerLine * region.rows <= memory[region.memoryPlane].length
            else { throw .pictureMismatch("the device's buffer is smaller than its format says") }
            used[region.memoryPlane] = max(used[region.memoryPlane], region.offset + region.bytesPerLine * region.rows)
        }
        picture.withLockedPlanes(.readOnly) { planes in
            for (index, region) in regions.enumerated() {
                let source = planes[index]
                let destination = memory[region.memoryPlane].address + region.offset
                let rowBytes = min(region.rowBytes, source.bytesPerRow)
                for row in 0..<min(region.rows, source.height) {
                    (destination + row * region.bytesPerLine).copyMemory(
                        from: source.baseAddress + row * source.bytesPerRow, byteCount: rowBytes)
                }
            }
        }
        // A single-planar format's image is the whole of what S_FMT said a frame takes.
        if memory.count == 1, let size = format.planes.first?.sizeImage, size <= memory[0].length {
            used[0] = max(used[0], size)
        }
        return used
    }

    /// Where each image plane of a `width` x `height` picture goes in a buffer of `format` (whose size, the coded
    /// one, may be larger: the planes start where the coded size puts them).
    private static func layout(_ format: V4L2ChosenFormat, width: Int, height: Int) -> [Region] {
        let codedHeight = Int(format.height)
        let chromaHeight = (height + 1) / 2
        let codedChromaHeight = (codedHeight + 1) / 2
        let line = format.planes.first?.bytesPerLine ?? width
        func pitch(_ plane: Int) -> Int { plane < format.planes.count ? format.planes[plane].bytesPerLine : line }
        switch format.pixelFormat {
        case .nv12:
            return [
                Region(memoryPlane: 0, offset: 0, rows: height, rowBytes: width, bytesPerLine: line),
                Region(
                    memoryPlane: 0, offset: line * codedHeight, rows: chromaHeight, rowBytes: width, bytesPerLine: line),
            ]
        case .yuv420:
            let chromaLine = line / 2
            let chromaBytes = chromaLine * codedChromaHeight
            return [
                Region(memoryPlane: 0, offset: 0, rows: height, rowBytes: width, bytesPerLine: line),
                Region(
                    memoryPlane: 0, offset: line * codedHeight, rows: chromaHeight, rowBytes: (width + 1) / 2,
                    bytesPerLine: chromaLine),
                Region(
                    memoryPlane: 0, offset: line * codedHeight + chromaBytes, rows: chromaHeight,
                    rowBytes: (width + 1) / 2, bytesPerLine: chromaLine),
            ]
        case .nv12m:
            return [
                Region(memoryPlane: 0, offset: 0, rows: height, rowBytes: width, bytesPerLine: pitch(0)),
                Region(memoryPlane: 1, offset: 0, rows: chromaHeight, rowBytes: width, bytesPerLine: pitch(1)),
            ]
        case .yuv420m:
            return [
                Region(memoryPlane: 0, offset: 0, rows: height, rowBytes: width, bytesPerLine: pitch(0)),
                Region(
                    memoryPlane: 1, offset: 0, rows: chromaHeight, rowBytes: (width + 1) / 2,
                    bytesPerLine: pitch(1)),
                Region(
                    memoryPlane: 2, offset: 0, rows: chromaHeight, rowBytes: (width + 1) / 2,
                    bytesPerLine: pitch(2)),
            ]
        case .yuyv, .uyvy:
            return [Region(memoryPlane: 0, offset: 0, rows: height, rowBytes: width * 2, bytesPerLine: line)]
        default:
            // Grey and the packed RGB formats: one plane, as many bytes per row as the driver's line holds.
            return [Region(memoryPlane: 0, offset: 0, rows: height, rowBytes: min(line, width * 4), bytesPerLine: line)]
        }
    }
}
