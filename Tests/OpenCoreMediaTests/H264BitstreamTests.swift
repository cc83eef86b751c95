import Testing

@testable import OpenCoreMedia

/// H.264's two layouts: NAL units found in Annex B whatever the start codes, moved to AVCC, and `avcC` written.
@Suite struct H264BitstreamTests {
    // A baseline SPS (profile 66, level 3.0), a PPS, an IDR slice and a non-IDR slice, as short made-up units.
    let sps: [UInt8] = [0x67, 66, 0xC0, 30, 0xDA, 0x02, 0x80]
    let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]
    let idr: [UInt8] = [0x65, 0x88, 0x84, 0x00, 0x33]
    let slice: [UInt8] = [0x41, 0x9A, 0x02]

    func units(_ bytes: [UInt8]) -> [[UInt8]] {
        var found: [[UInt8]] = []
        bytes.withUnsafeBytes { raw in H264Bitstream.forEachNALUnit(inAnnexB: raw) { found.append(Array(raw[$0])) } }
        return found
    }

    @Test func unitsAreFoundAfterThreeAndFourByteStartCodesWithTrailingZerosLeftOut() {
        let four: [UInt8] = [0, 0, 0, 1]
        let three: [UInt8] = [0, 0, 1]
        let stream: [UInt8] = four + sps + three + pps + [0] + four + idr + [0, 0]
        #expect(units(stream) == [sps, pps, idr])
        // A unit that itself ends in a zero byte before the next start code keeps its other bytes.
        #expect(units([0, 0, 1] + slice + [0, 0, 0, 1] + idr) == [slice, idr])
        #expect(units([0x12, 0x34]).isEmpty)
        #expect(units([]).isEmpty)
    }

    @Test func keyFramesAreTheOnesWithAnIDRSlice() {
        let code: [UInt8] = [0, 0, 0, 1]
        let key: [UInt8] = code + sps + code + pps + code + idr
        let delta: [UInt8] = [0, 0, 0, 1] + slice
        #expect(key.withUnsafeBytes { H264Bitstream.containsIDR(annexB: $0) })
        #expect(!delta.withUnsafeBytes { H264Bitstream.containsIDR(annexB: $0) })
        let sets = key.withUnsafeBytes { H264Bitstream.parameterSets(annexB: $0) }
        #expect(sets.sps == [sps] && sets.pps == [pps])
    }

    @Test func annexBBecomesLengthPrefixed() {
        let stream: [UInt8] = [0, 0, 0, 1] + sps + [0, 0, 1] + idr
        let length = stream.withUnsafeBytes { H264Bitstream.avccLength(ofAnnexB: $0) }
        #expect(length == 8 + sps.count + idr.count)
        var avcc = [UInt8](repeating: 0xFF, count: length)
        let written = stream.withUnsafeBytes { source in
            avcc.withUnsafeMutableBytes { H264Bitstream.writeAVCC(fromAnnexB: source, into: $0) }
        }
        #expect(written == length)
        let expected: [UInt8] = [0, 0, 0, UInt8(sps.count)] + sps + [0, 0, 0, UInt8(idr.count)] + idr
        #expect(avcc == expected)
    }

    @Test func avcCOfABaselineStream() throws {
        let record = try #require(H264Bitstream.avcC(sps: [sps], pps: [pps]))
        // version, profile, compatibility, level, 4-byte lengths, one SPS, its length, …, one PPS, its length, …
        let head: [UInt8] = [1, 66, 0xC0, 30, 0xFF, 0xE1, 0, UInt8(sps.count)]
        let tail: [UInt8] = [1, 0, UInt8(pps.count)]
        #expect(record == head + sps + tail + pps)
        #expect(H264Bitstream.avcC(sps: [], pps: [pps]) == nil)
        let description = try #require(H264Bitstream.formatDescription(sps: [sps], pps: [pps], width: 64, height: 48))
        #expect(description.mediaSubType == .h264 && H264Bitstream.isAVCC(description))
    }

    @Test func avcCOfAHighProfileStreamCarriesChromaFormatAndBitDepths() throws {
        // profile 100, level 4.0; seq_parameter_set_id 0 (1), chroma_format_idc 1 (010), bit depths 0 and 0 (1, 1):
        // bits 1 010 1 1 → 0b1010_1100 followed by the rest.
        let high: [UInt8] = [0x67, 100, 0x00, 40, 0b1010_1100, 0x80]
        let record = try #require(H264Bitstream.avcC(sps: [high], pps: [pps]))
        let extension420: [UInt8] = [0xFD, 0xF8, 0xF8, 0]
        #expect(Array(record.suffix(4)) == extension420)
        // 4:2:2 at 10 bits: chroma_format_idc 2 (011), bit depths 2 and 2 (011 011): bits 1 011 011 011 → 1011_0110 11…
        let high422: [UInt8] = [0x67, 122, 0x00, 40, 0b1011_0110, 0b1100_0000]
        let record422 = try #require(H264Bitstream.avcC(sps: [high422], pps: [pps]))
        let extension422: [UInt8] = [0xFE, 0xFA, 0xFA, 0]
        #expect(Array(record422.suffix(4)) == extension422)
    }
}
