import Foundation
import OpenCoreMedia
import Testing

/// What a block buffer says about its memory, which decides who may hold it and who may hand it to FFmpeg without
/// a copy: the zero padding after what it allocates, and whether wrapped memory is a loan.
@Suite struct CMBlockBufferMemoryTests {
    /// The `trailingZeroBytes` bytes after `buffer`'s data, read through its own pointer.
    private func padding(of buffer: CMBlockBuffer) -> [UInt8] {
        buffer.withUnsafeBytes { bytes in
            Array(
                UnsafeRawBufferPointer(start: bytes.baseAddress! + bytes.count, count: CMBlockBuffer.trailingZeroBytes))
        }
    }

    @Test("An allocated buffer is its own memory, followed by zero bytes, of any length and filled or not")
    func allocatedBuffersArePadded() {
        for length in [0, 1, 63, 4096, 300_000] {
            let copied = CMBlockBuffer(copying: [UInt8](repeating: 0xA5, count: length))
            let blank = CMBlockBuffer(length: length)
            blank.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0xFF) }
            for buffer in [copied, blank, CMBlockBuffer(length: length, zeroed: true)] {
                #expect(buffer.isZeroPadded && !buffer.isOnLoan)
                #expect(padding(of: buffer) == [UInt8](repeating: 0, count: CMBlockBuffer.trailingZeroBytes))
            }
        }
        #expect(CMBlockBuffer.trailingZeroBytes >= 64, "FFmpeg 5.1's AV_INPUT_BUFFER_PADDING_SIZE")
    }

    @Test("Wrapped memory is a loan without padding unless its wrapper says otherwise; a range keeps what holds")
    func wrappedMemoryAndRanges() throws {
        let memory = UnsafeMutableRawPointer.allocate(byteCount: 100, alignment: 16)
        let lent = CMBlockBuffer(wrapping: memory, length: 100) { $0.deallocate() }
        #expect(lent.isOnLoan && !lent.isZeroPadded)
        let owned = CMBlockBuffer(length: 100)
        // The tail of a padded buffer is padded; a range that stops short of the end is not.
        let tail = CMBlockBuffer(referencing: owned, offset: 40, length: 60)
        let middle = CMBlockBuffer(referencing: owned, offset: 10, length: 20)
        #expect(tail.isZeroPadded && !tail.isOnLoan)
        #expect(!middle.isZeroPadded && !middle.isOnLoan)
        // A range of a loan is a loan too.
        #expect(CMBlockBuffer(referencing: lent, offset: 0, length: 100).isOnLoan)
        // Apple's C function over a caller's memory: a loan; over memory it allocates: the buffer's own.
        var wrapped: CMBlockBuffer?
        let callerMemory = UnsafeMutableRawPointer.allocate(byteCount: 32, alignment: 16)
        defer { callerMemory.deallocate() }
        CMBlockBufferCreateWithMemoryBlock(
            allocator: nil, memoryBlock: callerMemory, blockLength: 32, blockAllocator: nil, customBlockSource: nil,
            offsetToData: 0, dataLength: 32, flags: 0, blockBufferOut: &wrapped)
        #expect(try #require(wrapped).isOnLoan)
        var allocated: CMBlockBuffer?
        CMBlockBufferCreateWithMemoryBlock(
            allocator: nil, memoryBlock: nil, blockLength: 32, blockAllocator: nil, customBlockSource: nil,
            offsetToData: 0, dataLength: 32, flags: 0, blockBufferOut: &allocated)
        #expect(try #require(allocated).isZeroPadded && !allocated!.isOnLoan)
    }
}
