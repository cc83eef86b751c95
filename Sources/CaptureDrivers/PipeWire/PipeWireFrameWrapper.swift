import CPipeWire
import Foundation
import OpenCoreMedia
import OpenCoreVideo

/// A PipeWire video buffer as a sample buffer: raw frames as pixel buffers over the buffer's planes, compressed
/// ones (MJPEG, H.264) as block buffers; lent when the shim mapped the memory itself, copied otherwise.
///
/// Raw layouts are PipeWire's (and GStreamer's): one data block holds the planes one after another, chroma rows
/// half as long as luma rows for I420, the same length for NV12; or one data block per plane with its own stride.
/// A chunk without a stride (some producers leave it 0) gets the tightest one its size allows.
///
/// Value type with static functions only; safe from any thread.
enum PipeWireFrameWrapper {
    static func sample(
        _ buffer: CPipeWire_Buffer, lease: PipeWireBufferLease, video: VideoFormat,
        formatDescription: CMFormatDescription, frameDuration: CMTime, time: CMTime
    ) -> CMSampleBuffer? {
        let timing = CMSampleTimingInfo(duration: frameDuration, presentationTimeStamp: time, decodeTimeStamp: .invalid)
        guard let data = buffer.planes.0, buffer.plane_sizes.0 > 0 else { return nil }
        if let encoding = PipeWireFormats.Encoding(mediaSubType: video.mediaSubType), encoding.isCompressed {
            let length = Int(buffer.plane_sizes.0)
            let block: CMBlockBuffer
            if buffer.is_lendable {
                block = CMBlockBuffer(
                    wrapping: UnsafeMutableRawPointer(mutating: data), length: length, release: { _ in lease.giveBack() })
            } else {
                block = CMBlockBuffer(length: length)
                block.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(start: data, count: length)) }
                lease.giveBack()
            }
            guard
                let sample = try? CMSampleBuffer(
                    dataBuffer: block, formatDescription: formatDescription, numSamples: 1, sampleTimings: [timing],
                    sampleSizes: [length])
            else { return nil }
            CompressedFrameSync.mark(sample, isKeyFrame: nil)
            return sample
        }
        guard let image = pixelBuffer(buffer, lease: lease, video: video) else { return nil }
        return CMSampleBuffer(unchecked: image, formatDescription: formatDescription, sampleTiming: timing)
    }

    /// The planes of a raw frame as (address, bytes per row, rows), or nil when the memory is too short.
    static func planes(_ buffer: CPipeWire_Buffer, video: VideoFormat) -> [(UnsafePointer<UInt8>, Int, Int)]? {
        let height = Int(video.height)
        let chromaRows = (height + 1) / 2
        let addresses = withUnsafeBytes(of: buffer.planes) { Array($0.bindMemory(to: UnsafePointer<UInt8>?.self)) }
        let sizes = withUnsafeBytes(of: buffer.plane_sizes) { Array($0.bindMemory(to: UInt32.self)).map(Int.init) }
        let strides = withUnsafeBytes(of: buffer.plane_strides) { Array($0.bindMemory(to: Int32.self)).map(Int.init) }
        let separate = Int(buffer.planes_count)
        /// Rows of each image plane, and the ratio of its row length to the luma row's.
        let layout: [(rows: Int, rowRatio: Double)]
        switch video.mediaSubType {
        case kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange: layout = [(height, 1), (chromaRows, 1)]
        case kCVPixelFormatType_420YpCbCr8Planar: layout = [(height, 1), (chromaRows, 0.5), (chromaRows, 0.5)]
        default: layout = [(height, 1)]
        }
        var result: [(UnsafePointer<UInt8>, Int, Int)] = []
        if separate >= layout.count, layout.count > 1 {
            for (index, plane) in layout.enumerated() {
                guard let address = addresses[index] else { return nil }
                let stride = strides[index] > 0 ? strides[index] : sizes[index] / max(plane.rows, 1)
                guard stride * plane.rows <= sizes[index] else { return nil }
                result.append((address, stride, plane.rows))
            }
            return result
        }
        guard let base = addresses[0] else { return nil }
        let totalRatio = layout.reduce(0.0) { $0 + Double($1.rows) * $1.rowRatio }
        let lumaStride = strides[0] > 0 ? strides[0] : Int(Double(sizes[0]) / totalRatio)
        // Rows too short for the width are refused by the pixel buffer's own check.
        var offset = 0
        for plane in layout {
            let stride = Int(Double(lumaStride) * plane.rowRatio)
            guard offset + stride * plane.rows <= sizes[0] else { return nil }
            result.append((base + offset, stride, plane.rows))
            offset += stride * plane.rows
        }
        return result
    }

    private static func pixelBuffer(_ buffer: CPipeWire_Buffer, lease: PipeWireBufferLease, video: VideoFormat)
        -> CVPixelBuffer?
    {
        guard let planes = planes(buffer, video: video) else { return nil }
        let width = Int(video.width)
        let height = Int(video.height)
        if buffer.is_lendable {
            let wrapped = planes.map { WrappedPlane(baseAddress: UnsafeMutableRawPointer(mutating: $0.0), bytesPerRow: $0.1) }
            return try? CVPixelBuffer(
                width: width, height: height, pixelFormatType: video.mediaSubType, planes: wrapped,
                release: { lease.giveBack() })
        }
        // PipeWire's own memory goes with the stream: copy it into memory of the frame's own.
        let total = planes.reduce(0) { $0 + $1.1 * $1.2 }
        let copy = UnsafeMutableRawPointer.allocate(byteCount: max(total, 1), alignment: 64)
        var offset = 0
        var wrapped: [WrappedPlane] = []
        for (address, stride, rows) in planes {
            (copy + offset).copyMemory(from: address, byteCount: stride * rows)
            wrapped.append(WrappedPlane(baseAddress: copy + offset, bytesPerRow: stride))
            offset += stride * rows
        }
        lease.giveBack()
        let memory = UncheckedMemory(copy)
        guard
            let image = try? CVPixelBuffer(
                width: width, height: height, pixelFormatType: video.mediaSubType, planes: wrapped,
                release: { memory.pointer.deallocate() })
        else {
            copy.deallocate()
            return nil
        }
        return image
    }
}

/// Memory a release closure frees; the closure runs once, when the pixel buffer dies.
private struct UncheckedMemory: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
    init(_ pointer: UnsafeMutableRawPointer) { self.pointer = pointer }
}
