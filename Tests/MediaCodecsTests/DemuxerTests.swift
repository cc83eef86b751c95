// The demuxer's packets: a raw frame (megabytes in a y4m file) is held by reference to libavformat's buffer rather
// than copied, and stays valid and exact after the demuxer is gone; y4m frames read straight into planes.

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

    @Test("y4m frames read straight into planes: the file's bytes, rows padded or not, FRAME parameters skipped")
    func y4mFramesIntoPlanes() throws {
        let (width, height) = (640, 480)
        let frameBytes = width * height * 3 / 2
        var file = Data("YUV4MPEG2 W\(width) H\(height) F30:1 Ip A1:1 C420jpeg\n".utf8)
        for index in 0..<3 {
            // A frame line may carry parameters; the reader skips them as libavformat does.
            file.append(Data((index == 1 ? "FRAME Ip XYSCSS=420JPEG\n" : "FRAME\n").utf8))
            file.append(Data((0..<frameBytes).map { Self.pattern(index, $0) }))
        }
        // A last frame cut short is the end of the file, not a frame.
        file.append(Data("FRAME\n".utf8) + Data(count: frameBytes / 2))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("demuxer-\(UUID()).y4m").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try file.write(to: URL(fileURLWithPath: path))

        let demuxer = try Demuxer(path: path)
        #expect(demuxer.readsY4MFrames)
        // (bytes of a row, rows) of the I420 planes; the second frame's rows are padded in memory (read row by row).
        let planes = [(width, height), (width / 2, height / 2), (width / 2, height / 2)]
        for index in 0..<3 {
            let padding = index == 1 ? 64 : 0
            // The three planes one after another in one block of memory, each row `padding` bytes longer than its pixels.
            let starts = planes.indices.map { planes[..<$0].reduce(0) { $0 + ($1.0 + padding) * $1.1 } }
            var memory = [UInt8](repeating: 0, count: planes.reduce(0) { $0 + ($1.0 + padding) * $1.1 })
            let output = try memory.withUnsafeMutableBytes { block in
                try demuxer.readY4MFrame(
                    into: zip(starts, planes).map { start, plane in
                        Demuxer.RawPlane(
                            baseAddress: block.baseAddress! + start, rowBytes: plane.0, bytesPerRow: plane.0 + padding,
                            rows: plane.1)
                    })
            }
            let frameTime = CMTime(value: 1, timescale: 30)
            let presentationTime = CMTimeMultiply(frameTime, multiplier: Int32(index))
            #expect(output == .frame(presentationTime: presentationTime, duration: frameTime))
            var offset = 0
            var mismatches = 0
            for (start, plane) in zip(starts, planes) {
                for row in 0..<plane.1 {
                    for column in 0..<plane.0
                    where memory[start + row * (plane.0 + padding) + column] != Self.pattern(index, offset + column) {
                        mismatches += 1
                    }
                    offset += plane.0
                }
            }
            #expect(mismatches == 0, "frame \(index): \(mismatches) bytes differ")
        }
        var last = [UInt8](repeating: 0, count: frameBytes)
        let end = try last.withUnsafeMutableBytes { bytes in
            let whole = Demuxer.RawPlane(
                baseAddress: bytes.baseAddress!, rowBytes: frameBytes, bytesPerRow: frameBytes, rows: 1)
            return try demuxer.readY4MFrame(into: [whole])
        }
        #expect(end == .endOfStream)
    }

    @Test("y4m frames refuse planes that do not add up to the file's frame")
    func y4mFramesWrongPlanes() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("demuxer-\(UUID()).y4m").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try (Data("YUV4MPEG2 W16 H16 F30:1 Ip A1:1 C420jpeg\nFRAME\n".utf8) + Data(count: 384)).write(
            to: URL(fileURLWithPath: path))
        let demuxer = try Demuxer(path: path)
        var bytes = [UInt8](repeating: 0, count: 256)
        #expect(throws: MediaCodecsError.self) {
            try bytes.withUnsafeMutableBytes { buffer in
                try demuxer.readY4MFrame(
                    into: [Demuxer.RawPlane(baseAddress: buffer.baseAddress!, rowBytes: 16, bytesPerRow: 16, rows: 16)])
            }
        }
    }
}
