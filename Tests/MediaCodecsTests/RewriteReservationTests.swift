// The finishing rewrite of a fragmented movie: its `moov` written into room reserved at the front (one pass), and
// faststart's second pass when that room is too small; checked by parsing the boxes and with ffprobe and ffmpeg.

import Foundation
import OpenCoreMedia
import Testing

@testable import MediaCodecs

@Suite("The finishing rewrite's reserved moov room")
struct RewriteReservationTests {
    /// Every packet's size, as written and as ffprobe reads them back from `path`, in order per stream. The
    /// first video packet is compared by count only: the muxer rewrites the parameter sets libx264 puts in it with
    /// start codes into the container's length-prefixed form, which changes its size.
    private func expectSamePackets(_ written: [WrittenPacket], in path: String) throws {
        let probed = try probePackets(path)
        for stream in 0..<2 {
            let sent = written.filter { $0.stream == stream }.map(\.size)
            let read = probed.filter { $0.stream == stream }.map(\.size)
            #expect(read.count == sent.count, "stream \(stream): \(read.count) read back, \(sent.count) written")
            #expect(read.dropFirst(stream == 0 ? 1 : 0) == sent.dropFirst(stream == 0 ? 1 : 0), "stream \(stream)")
        }
    }

    @Test("The moov fills the reserved room with a free box after it: moov first, every packet, decodes cleanly")
    func reservedRoom() throws {
        let path = try scratchPath("reserved-moov.mov")
        var reservation = 0
        let written = try writeNoiseMovie(
            to: path, seconds: 3, bitRate: 2_000_000,
            options: Muxer.Options(fragmentInterval: CMTime(value: 1, timescale: 1)), finish: true,
            atEnd: { muxer in reservation = muxer.sizeBound.indexBytes })
        let boxes = try topLevelBoxes(path)
        let types = boxes.map(\.type)
        #expect(!types.contains("moof") && !types.contains("mfra"), "still fragmented: \(types)")
        let moov = try #require(types.firstIndex(of: "moov"))
        let mdat = try #require(types.firstIndex(of: "mdat"))
        #expect(moov < mdat, "not fast start: \(types)")
        // The room libavformat kept: the moov and the free box after it fill it exactly.
        try #require(moov + 1 < boxes.count && boxes[moov + 1].type == "free", "no free box after the moov: \(types)")
        #expect(boxes[moov].size + boxes[moov + 1].size == reservation, "\(boxes[moov]), \(boxes[moov + 1])")
        try expectSamePackets(written, in: path)
        #expect(try decodeErrors(path) == "")
    }

    @Test("A moov larger than its room falls back to faststart's second pass: moov first, every packet")
    func tooSmallFallsBack() throws {
        let path = try scratchPath("second-pass-moov.mov")
        let written = try writeNoiseMovie(
            to: path, seconds: 3, bitRate: 2_000_000,
            options: Muxer.Options(fragmentInterval: CMTime(value: 1, timescale: 1)), finish: true,
            atEnd: { muxer in muxer.rewriteHeaderReservation = 64 })
        let types = try topLevelBoxes(path).map(\.type)
        #expect(!types.contains("moof") && !types.contains("mfra"), "still fragmented: \(types)")
        let moov = try #require(types.firstIndex(of: "moov"))
        let mdat = try #require(types.firstIndex(of: "mdat"))
        #expect(moov < mdat, "not fast start: \(types)")
        #expect(!types.contains("free"), "the 64-byte room was kept: \(types)")
        try expectSamePackets(written, in: path)
        #expect(try decodeErrors(path) == "")
    }
}
