// The process-wide choices of OpenAVCaptureProcess, checked against the kernel's view of the process's mappings.

import Foundation
import OpenAVCapture
import Testing

@Suite("Process-wide memory policy")
struct OpenAVCaptureProcessTests {
    /// Whether /proc/self/maps, read into `buffer` (allocated beforehand, so that reading maps nothing new where a
    /// freed block was), lists a mapping that holds `address`.
    static func isMapped(_ address: UInt, readingInto buffer: UnsafeMutableRawBufferPointer) throws -> Bool {
        let descriptor = open("/proc/self/maps", O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var length = 0
        while length < buffer.count {
            let count = read(descriptor, buffer.baseAddress! + length, buffer.count - length)
            guard count > 0 else { break }
            length += count
        }
        try #require(length < buffer.count, "/proc/self/maps is larger than the buffer")
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: buffer[..<length]), as: UTF8.self)
        return text.split(separator: "\n").contains { line in
            let bounds = line.prefix { $0 != " " }.split(separator: "-").compactMap { UInt($0, radix: 16) }
            return bounds.count == 2 && bounds[0] <= address && address < bounds[1]
        }
    }

    @Test("releaseFreedMemoryPromptly: after a large block is freed, a smaller one is unmapped when freed")
    func freedMemoryGoesBack() throws {
        #expect(OpenAVCaptureProcess.releaseFreedMemoryPromptly())
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 << 20, alignment: 16)
        defer { buffer.deallocate() }
        // By default, freeing a 30 MiB block that malloc mapped on its own raises its mmap threshold to 30 MiB, and a
        // 24 MiB block is then carved from an arena, which stays mapped when the block is freed. With the setting
        // the threshold stays at 128 KiB: the block is mapped on its own and unmapped when freed. (Sizes no arena
        // has free after other suites: malloc serves a request from a free chunk large enough before any mmap.)
        // Threads left by other suites may map something new into the freed range between the free and the look:
        // one attempt of five that sees it unmapped is enough (without the setting none does).
        var unmapped = 0
        for _ in 0..<5 {
            let size = 30 << 20
            let large = try #require(malloc(size))
            memset(large, 1, size)
            free(large)
            let blockSize = 24 << 20
            let block = try #require(malloc(blockSize))
            memset(block, 1, blockSize)
            let address = UInt(bitPattern: block)
            try #require(try Self.isMapped(address, readingInto: buffer))
            free(block)
            if try !Self.isMapped(address, readingInto: buffer) { unmapped += 1 }
        }
        #expect(unmapped > 0, "the freed block's pages stayed mapped in 5 attempts of 5")
    }
}
