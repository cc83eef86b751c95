import Foundation

/// Flags for creating block buffers, as CoreMedia's `CMBlockBufferFlags`.
public typealias CMBlockBufferFlags = UInt32

public let kCMBlockBufferNoErr: OSStatus = 0
public let kCMBlockBufferStructureAllocationFailedErr: OSStatus = -12700
public let kCMBlockBufferBlockAllocationFailedErr: OSStatus = -12701
public let kCMBlockBufferBadCustomBlockSourceErr: OSStatus = -12702
public let kCMBlockBufferBadOffsetParameterErr: OSStatus = -12703
public let kCMBlockBufferBadLengthParameterErr: OSStatus = -12704
public let kCMBlockBufferBadPointerParameterErr: OSStatus = -12705
public let kCMBlockBufferEmptyBBufErr: OSStatus = -12706
public let kCMBlockBufferUnallocatedBlockErr: OSStatus = -12707
public let kCMBlockBufferInsufficientSpaceErr: OSStatus = -12708

/// Ask for the memory block to be zeroed when the buffer allocates it.
public let kCMBlockBufferAssureMemoryNowFlag: CMBlockBufferFlags = 1 << 0
public let kCMBlockBufferAlwaysCopyDataFlag: CMBlockBufferFlags = 1 << 1
public let kCMBlockBufferDontOptimizeDepthFlag: CMBlockBufferFlags = 1 << 2
public let kCMBlockBufferPermitEmptyReferenceFlag: CMBlockBufferFlags = 1 << 3

/// How a block buffer obtains and frees memory it does not allocate itself, as CoreMedia's struct.
public struct CMBlockBufferCustomBlockSource {
    /// Version of the struct: 0.
    public var version: UInt32
    /// Allocates a block of the given size (unused here: we always allocate with malloc when asked to).
    public var AllocateBlock: (@convention(c) (UnsafeMutableRawPointer?, Int) -> UnsafeMutableRawPointer?)?
    /// Frees the block when the buffer goes away: `(refCon, block, size)`.
    public var FreeBlock: (@convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer, Int) -> Void)?
    /// Passed back to the callbacks.
    public var refCon: UnsafeMutableRawPointer?

    public init(
        version: UInt32 = 0,
        AllocateBlock: (@convention(c) (UnsafeMutableRawPointer?, Int) -> UnsafeMutableRawPointer?)? = nil,
        FreeBlock: (@convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer, Int) -> Void)? = nil,
        refCon: UnsafeMutableRawPointer? = nil
    ) {
        self.version = version
        self.AllocateBlock = AllocateBlock
        self.FreeBlock = FreeBlock
        self.refCon = refCon
    }
}

/// A contiguous run of bytes: compressed media payloads and PCM audio.
///
/// Ours is always one contiguous block (Apple's may chain several; every capture path here produces one), owned or
/// wrapping memory whose owner is told when the buffer dies.
///
/// Threading: the bytes are not synchronized. A producer fills a buffer before handing it on (inside a
/// CMSampleBuffer); after that, treat it as read-only and it is safe to read from any thread.
public final class CMBlockBuffer: @unchecked Sendable {
    /// The first byte of data.
    private let bytes: UnsafeMutableRawPointer
    /// Bytes of data.
    public let dataLength: Int
    /// Whether the memory is lent from a small pool its owner needs back soon (a camera's few mapped buffers, a
    /// PipeWire stream's): whoever holds a frame for long (a file output's queue) copies it first. Memory a buffer
    /// allocated, or a reference-counted FFmpeg packet's, is no loan.
    package let isOnLoan: Bool
    /// Whether at least ``trailingZeroBytes`` zero bytes follow the data inside the same block, as FFmpeg's decoders
    /// and parsers require of a packet's payload: such a buffer can be handed to libavcodec and libavformat without a
    /// copy (MediaCodecs' packets reference it).
    package let isZeroPadded: Bool
    /// Called exactly once in deinit: frees what we allocated, or tells the owner of wrapped memory.
    private let release: @Sendable (UnsafeMutableRawPointer) -> Void

    /// The zero bytes a buffer allocates past its data: FFmpeg's `AV_INPUT_BUFFER_PADDING_SIZE` (64 in FFmpeg 5.1
    /// and 6), so its readers may overread without a copy into a padded packet.
    package static let trailingZeroBytes = 64

    /// Allocates `length` bytes (zeroed when `zeroed`), 64-byte aligned so vector code can read it, and
    /// ``trailingZeroBytes`` zero bytes after them.
    public init(length: Int, zeroed: Bool = false) {
        precondition(length >= 0, "a block buffer's length is not negative")
        let block = UnsafeMutableRawPointer.allocate(byteCount: length + Self.trailingZeroBytes, alignment: 64)
        if zeroed { block.initializeMemory(as: UInt8.self, repeating: 0, count: length) }
        (block + length).initializeMemory(as: UInt8.self, repeating: 0, count: Self.trailingZeroBytes)
        bytes = block
        dataLength = length
        isOnLoan = false
        isZeroPadded = true
        release = { $0.deallocate() }
    }

    /// A copy of `data`.
    public convenience init<Bytes: Collection>(copying data: Bytes) where Bytes.Element == UInt8 {
        self.init(length: data.count)
        UnsafeMutableRawBufferPointer(start: bytes, count: dataLength).copyBytes(from: data)
    }

    /// Wraps memory the buffer does not own; `release` runs exactly once, when the buffer dies. Unless said
    /// otherwise the memory is taken to be a loan (``isOnLoan``) without zero padding (``isZeroPadded``).
    package init(
        wrapping memory: UnsafeMutableRawPointer, length: Int, isOnLoan: Bool = true, isZeroPadded: Bool = false,
        release: @escaping @Sendable (UnsafeMutableRawPointer) -> Void
    ) {
        bytes = memory
        dataLength = length
        self.isOnLoan = isOnLoan
        self.isZeroPadded = isZeroPadded
        self.release = release
    }

    /// Bytes `offset..<offset + length` of `parent`, shared: `parent` lives as long as this buffer does (Apple's
    /// buffer references, as `CMSampleBufferCopySampleBufferForRange` makes them).
    package convenience init(referencing parent: CMBlockBuffer, offset: Int, length: Int) {
        precondition(offset >= 0 && length >= 0 && offset + length <= parent.dataLength, "a range inside the parent")
        self.init(
            wrapping: parent.bytes + offset, length: length, isOnLoan: parent.isOnLoan,
            isZeroPadded: parent.isZeroPadded && offset + length == parent.dataLength
        ) { _ in withExtendedLifetime(parent) {} }
    }

    deinit { release(bytes) }

    /// Whether the buffer holds no data.
    public var isEmpty: Bool { dataLength == 0 }

    /// The bytes, for reading, inside the closure only.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: bytes, count: dataLength))
    }

    /// The bytes, for writing, inside the closure only. Write before sharing the buffer.
    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: bytes, count: dataLength))
    }

    /// A copy of the bytes.
    public func dataBytes() -> Data { Data(bytes: bytes, count: dataLength) }

    /// The raw pointer `CMBlockBufferGetDataPointer` hands out: valid as long as the buffer lives.
    fileprivate var basePointer: UnsafeMutableRawPointer { bytes }
}

// MARK: - The C-style functions, with Apple's Swift spelling

/// Creates a block buffer over `memoryBlock` (wrapped; freed by `customBlockSource.FreeBlock` if given, never
/// otherwise) or, when `memoryBlock` is nil, over `blockLength` newly allocated bytes.
/// The corresponding Apple function is `CMBlockBufferCreateWithMemoryBlock`.
@discardableResult
public func CMBlockBufferCreateWithMemoryBlock(
    allocator structureAllocator: CFAllocator?, memoryBlock: UnsafeMutableRawPointer?, blockLength: Int,
    blockAllocator: CFAllocator?, customBlockSource: UnsafePointer<CMBlockBufferCustomBlockSource>?,
    offsetToData: Int, dataLength: Int, flags: CMBlockBufferFlags,
    blockBufferOut: UnsafeMutablePointer<CMBlockBuffer?>
) -> OSStatus {
    guard blockLength >= 0, offsetToData >= 0, dataLength >= 0 else {
        blockBufferOut.pointee = nil
        return kCMBlockBufferBadLengthParameterErr
    }
    guard offsetToData + dataLength <= blockLength else {
        blockBufferOut.pointee = nil
        return kCMBlockBufferBadOffsetParameterErr
    }
    guard let memoryBlock else {
        let buffer = CMBlockBuffer(length: dataLength, zeroed: flags & kCMBlockBufferAssureMemoryNowFlag != 0)
        blockBufferOut.pointee = buffer
        return kCMBlockBufferNoErr
    }
    let source = customBlockSource?.pointee
    let freeBlock = source?.FreeBlock
    let refCon = UncheckedPointer(source?.refCon)
    let block = UncheckedPointer(memoryBlock)
    blockBufferOut.pointee = CMBlockBuffer(wrapping: memoryBlock + offsetToData, length: dataLength) { _ in
        // The owner frees the block it gave us, from its start, with its full length.
        if let start = block.pointer { freeBlock?(refCon.pointer, start, blockLength) }
    }
    return kCMBlockBufferNoErr
}

/// The number of data bytes. The corresponding Apple function is `CMBlockBufferGetDataLength`.
public func CMBlockBufferGetDataLength(_ theBuffer: CMBlockBuffer) -> Int { theBuffer.dataLength }

/// Whether the buffer holds no data.
public func CMBlockBufferIsEmpty(_ theBuffer: CMBlockBuffer) -> Bool { theBuffer.isEmpty }

/// Whether `length` bytes from `offset` are contiguous: always, for an in-range request.
public func CMBlockBufferIsRangeContiguous(_ theBuffer: CMBlockBuffer, atOffset offset: Int, length: Int) -> Bool {
    let length = length == 0 ? theBuffer.dataLength - offset : length
    return offset >= 0 && length >= 0 && offset + length <= theBuffer.dataLength
}

/// Copies `dataLength` bytes from `offsetToData` into `destination`.
@discardableResult
public func CMBlockBufferCopyDataBytes(
    _ theSourceBuffer: CMBlockBuffer, atOffset offsetToData: Int, dataLength: Int,
    destination: UnsafeMutableRawPointer
) -> OSStatus {
    guard offsetToData >= 0, offsetToData <= theSourceBuffer.dataLength else {
        return kCMBlockBufferBadOffsetParameterErr
    }
    guard dataLength >= 0, offsetToData + dataLength <= theSourceBuffer.dataLength else {
        return kCMBlockBufferBadLengthParameterErr
    }
    destination.copyMemory(from: theSourceBuffer.basePointer + offsetToData, byteCount: dataLength)
    return kCMBlockBufferNoErr
}

/// Copies `dataLength` bytes from `sourceBytes` into the buffer at `offsetIntoDestination`.
@discardableResult
public func CMBlockBufferReplaceDataBytes(
    with sourceBytes: UnsafeRawPointer, blockBuffer destinationBuffer: CMBlockBuffer, offsetIntoDestination: Int,
    dataLength: Int
) -> OSStatus {
    guard offsetIntoDestination >= 0, offsetIntoDestination <= destinationBuffer.dataLength else {
        return kCMBlockBufferBadOffsetParameterErr
    }
    guard dataLength >= 0, offsetIntoDestination + dataLength <= destinationBuffer.dataLength else {
        return kCMBlockBufferBadLengthParameterErr
    }
    (destinationBuffer.basePointer + offsetIntoDestination).copyMemory(from: sourceBytes, byteCount: dataLength)
    return kCMBlockBufferNoErr
}

/// A pointer to the data at `offset`, with the contiguous length from there and the total length.
/// The pointer is valid as long as the buffer lives.
@discardableResult
public func CMBlockBufferGetDataPointer(
    _ theBuffer: CMBlockBuffer, atOffset offset: Int, lengthAtOffsetOut: UnsafeMutablePointer<Int>?,
    totalLengthOut: UnsafeMutablePointer<Int>?, dataPointerOut: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> OSStatus {
    guard offset >= 0, offset < theBuffer.dataLength || (offset == 0 && theBuffer.dataLength == 0) else {
        dataPointerOut?.pointee = nil
        return kCMBlockBufferBadOffsetParameterErr
    }
    lengthAtOffsetOut?.pointee = theBuffer.dataLength - offset
    totalLengthOut?.pointee = theBuffer.dataLength
    dataPointerOut?.pointee = (theBuffer.basePointer + offset).assumingMemoryBound(to: CChar.self)
    return kCMBlockBufferNoErr
}

/// A C pointer carried into a `@Sendable` release closure; the owner who gave it promised it stays valid.
private struct UncheckedPointer: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer?
    init(_ pointer: UnsafeMutableRawPointer?) { self.pointer = pointer }
}
