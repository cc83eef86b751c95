// Compressed bytes between FFmpeg and block buffers without copies: a demuxer's packets are held by reference, and a
// packet given to the muxer or a decoder references a block buffer that is its own, padded memory; a loan is copied.

import CFFmpeg
import Foundation
import OpenCoreMedia
import Testing

@testable import MediaCodecs

@Suite("Packets referenced, not copied")
struct PacketReferenceTests {
    @Test("A movie's packets, read: the file's bytes (ffprobe's MD5s), each block FFmpeg's zero-padded buffer")
    func demuxedPacketsAreReferencedAndPadded() throws {
        let source = try scratchPath("referenced-packets.mov")
        let made = try run(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000", "-t", "1", "-c:v", "libx264", "-g", "10", "-c:a", "aac", "-ac",
                "1", source,
            ])
        try #require(made.status == 0, "ffmpeg: \(made.error)")
        let probed = try run(
            "ffprobe",
            [
                "-v", "error", "-show_data_hash", "MD5", "-show_entries", "packet=stream_index,size,data_hash", "-of",
                "compact=p=0:nk=1:s=|", source,
            ])
        try #require(probed.status == 0, "ffprobe: \(probed.error)")
        // FFmpeg 5.1 may break a packet's line before its hash: such a line goes on the next.
        let expected = String(decoding: probed.output, as: UTF8.self).replacingOccurrences(of: "|\n|", with: "|")
            .replacingOccurrences(of: "\n|", with: "|").split(separator: "\n").map(String.init)

        var read: [String] = []
        let demuxer = try Demuxer(path: source)
        while case .packet(let packet, let stream) = try demuxer.readPacket() {
            let data = packet.data
            #expect(!data.isOnLoan && data.isZeroPadded, "packet \(read.count) of stream \(stream)")
            let tail = data.withUnsafeBytes { bytes in
                UnsafeRawBufferPointer(
                    start: bytes.baseAddress! + bytes.count, count: Int(AV_INPUT_BUFFER_PADDING_SIZE)
                )
                .allSatisfy { $0 == 0 }
            }
            #expect(tail, "packet \(read.count): the padding after the payload is zero")
            read.append("\(stream)|\(data.dataLength)|MD5:\(md5(of: data))")
        }
        #expect(read.count == expected.count && read.count > 40)
        let differing = Set(read).symmetricDifference(expected)
        #expect(differing.isEmpty, "packets only one side has: \(differing.sorted().prefix(4))")
    }

    @Test("loadPacket: an own padded block is referenced read-only and lives while the packet does; a loan is copied")
    func loadPacketReferencesOwnMemoryOnly() throws {
        let packet = try #require(av_packet_alloc())
        var packetToFree: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_packet_free(&packetToFree) }
        let bytes = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        // What makes referencing safe: our buffers' zero tail is at least the padding FFmpeg's readers may overread.
        #expect(CMBlockBuffer.trailingZeroBytes >= Int(AV_INPUT_BUFFER_PADDING_SIZE))

        weak var watched: CMBlockBuffer?
        do {
            let own = CMBlockBuffer(copying: bytes)
            watched = own
            try loadPacket(packet, from: own, while: "a test")
            #expect(UnsafeRawPointer(packet.pointee.data) == own.withUnsafeBytes { $0.baseAddress })
            #expect(Int(packet.pointee.size) == bytes.count)
            #expect(av_buffer_is_writable(packet.pointee.buf) == 0, "a filter that changes the packet must copy it")
        }
        #expect(watched != nil, "the packet holds the block buffer")
        av_packet_unref(packet)
        #expect(watched == nil, "unreferenced, the block buffer is gone")

        let memory = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 16)
        bytes.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        let loan = CMBlockBuffer(wrapping: memory, length: bytes.count) { $0.deallocate() }
        try loadPacket(packet, from: loan, while: "a test")
        #expect(UnsafeMutableRawPointer(packet.pointee.data) != memory)
        #expect(Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size))) == bytes)
        av_packet_unref(packet)
    }

    private func md5(of data: CMBlockBuffer) -> String {
        let context = av_md5_alloc()
        defer { av_free(UnsafeMutableRawPointer(context)) }
        var digest = [UInt8](repeating: 0, count: 16)
        data.withUnsafeBytes { bytes in
            av_md5_init(context)
            av_md5_update(context, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count)
            av_md5_final(context, &digest)
        }
        return digest.map { String(format: "%02x", $0) }.joined()
    }
}
