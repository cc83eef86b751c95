// The demuxer's packets: a raw frame (megabytes in a y4m file) is held by reference to libavformat's buffer rather
// than copied, and stays valid and exact after the demuxer is gone.

import Foundation
import MediaCodecs
import OpenCoreMedia
import Testing

@Suite("Demuxer packets")
struct DemuxerTests {
    /// Frame `index`'s byte at `offset`: distinct per frame and position.
    static func pattern(_ index: Int, _ offset: Int) -> UInt8 { UInt8(truncatingIfNeeded: index &* 31 &+ offset / 7) }

    @Test("Raw 640x480 frames from a y4m file (referenced, 450 KiB each) read back exactly after the demuxer is gone")
    func rawFramesOutliveTheDemuxer() throws {
        let width = 640
        let height = 480
        let frameBytes = width * height * 3 / 2
        #expect(frameBytes >= 256 * 1024, "the frames must be large enough to be referenced")
        var file = Data("YUV4MPEG2 W\(width) H\(height) F30:1 Ip A1:1 C420jpeg\n".utf8)
        for index in 0..<3 {
            file.append(Data("FRAME\n".utf8))
            file.append(Data((0..<frameBytes).map { Self.pattern(index, $0) }))
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("demuxer-\(UUID()).y4m").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try file.write(to: URL(fileURLWithPath: path))

        var packets: [EncodedPacket] = []
        do {
            let demuxer = try Demuxer(path: path)
            while case .packet(let packet, _) = try demuxer.readPacket() { packets.append(packet) }
        }
        // The demuxer (and its format context) is gone; the packets' bytes are still libavformat's buffers.
        try #require(packets.count == 3)
        for (index, packet) in packets.enumerated() {
            #expect(packet.data.dataLength == frameBytes)
            let mismatches = packet.data.withUnsafeBytes { bytes in
                bytes.indices.count { bytes[$0] != Self.pattern(index, $0) }
            }
            #expect(mismatches == 0, "frame \(index): \(mismatches) bytes differ")
            #expect(packet.presentationTime == CMTime(value: Int64(index), timescale: 30))
        }
    }
}
