import CLinuxMedia
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import SystemPackage

/// A stream's memory-mapped kernel buffers. They stay mapped while anything points into them: the stream, and every
/// pixel buffer or block buffer that wraps one (each holds this object), so a consumer may keep a frame after the
/// stream stopped. The last holder unmaps them.
///
/// Threading: immutable after creation, except the return marks of compressed frames (an atomic bit set).
final class V4L2MappedBuffers: @unchecked Sendable {
    struct Mapping {
        let address: UnsafeMutableRawPointer
        let length: Int
    }

    let mappings: [Mapping]
    private let system: SystemCalls
    /// One bit per buffer whose compressed frame's block buffer has been released since the capture thread last
    /// looked: release runs on any thread, the capture thread collects and re-queues.
    private let returnedBits = Atomic<UInt64>(0)

    /// At most this many buffers, so one bit each fits `returnedBits`.
    static let maximumCount = 64

    /// Maps buffers `0..<count` of `node` (VIDIOC_QUERYBUF, then mmap each). Unmaps what it mapped when one fails.
    init(node: V4L2Node, count: Int) throws(Errno) {
        precondition(count <= Self.maximumCount, "at most \(Self.maximumCount) buffers")
        system = node.system
        var mapped: [Mapping] = []
        do {
            for index in 0..<count {
                let (offset, length) = try node.queryBuffer(index)
                let address = try node.system.mmap(length: length, descriptor: node.descriptor, offset: offset)
                mapped.append(Mapping(address: address, length: length))
            }
        } catch {
            for mapping in mapped { node.system.munmap(mapping.address, length: mapping.length) }
            throw error
        }
        mappings = mapped
    }

    deinit {
        for mapping in mappings { system.munmap(mapping.address, length: mapping.length) }
    }

    var count: Int { mappings.count }

    /// Marks buffer `index` returned by its last consumer (a block buffer's release).
    func markReturned(_ index: Int) {
        returnedBits.bitwiseOr(1 << UInt64(index), ordering: .releasing)
    }

    /// The buffers marked returned since the last call, as a bit set.
    func takeReturned() -> UInt64 {
        returnedBits.exchange(0, ordering: .acquiring)
    }

    /// Pixel buffers wrapping each mapping in place, for a raw format: the planes laid out as V4L2's single-planar
    /// formats lay them (chroma after luma, rows `bytesPerLine` apart). Each keeps this object alive.
    func wrapPixelBuffers(
        pixelFormat: V4L2PixelFormat, width: Int, height: Int, bytesPerLine: Int
    ) throws(CVPixelBufferCreationError) -> [CVPixelBuffer] {
        guard let subType = pixelFormat.mediaSubType, !pixelFormat.isCompressed else {
            throw CVPixelBufferCreationError(kCVReturnInvalidPixelFormat)
        }
        var buffers: [CVPixelBuffer] = []
        for mapping in mappings {
            let base = mapping.address
            let lumaBytes = bytesPerLine * height
            let planes: [WrappedPlane]
            let needed: Int
            switch pixelFormat {
            case .nv12:
                planes = [
                    WrappedPlane(baseAddress: base, bytesPerRow: bytesPerLine),
                    WrappedPlane(baseAddress: base + lumaBytes, bytesPerRow: bytesPerLine),
                ]
                needed = lumaBytes + bytesPerLine * ((height + 1) / 2)
            case .yuv420:
                let chromaRow = bytesPerLine / 2
                let chromaBytes = chromaRow * ((height + 1) / 2)
                planes = [
                    WrappedPlane(baseAddress: base, bytesPerRow: bytesPerLine),
                    WrappedPlane(baseAddress: base + lumaBytes, bytesPerRow: chromaRow),
                    WrappedPlane(baseAddress: base + lumaBytes + chromaBytes, bytesPerRow: chromaRow),
                ]
                needed = lumaBytes + 2 * chromaBytes
            default:
                planes = [WrappedPlane(baseAddress: base, bytesPerRow: bytesPerLine)]
                needed = lumaBytes
            }
            guard needed <= mapping.length else { throw CVPixelBufferCreationError(kCVReturnInvalidArgument) }
            buffers.append(
                try CVPixelBuffer(
                    width: width, height: height, pixelFormatType: subType, planes: planes,
                    release: { [self] in withExtendedLifetime(self) {} }))
        }
        return buffers
    }

    /// A block buffer around the first `length` bytes of buffer `index`, for a compressed frame; its release marks
    /// the buffer returned.
    func wrapBlockBuffer(_ index: Int, length: Int) -> CMBlockBuffer {
        CMBlockBuffer(
            wrapping: mappings[index].address, length: min(length, mappings[index].length),
            release: { [self] _ in markReturned(index) })
    }
}
