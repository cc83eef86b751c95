import CLinuxMedia
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import SystemPackage

/// A stream's memory-mapped kernel buffers, one mapping per memory plane of each (one on a single-planar queue, one
/// per image plane for the multi-planar `…M` formats). They stay mapped while anything points into them: the
/// stream, and every pixel buffer or block buffer that wraps one (each holds this object), so a consumer may keep a
/// frame after the stream stopped. The last holder unmaps them.
///
/// Threading: immutable after creation, except the return marks of frames wrapped one at a time (an atomic bit set).
final class V4L2MappedBuffers: @unchecked Sendable {
    struct Mapping {
        let address: UnsafeMutableRawPointer
        let length: Int
    }

    /// By buffer index, then memory plane.
    let mappings: [[Mapping]]
    private let system: SystemCalls
    /// One bit per buffer whose frame (a compressed frame's block buffer, or a raw frame wrapped on its own) has
    /// been released since the capture thread last looked: release runs on any thread, the capture thread collects
    /// and re-queues.
    private let returnedBits = Atomic<UInt64>(0)

    /// At most this many buffers, so one bit each fits `returnedBits`.
    static let maximumCount = 64

    /// Maps buffers `0..<count` of `node`'s queue of `type` (VIDIOC_QUERYBUF, then mmap each of its `planeCount`
    /// memory planes). Unmaps what it mapped when one fails.
    init(node: V4L2Node, count: Int, type: V4L2BufferType, planeCount: Int) throws(Errno) {
        precondition(count <= Self.maximumCount, "at most \(Self.maximumCount) buffers")
        system = node.system
        var mapped: [[Mapping]] = []
        var planes: [Mapping] = []
        do throws(Errno) {
            for index in 0..<count {
                planes = []
                let locations = try node.queryBuffer(index, type: type, planeCount: planeCount)
                // A driver reporting fewer planes than S_FMT set would leave an image plane without memory.
                guard locations.count == planeCount else { throw Errno.invalidArgument }
                for (offset, length) in locations {
                    let address = try node.system.mmap(length: length, descriptor: node.descriptor, offset: offset)
                    planes.append(Mapping(address: address, length: length))
                }
                mapped.append(planes)
            }
        } catch {
            for mapping in mapped.joined() + planes { node.system.munmap(mapping.address, length: mapping.length) }
            throw error
        }
        mappings = mapped
    }

    deinit {
        for mapping in mappings.joined() { system.munmap(mapping.address, length: mapping.length) }
    }

    var count: Int { mappings.count }

    /// Marks buffer `index` returned by its last consumer (the release of a frame wrapped on its own).
    func markReturned(_ index: Int) {
        returnedBits.bitwiseOr(1 << UInt64(index), ordering: .releasing)
    }

    /// The buffers marked returned since the last call, as a bit set.
    func takeReturned() -> UInt64 {
        returnedBits.exchange(0, ordering: .acquiring)
    }

    /// Pixel buffers wrapping each buffer's mappings in place, for a raw format whose image starts at the start of
    /// each memory plane (see `wrapPixelBuffer`). Each keeps this object alive.
    func wrapPixelBuffers(
        pixelFormat: V4L2PixelFormat, fullRange: Bool = false, width: Int, height: Int, planes: [V4L2PlaneFormat]
    ) throws(CVPixelBufferCreationError) -> [CVPixelBuffer] {
        var buffers: [CVPixelBuffer] = []
        for index in mappings.indices {
            buffers.append(
                try wrapPixelBuffer(
                    index, pixelFormat: pixelFormat, fullRange: fullRange, width: width, height: height,
                    planes: planes, dataOffset: { _ in 0 }, release: { [self] in withExtendedLifetime(self) {} }))
        }
        return buffers
    }

    /// A pixel buffer over buffer `index` in place, its image starting `dataOffset(plane)` bytes into each memory
    /// plane. One memory plane holds the image planes as V4L2's single-planar formats lay them (chroma after luma,
    /// rows `bytesPerLine` apart); the `…M` formats have one memory plane per image plane, each with its own row
    /// length. `release` runs when the pixel buffer goes (it must keep this object alive).
    func wrapPixelBuffer(
        _ index: Int, pixelFormat: V4L2PixelFormat, fullRange: Bool = false, width: Int, height: Int,
        planes formats: [V4L2PlaneFormat], dataOffset: (Int) -> Int, release: @escaping @Sendable () -> Void
    ) throws(CVPixelBufferCreationError) -> CVPixelBuffer {
        guard let subType = pixelFormat.mediaSubType(fullRange: fullRange), !pixelFormat.isCompressed else {
            throw CVPixelBufferCreationError(kCVReturnInvalidPixelFormat)
        }
        let memory = mappings[index]
        guard formats.count == memory.count, formats.count == pixelFormat.memoryPlaneCount else {
            throw CVPixelBufferCreationError(kCVReturnInvalidArgument)
        }
        let chromaHeight = (height + 1) / 2
        // An image plane of `rows` rows `bytesPerRow` apart, `offset` bytes into memory plane `plane`.
        func plane(_ plane: Int, at offset: Int, bytesPerRow: Int, rows: Int) throws(CVPixelBufferCreationError)
            -> WrappedPlane
        {
            let start = dataOffset(plane) + offset
            guard start >= 0, bytesPerRow > 0, start + bytesPerRow * rows <= memory[plane].length else {
                throw CVPixelBufferCreationError(kCVReturnInvalidArgument)
            }
            return WrappedPlane(baseAddress: memory[plane].address + start, bytesPerRow: bytesPerRow)
        }
        let bytesPerLine = formats[0].bytesPerLine
        let lumaBytes = bytesPerLine * height
        var wrapped: [WrappedPlane] = []
        switch pixelFormat {
        case .nv12, .p010:
            wrapped = [
                try plane(0, at: 0, bytesPerRow: bytesPerLine, rows: height),
                try plane(0, at: lumaBytes, bytesPerRow: bytesPerLine, rows: chromaHeight),
            ]
        case .yuv420:
            let chromaRow = bytesPerLine / 2
            let chromaBytes = chromaRow * chromaHeight
            wrapped = [
                try plane(0, at: 0, bytesPerRow: bytesPerLine, rows: height),
                try plane(0, at: lumaBytes, bytesPerRow: chromaRow, rows: chromaHeight),
                try plane(0, at: lumaBytes + chromaBytes, bytesPerRow: chromaRow, rows: chromaHeight),
            ]
        case .nv12m, .yuv420m:
            for (index, format) in formats.enumerated() {
                wrapped.append(
                    try plane(index, at: 0, bytesPerRow: format.bytesPerLine, rows: index == 0 ? height : chromaHeight))
            }
        default:
            wrapped = [try plane(0, at: 0, bytesPerRow: bytesPerLine, rows: height)]
        }
        return try CVPixelBuffer(
            width: width, height: height, pixelFormatType: subType, planes: wrapped, release: release)
    }

    /// A block buffer around `length` bytes of buffer `index`'s (first) memory plane from `offset`, for a
    /// compressed frame; its release marks the buffer returned.
    func wrapBlockBuffer(_ index: Int, offset: Int = 0, length: Int) -> CMBlockBuffer {
        let mapping = mappings[index][0]
        let start = min(max(0, offset), mapping.length)
        return CMBlockBuffer(
            wrapping: mapping.address + start, length: min(length, mapping.length - start),
            release: { [self] _ in markReturned(index) })
    }
}
