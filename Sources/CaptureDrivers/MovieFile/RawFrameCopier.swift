import OpenCoreMedia
import OpenCoreVideo

/// Raw frames put into pixel buffers of a pool, one description for all: copied from packets, or read by the source
/// straight into a buffer (``MovieRawFrameReader``, y4m). A packet holds the planes back to back, each row
/// `minimumBytesPerRow` long (y4m, NUT, Matroska) or padded to 4 bytes (AVI); AVI's RGB rows may run bottom to top.
///
/// Not `Sendable`: lives on the capture thread.
struct RawFrameCopier {
    enum Outcome {
        case sample(CMSampleBuffer)
        /// The packet's size fits no layout of the format, or the buffer could not be wrapped.
        case damaged
        /// Every pool buffer is held downstream.
        case noBuffer
    }

    /// What reading a frame straight into a buffer gave.
    enum Read {
        /// A frame, with its file times.
        case frame(CVPixelBuffer, presentationTime: CMTime, duration: CMTime)
        /// The file has no more frames.
        case endOfFile
        /// Every pool buffer is held downstream.
        case noBuffer
        /// The format has no planes OpenCoreVideo describes, or no pool could be made.
        case damaged
    }

    /// A raw pixel format the device cannot put into pool buffers (no plane layout, or no pool of it).
    struct Unreadable: Error, CustomStringConvertible {
        var pixelFormat: OSType
        var description: String { "raw frames in pixel format \(pixelFormat) cannot be put into pixel buffers" }
    }

    /// How many of its frames the device lets downstream hold before it waits.
    static let bufferLimit = 8

    private var pool: CVPixelBufferPool?
    private var description: CMFormatDescription?

    /// (bytes per row, rows) of each plane as a file stores it, rows unpadded.
    private static func planes(of layout: RawVideoLayout, size: CMVideoDimensions) -> [(row: Int, rows: Int)]? {
        guard let format = PixelFormatDescription.describing(layout.pixelFormat) else { return nil }
        let width = Int(size.width)
        let height = Int(size.height)
        return format.planes.map { plane -> (row: Int, rows: Int) in
            let row = plane.minimumBytesPerRow(forPlaneWidth: plane.width(forImageWidth: width)) ?? 0
            return (row, plane.height(forImageHeight: height))
        }
    }

    /// A buffer of the pool, made at first use; nil when every buffer is held (`.noBuffer`) or no pool can be made.
    private mutating func buffer(layout: RawVideoLayout, size: CMVideoDimensions) -> Result<CVPixelBuffer, Failure> {
        if pool == nil {
            pool = try? CVPixelBufferPool(
                width: Int(size.width), height: Int(size.height), pixelFormatType: layout.pixelFormat,
                minimumBufferCount: 2)
        }
        guard let pool else { return .failure(.damaged) }
        guard case .success(let buffer) = pool.pixelBuffer(allocationThreshold: Self.bufferLimit) else {
            return .failure(.noBuffer)
        }
        return .success(buffer)
    }

    private enum Failure: Error {
        case damaged, noBuffer
    }

    /// `buffer` as a sample with `timing`, the description made once.
    mutating func sample(wrapping buffer: CVPixelBuffer, timing: CMSampleTimingInfo) -> CMSampleBuffer? {
        if description == nil { description = try? CMFormatDescription(imageBuffer: buffer) }
        guard let description else { return nil }
        return try? CMSampleBuffer(imageBuffer: buffer, formatDescription: description, sampleTiming: timing)
    }

    /// The next frame read by `reader` straight into a pool buffer.
    ///
    /// - Throws: what the reader throws for a file that can no longer be read.
    mutating func read(
        from reader: any MovieRawFrameReader, layout: RawVideoLayout, size: CMVideoDimensions
    ) throws -> Read {
        guard let planes = Self.planes(of: layout, size: size) else { return .damaged }
        let buffer: CVPixelBuffer
        switch self.buffer(layout: layout, size: size) {
        case .success(let made): buffer = made
        case .failure(.noBuffer): return .noBuffer
        case .failure(.damaged): return .damaged
        }
        let timing = try buffer.withLockedPlanes { destination in
            let rows = zip(destination, planes).map { plane, stored in
                MovieRawPlane(
                    baseAddress: plane.baseAddress, rowBytes: stored.row, bytesPerRow: plane.bytesPerRow,
                    rows: stored.rows)
            }
            return try reader.readRawFrame(into: rows)
        }
        guard let timing else { return .endOfFile }
        return .frame(buffer, presentationTime: timing.presentationTime, duration: timing.duration)
    }

    /// The raw frame `data` holds, copied into a pool buffer.
    mutating func sample(
        of data: CMBlockBuffer, layout: RawVideoLayout, size: CMVideoDimensions, timing: CMSampleTimingInfo
    ) -> Outcome {
        guard let planes = Self.planes(of: layout, size: size) else { return .damaged }
        let unpadded = planes.reduce(0) { $0 + $1.row * $1.rows }
        let padded = planes.reduce(0) { $0 + ($1.row + 3) / 4 * 4 * $1.rows }
        let stride: (Int) -> Int
        if data.dataLength == unpadded {
            stride = { $0 }
        } else if data.dataLength == padded {
            stride = { ($0 + 3) / 4 * 4 }
        } else {
            return .damaged
        }
        let buffer: CVPixelBuffer
        switch self.buffer(layout: layout, size: size) {
        case .success(let made): buffer = made
        case .failure(.noBuffer): return .noBuffer
        case .failure(.damaged): return .damaged
        }
        data.withUnsafeBytes { bytes in
            buffer.withLockedPlanes { destination in
                var offset = 0
                for (index, plane) in destination.enumerated() where index < planes.count {
                    let (rowBytes, rows) = planes[index]
                    let sourceStride = stride(rowBytes)
                    for row in 0..<rows {
                        let start = offset + row * sourceStride
                        plane.row(layout.isBottomUp ? rows - 1 - row : row).copyMemory(
                            from: UnsafeRawBufferPointer(rebasing: bytes[start..<(start + rowBytes)]))
                    }
                    offset += sourceStride * rows
                }
            }
        }
        guard let sample = sample(wrapping: buffer, timing: timing) else { return .damaged }
        return .sample(sample)
    }
}
