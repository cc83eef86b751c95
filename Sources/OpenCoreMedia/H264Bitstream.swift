// H.264 as cameras send it and as QuickTime stores it.

import Foundation

/// The two ways an H.264 stream is laid out, and the moves between them.
///
/// A UVC or Raspberry Pi camera sends **Annex B**: each NAL unit after a start code (`00 00 01` or `00 00 00 01`),
/// the parameter sets (SPS, PPS) in band before every key frame. A QuickTime or MPEG-4 track stores **AVCC**: each
/// NAL unit after its length in 4 big-endian bytes, the parameter sets once in the sample description's `avcC` atom
/// (ISO/IEC 14496-15 §5.3.3), which is what an Apple `'avc1'` format description carries. Recording a camera's H.264
/// as it comes means moving from the first to the second: no decode, no encode.
///
/// Only the NAL unit headers and the first fields of the sequence parameter set are read: enough to find key frames
/// and parameter sets and to write `avcC`. Decoding is FFmpeg's.
///
/// Stateless; safe from any thread.
package enum H264Bitstream {
    /// NAL unit types (ITU-T H.264 Table 7-1).
    package enum NALUnitType {
        package static let idrSlice: UInt8 = 5
        package static let sequenceParameterSet: UInt8 = 7
        package static let pictureParameterSet: UInt8 = 8
    }

    /// Calls `body` with the range of each NAL unit in Annex B `bytes`, start codes and trailing zero bytes left
    /// out, in stream order. Bytes before the first start code are not a NAL unit and are skipped.
    package static func forEachNALUnit(inAnnexB bytes: UnsafeRawBufferPointer, _ body: (Range<Int>) -> Void) {
        guard let base = bytes.baseAddress, bytes.count >= 3 else { return }
        var start: Int?
        var searchFrom = 2
        while searchFrom < bytes.count {
            // The `01` that ends a start code, found with memchr: the scan runs at memory speed over large frames.
            guard let hit = memchr(base + searchFrom, 1, bytes.count - searchFrom) else { break }
            let one = base.distance(to: UnsafeRawPointer(hit))
            searchFrom = one + 1
            guard bytes[one - 1] == 0, bytes[one - 2] == 0 else { continue }
            if let start { emit(start..<(one - 2), of: bytes, body) }
            start = one + 1
            searchFrom = one + 3
        }
        if let start { emit(start..<bytes.count, of: bytes, body) }
    }

    private static func emit(_ range: Range<Int>, of bytes: UnsafeRawBufferPointer, _ body: (Range<Int>) -> Void) {
        var end = range.upperBound
        // A 4-byte start code's leading zero, and any trailing_zero_8bits, are not part of the unit.
        while end > range.lowerBound, bytes[end - 1] == 0 { end -= 1 }
        if end > range.lowerBound { body(range.lowerBound..<end) }
    }

    /// The type of the NAL unit whose first byte is `header`.
    package static func nalUnitType(_ header: UInt8) -> UInt8 { header & 0x1F }

    /// Whether Annex B `bytes` hold an IDR slice: a key frame, where decoding can start.
    package static func containsIDR(annexB bytes: UnsafeRawBufferPointer) -> Bool {
        var found = false
        forEachNALUnit(inAnnexB: bytes) { range in
            if nalUnitType(bytes[range.lowerBound]) == NALUnitType.idrSlice { found = true }
        }
        return found
    }

    /// The sequence and picture parameter sets in Annex B `bytes`, in stream order (every SPS, then every PPS, each
    /// once).
    package static func parameterSets(annexB bytes: UnsafeRawBufferPointer) -> (sps: [[UInt8]], pps: [[UInt8]]) {
        var sps: [[UInt8]] = []
        var pps: [[UInt8]] = []
        forEachNALUnit(inAnnexB: bytes) { range in
            let unit = [UInt8](bytes[range])
            switch nalUnitType(unit[0]) {
            case NALUnitType.sequenceParameterSet where !sps.contains(unit): sps.append(unit)
            case NALUnitType.pictureParameterSet where !pps.contains(unit): pps.append(unit)
            default: break
            }
        }
        return (sps, pps)
    }

    /// The size of Annex B `bytes` as AVCC (every NAL unit after a 4-byte length).
    package static func avccLength(ofAnnexB bytes: UnsafeRawBufferPointer) -> Int {
        var length = 0
        forEachNALUnit(inAnnexB: bytes) { length += 4 + $0.count }
        return length
    }

    /// Writes Annex B `bytes` as AVCC into `destination` (``avccLength(ofAnnexB:)`` bytes long); returns the bytes
    /// written. Every NAL unit is kept, parameter sets included (in-band parameter sets are allowed in `'avc1'`).
    @discardableResult
    package static func writeAVCC(
        fromAnnexB bytes: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer
    ) -> Int {
        var offset = 0
        forEachNALUnit(inAnnexB: bytes) { range in
            let length = UInt32(range.count).bigEndian
            withUnsafeBytes(of: length) {
                destination.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: 4)
            }
            destination.baseAddress!.advanced(by: offset + 4).copyMemory(
                from: bytes.baseAddress!.advanced(by: range.lowerBound), byteCount: range.count)
            offset += 4 + range.count
        }
        return offset
    }

    /// The `avcC` atom's body (AVCDecoderConfigurationRecord, ISO/IEC 14496-15 §5.3.3.1) for these parameter sets,
    /// NAL unit lengths in 4 bytes; nil without an SPS and a PPS or with an SPS too short to name its profile.
    package static func avcC(sps: [[UInt8]], pps: [[UInt8]]) -> [UInt8]? {
        guard let first = sps.first, first.count >= 4, !pps.isEmpty, sps.count <= 31, pps.count <= 255 else {
            return nil
        }
        let profile = first[1]
        var record: [UInt8] = [1, profile, first[2], first[3], 0xFC | 3, 0xE0 | UInt8(sps.count)]
        for unit in sps { record += [UInt8(unit.count >> 8), UInt8(unit.count & 0xFF)] + unit }
        record.append(UInt8(pps.count))
        for unit in pps { record += [UInt8(unit.count >> 8), UInt8(unit.count & 0xFF)] + unit }
        if highProfiles.contains(profile) {
            // The High profiles' extension: chroma format and bit depths, read from the SPS.
            guard let fields = SequenceParameterSetFields(first) else { return nil }
            record += [
                0xFC | fields.chromaFormat, 0xF8 | fields.bitDepthLumaMinus8, 0xF8 | fields.bitDepthChromaMinus8, 0,
            ]
        }
        return record
    }

    /// The chroma format (`chroma_format_idc`: 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4) and luma bit depth an
    /// SPS (the NAL unit, header byte first) names; nil for an SPS too short or out of range to say.
    package static func pictureLayout(sps: [UInt8]) -> (chromaFormat: Int, bitDepth: Int)? {
        guard let fields = SequenceParameterSetFields(sps) else { return nil }
        return (Int(fields.chromaFormat), 8 + Int(fields.bitDepthLumaMinus8))
    }

    /// The sample range an SPS's video usability information states (`video_full_range_flag`).
    package enum SignalRange: Sendable {
        case limited, full
        /// No video usability information, or no video signal type in it.
        case unstated
    }

    /// The sample range an SPS states; nil when the SPS cannot be read that far.
    package static func signalRange(sps: [UInt8]) -> SignalRange? {
        SequenceParameterSetFields(sps)?.signalRange
    }

    /// The SPS NAL units of an `avcC` record (AVCDecoderConfigurationRecord); empty when it is not one.
    package static func sequenceParameterSets(avcC record: [UInt8]) -> [[UInt8]] {
        guard record.count >= 6, record[0] == 1 else { return [] }
        var units: [[UInt8]] = []
        var offset = 6
        for _ in 0..<Int(record[5] & 0x1F) {
            guard offset + 2 <= record.count else { return [] }
            let length = Int(record[offset]) << 8 | Int(record[offset + 1])
            guard length > 0, offset + 2 + length <= record.count else { return [] }
            units.append(Array(record[offset + 2..<offset + 2 + length]))
            offset += 2 + length
        }
        return units
    }

    /// Profiles whose `avcC` carries the chroma format and bit depth extension.
    private static let highProfiles: Set<UInt8> = [100, 110, 122, 144]

    /// An `'avc1'` format description of `width` × `height` pictures whose `avcC` holds these parameter sets, as
    /// Apple's `CMVideoFormatDescriptionCreateFromH264ParameterSets` makes (which reads the size from the SPS; here
    /// the caller knows it from the device format).
    package static func formatDescription(
        sps: [[UInt8]], pps: [[UInt8]], width: Int, height: Int
    )
        -> CMFormatDescription?
    {
        guard let record = avcC(sps: sps, pps: pps) else { return nil }
        return try? CMFormatDescription(
            videoCodecType: .h264, width: width, height: height,
            extensions: [kCMFormatDescriptionExtension_SampleDescriptionExtensionAtoms: ["avcC": record]])
    }

    /// Whether a format description's H.264 samples are AVCC (it carries an `avcC` atom) rather than Annex B.
    package static func isAVCC(_ description: CMFormatDescription) -> Bool {
        (description.extensions[kCMFormatDescriptionExtension_SampleDescriptionExtensionAtoms] as? [String: Any])?[
            "avcC"] != nil
    }
}

/// The first fields of an H.264 sequence parameter set (ITU-T H.264 §7.3.2.1.1), as far as `avcC` needs them.
private struct SequenceParameterSetFields {
    var chromaFormat: UInt8 = 1
    var bitDepthLumaMinus8: UInt8 = 0
    var bitDepthChromaMinus8: UInt8 = 0
    /// `video_full_range_flag`; nil when the SPS ends (or is damaged) before it.
    var signalRange: H264Bitstream.SignalRange?

    init?(_ unit: [UInt8]) {
        var reader = ExpGolombReader(rbsp: Self.rbsp(unit.dropFirst()))
        guard let profile = reader.bits(8), reader.bits(16) != nil, reader.unsigned() != nil else { return nil }
        if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profile) {
            guard let chroma = reader.unsigned(), chroma <= 3 else { return nil }
            if chroma == 3 { _ = reader.bits(1) }
            guard let luma = reader.unsigned(), let chromaDepth = reader.unsigned(), luma <= 6, chromaDepth <= 6 else {
                return nil
            }
            chromaFormat = UInt8(chroma)
            bitDepthLumaMinus8 = UInt8(luma)
            bitDepthChromaMinus8 = UInt8(chromaDepth)
            guard reader.bits(1) != nil, let scalingMatrix = reader.bits(1) else { return }
            if scalingMatrix == 1 {
                for list in 0..<(chroma == 3 ? 12 : 8) {
                    guard let present = reader.bits(1) else { return }
                    if present == 1 && !reader.skipScalingList(size: list < 6 ? 16 : 64) { return }
                }
            }
        }
        signalRange = Self.signalRange(afterChroma: &reader)
    }

    /// Reads on from `log2_max_frame_num_minus4` (§7.3.2.1.1) to the VUI's `video_full_range_flag` (§E.1.1).
    private static func signalRange(afterChroma reader: inout ExpGolombReader) -> H264Bitstream.SignalRange? {
        guard reader.unsigned() != nil, let pictureOrderType = reader.unsigned() else { return nil }
        switch pictureOrderType {
        case 0:
            guard reader.unsigned() != nil else { return nil }
        case 1:
            guard reader.bits(1) != nil, reader.signed() != nil, reader.signed() != nil,
                let cycle = reader.unsigned(), cycle <= 255
            else { return nil }
            for _ in 0..<cycle where reader.signed() == nil { return nil }
        default:
            break
        }
        // max_num_ref_frames, gaps, width, height in macroblocks, frame_mbs_only.
        guard reader.unsigned() != nil, reader.bits(1) != nil, reader.unsigned() != nil, reader.unsigned() != nil,
            let frameMacroblocksOnly = reader.bits(1)
        else { return nil }
        if frameMacroblocksOnly == 0 && reader.bits(1) == nil { return nil }
        guard reader.bits(1) != nil, let cropping = reader.bits(1) else { return nil }
        if cropping == 1 {
            for _ in 0..<4 where reader.unsigned() == nil { return nil }
        }
        guard let usability = reader.bits(1) else { return nil }
        guard usability == 1 else { return .unstated }
        guard let aspectRatio = reader.bits(1) else { return nil }
        if aspectRatio == 1 {
            guard let indicator = reader.bits(8) else { return nil }
            if indicator == 255 && reader.bits(32) == nil { return nil }  // Extended_SAR: sar_width, sar_height
        }
        guard let overscan = reader.bits(1) else { return nil }
        if overscan == 1 && reader.bits(1) == nil { return nil }
        guard let signalType = reader.bits(1) else { return nil }
        guard signalType == 1 else { return .unstated }
        guard reader.bits(3) != nil, let flag = reader.bits(1) else { return nil }
        return flag == 1 ? .full : .limited
    }

    /// The payload with emulation prevention bytes (`00 00 03`) removed.
    private static func rbsp(_ payload: ArraySlice<UInt8>) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(payload.count)
        var zeros = 0
        for byte in payload {
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            result.append(byte)
        }
        return result
    }
}

/// Reads bits and unsigned Exp-Golomb codes (`ue(v)`, ITU-T H.264 §9.1) from a raw byte sequence payload.
private struct ExpGolombReader {
    let bytes: [UInt8]
    var position = 0

    init(rbsp: [UInt8]) { bytes = rbsp }

    mutating func bits(_ count: Int) -> UInt32? {
        var value: UInt32 = 0
        for _ in 0..<count {
            guard position < bytes.count * 8 else { return nil }
            let bit = (bytes[position / 8] >> (7 - UInt8(position % 8))) & 1
            value = value << 1 | UInt32(bit)
            position += 1
        }
        return value
    }

    /// A signed Exp-Golomb code (`se(v)`, §9.1.1).
    mutating func signed() -> Int64? {
        guard let code = unsigned() else { return nil }
        return code % 2 == 1 ? Int64(code / 2) + 1 : -Int64(code / 2)
    }

    /// Skips a `scaling_list` of `size` entries (§7.3.2.1.1.1): delta-coded until a delta makes the next scale 0.
    mutating func skipScalingList(size: Int) -> Bool {
        var last: Int64 = 8
        var next: Int64 = 8
        for _ in 0..<size where next != 0 {
            guard let delta = signed() else { return false }
            next = (last + delta + 256) % 256
            last = next == 0 ? last : next
        }
        return true
    }

    mutating func unsigned() -> UInt32? {
        var zeros = 0
        while true {
            guard let bit = bits(1) else { return nil }
            if bit == 1 { break }
            zeros += 1
            if zeros > 31 { return nil }
        }
        guard let rest = bits(zeros) else { return nil }
        return (1 << zeros) - 1 + rest
    }
}
