// Movie fragments under the byte cap: cut early at high bit rates, by the interval at low ones, each starting with a
// key frame; checked by parsing the file's boxes and with ffprobe and ffmpeg.

import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Testing

@testable import MediaCodecs

// MARK: - Helpers

/// A packet handed to the muxer: its stream, decode time, size and whether it is a key frame.
struct WrittenPacket: Sendable {
    var stream: Int
    var time: CMTime
    var size: Int
    var isKeyFrame: Bool
}

/// An NV12 frame of random noise (xorshift seeded with `seed`): as costly to encode as any picture can be, so the
/// encoder spends its whole bit rate and the packets are as large as a camera's at that rate.
func makeNoiseFrame(seed: UInt64, width: Int, height: Int) throws -> CVPixelBuffer {
    let buffer = try makeBuffer(kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, width: width, height: height)
    var state = seed | 1
    buffer.withLockedPlanes { planes in
        for plane in planes {
            let words = plane.bytes.bindMemory(to: UInt64.self)
            for index in words.indices {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                words[index] = state
            }
        }
    }
    return buffer
}

/// Writes `seconds` of 30 fps H.264 noise at `bitRate` (one key frame a second) and AAC into a fragmented movie at
/// `path`. Packet sizes follow the bit rate, not the picture size: 320x240 noise needs more than 10 Mb/s, so at
/// 10 Mb/s the packets are a 1080p30 camera's (about 42 kB a frame, 55 kB a key frame) at a fraction of the cost.
/// Then, unless `finish`, drops the muxer unfinished, as a crash would: the file holds the fragments cut while
/// writing. Calls `afterEachWrite` with the muxer after every packet, and `atEnd` before finishing or dropping it.
/// Returns the packets in the order they were written.
@discardableResult
func writeNoiseMovie(
    to path: String, seconds: Double, bitRate: Int, options: Muxer.Options, width: Int = 320, height: Int = 240,
    fileType: Muxer.FileType = .mov, finish: Bool = false, afterEachWrite: (Muxer) -> Void = { _ in },
    atEnd: (Muxer) throws -> Void = { _ in }
) throws -> [WrittenPacket] {
    var configuration = VideoEncoder.Configuration(codec: .h264, width: width, height: height)
    configuration.averageBitRate = bitRate
    let videoEncoder = try VideoEncoder(configuration)
    let audioEncoder = try AudioEncoder(AudioEncoder.Configuration(codec: .aac))
    var written: [WrittenPacket] = []
    try {
        let muxer = try Muxer(path: path, fileType: fileType, options: options)
        let videoStream = try muxer.addVideoStream(from: videoEncoder)
        let audioStream = try muxer.addAudioStream(from: audioEncoder)
        try muxer.start(atSourceTime: sourceStart)
        func drain(_ receive: () throws -> EncoderOutput, stream: Int) throws {
            while case .packet(let packet) = try receive() {
                try muxer.write(packet, stream: stream)
                written.append(
                    WrittenPacket(
                        stream: stream, time: packet.decodeTime - sourceStart, size: packet.data.dataLength,
                        isKeyFrame: packet.isKeyFrame))
                afterEachWrite(muxer)
            }
        }
        for index in 0..<Int(seconds * 30) {
            let time = sourceStart + CMTime(value: Int64(index), timescale: 30)
            try videoEncoder.send(
                try makeNoiseFrame(seed: UInt64(index + 1) &* 0x9E37_79B9_7F4A_7C15, width: width, height: height),
                presentationTime: time)
            try drain(videoEncoder.receivePacket, stream: videoStream)
            try audioEncoder.send(
                try makeSine(
                    first: index * 1600, count: 1600,
                    at: sourceStart + CMTime(value: Int64(index * 1600), timescale: 48000)))
            try drain(audioEncoder.receivePacket, stream: audioStream)
        }
        try atEnd(muxer)
        if finish { try muxer.finish() }
    }()
    return written
}

/// A top-level box of an ISO/QuickTime file: its type, where it starts and its size (header included).
struct Box {
    var type: String
    var offset: Int
    var size: Int
}

/// The top-level boxes of the file at `path`, in order.
func topLevelBoxes(_ path: String) throws -> [Box] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    var boxes: [Box] = []
    var offset = 0
    while offset + 8 <= data.count {
        var size = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        let type = String(decoding: data[offset + 4..<offset + 8], as: UTF8.self)
        if size == 1, offset + 16 <= data.count {
            size = data[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) }
        } else if size == 0 {
            size = data.count - offset
        }
        guard size >= 8 else { break }
        boxes.append(Box(type: type, offset: offset, size: size))
        offset += size
    }
    return boxes
}

/// One movie fragment of a file: its `moof` and `mdat` boxes.
struct Fragment {
    var moof: Box
    var mdat: Box
    var size: Int { moof.size + mdat.size }
    /// The media bytes: the `mdat`'s payload.
    var mediaBytes: Int { mdat.size - 8 }
    func contains(_ position: Int) -> Bool { position >= mdat.offset && position < mdat.offset + mdat.size }
}

/// The complete fragments (`moof` then `mdat`) of the file at `path`.
func fragments(_ path: String) throws -> [Fragment] {
    let boxes = try topLevelBoxes(path)
    return zip(boxes, boxes.dropFirst()).compactMap { moof, mdat in
        moof.type == "moof" && mdat.type == "mdat" ? Fragment(moof: moof, mdat: mdat) : nil
    }
}

/// A packet as ffprobe reads it back: stream, decode time, file position, size and whether it is flagged key.
struct ProbedPacket {
    var stream: Int
    var time: Double
    var position: Int
    var size: Int
    var isKeyFrame: Bool
}

/// Every packet of the file at `path`, as ffprobe's `-show_packets` gives them.
func probePackets(_ path: String) throws -> [ProbedPacket] {
    let result = try run(
        "ffprobe",
        ["-v", "error", "-show_entries", "packet=stream_index,dts_time,pos,size,flags", "-of", "json", path])
    try #require(result.status == 0, "ffprobe failed: \(result.error)")
    let json = try #require(try JSONSerialization.jsonObject(with: result.output) as? [String: Any])
    let packets = try #require(json["packets"] as? [[String: Any]])
    return packets.compactMap { packet in
        guard let stream = packet["stream_index"] as? Int, let time = Probe.number(packet["dts_time"]),
            let position = (packet["pos"] as? String).flatMap(Int.init),
            let size = (packet["size"] as? String).flatMap(Int.init)
        else { return nil }
        let flags = packet["flags"] as? String ?? ""
        return ProbedPacket(stream: stream, time: time, position: position, size: size, isKeyFrame: flags.contains("K"))
    }
}

/// Whether the H.264 sample at `position` (length-prefixed NAL units, `size` bytes) holds an IDR slice (type 5).
func holdsIDRSlice(_ data: Data, at position: Int, size: Int) -> Bool {
    var offset = position
    while offset + 5 <= position + size {
        let length = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        if data[offset + 4] & 0x1F == 5 { return true }
        offset += 4 + length
    }
    return false
}

/// The largest number of bytes (all streams) written from one video key frame up to the next: one GOP's worth.
func largestGOPBytes(_ packets: [WrittenPacket], videoStream: Int = 0) -> Int {
    var largest = 0
    var current = 0
    for packet in packets {
        if packet.stream == videoStream, packet.isKeyFrame {
            largest = max(largest, current)
            current = 0
        }
        current += packet.size
    }
    return max(largest, current)
}

// MARK: - Tests

@Suite("Movie fragments bounded by the byte cap")
struct FragmentCapTests {
    @Test("At 10 Mb/s a fragment is cut at the first key frame after the cap: cap ≤ media ≤ cap + one GOP, key first")
    func capCutsEarly() throws {
        let path = try scratchPath("capped.mov")
        let cap = 2 << 20
        let written = try writeNoiseMovie(
            to: path, seconds: 8, bitRate: 10_000_000,
            options: Muxer.Options(fragmentInterval: CMTime(value: 10, timescale: 1), maximumFragmentBytes: cap))
        let videoBytes = written.filter { $0.stream == 0 }.reduce(0) { $0 + $1.size }
        let rate = Double(videoBytes * 8) / 8  // bits over 8 s
        #expect(rate > 8_000_000 && rate < 12_000_000, "the video runs at \(rate) b/s, not about 10 Mb/s")
        let gop = largestGOPBytes(written)

        let cut = try fragments(path)
        // Without the cap no fragment would be in the file: the 10 s interval never passed.
        let boxes = try topLevelBoxes(path).map(\.type)
        #expect(cut.count >= 2, "\(cut.count) fragments: \(boxes)")
        for (index, fragment) in cut.enumerated() {
            #expect(fragment.mediaBytes >= cap, "fragment \(index) was cut before the cap: \(fragment.mediaBytes) B")
            #expect(
                fragment.mediaBytes <= cap + gop,
                "fragment \(index) holds \(fragment.mediaBytes) B, more than the cap and one GOP (\(cap + gop) B)")
        }

        let packets = try probePackets(path)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        for (index, fragment) in cut.enumerated() {
            let video = packets.filter { $0.stream == 0 && fragment.contains($0.position) }
            let first = try #require(video.min { $0.position < $1.position }, "fragment \(index) has no video")
            #expect(first.isKeyFrame, "fragment \(index) starts with a packet ffprobe does not flag K")
            #expect(holdsIDRSlice(data, at: first.position, size: first.size), "fragment \(index) starts without IDR")
            let sizes = packets.filter { fragment.contains($0.position) }.reduce(0) { $0 + $1.size }
            #expect(sizes == fragment.mediaBytes, "fragment \(index)'s samples fill its mdat")
        }
        #expect(try decodeErrors(path) == "")
    }

    @Test("At a low bit rate the interval decides: fragments begin at 0, 2, 4, 6 s with a 2 s interval")
    func intervalGovernsLowRates() throws {
        let path = try scratchPath("interval.mov")
        try writeNoiseMovie(
            to: path, seconds: 9, bitRate: 1_000_000,
            options: Muxer.Options(fragmentInterval: CMTime(value: 2, timescale: 1)))
        let cut = try fragments(path)
        let packets = try probePackets(path)
        let starts = cut.compactMap { fragment in
            packets.filter { $0.stream == 0 && fragment.contains($0.position) }.map(\.time).min()
        }
        // The fragment from 8 s on was still in memory when the muxer was dropped.
        #expect(starts == [0, 2, 4, 6], "fragments begin at \(starts) s")
        for fragment in cut { #expect(fragment.mediaBytes < Muxer.Options.defaultMaximumFragmentBytes) }
        #expect(try decodeErrors(path) == "")
    }

    @Test("Audio alone: a fragment is cut at the first packet after the cap, or after the interval")
    func audioOnly() throws {
        let cap = 48 << 10
        for (name, interval) in [("cap", 10), ("interval", 1)] {
            let path = try scratchPath("audio-\(name).m4a")
            var written: [Int] = []
            try {
                let muxer = try Muxer(
                    path: path, fileType: .m4a,
                    options: Muxer.Options(
                        fragmentInterval: CMTime(value: Int64(interval), timescale: 1), maximumFragmentBytes: cap))
                let encoder = try AudioEncoder(AudioEncoder.Configuration(codec: .aac))
                let stream = try muxer.addAudioStream(from: encoder)
                try muxer.start(atSourceTime: sourceStart)
                for index in 0..<8 * 30 {
                    let at = sourceStart + CMTime(value: Int64(index * 1600), timescale: 48000)
                    try encoder.send(try makeSine(first: index * 1600, count: 1600, at: at))
                    while case .packet(let packet) = try encoder.receivePacket() {
                        try muxer.write(packet, stream: stream)
                        written.append(packet.data.dataLength)
                    }
                }
            }()
            let total = written.reduce(0, +)
            let cut = try fragments(path)
            let packets = try probePackets(path)
            let starts = cut.compactMap { fragment in
                packets.filter { fragment.contains($0.position) }.map(\.time).min()
            }
            if name == "cap" {
                // 8 s of AAC is more than two caps but less than one interval.
                try #require(total > 2 * cap, "only \(total) B of audio")
                #expect(
                    cut.count == total / cap || cut.count == total / cap - 1, "\(cut.count) fragments of \(total) B")
                for fragment in cut {
                    #expect(fragment.mediaBytes >= cap && fragment.mediaBytes <= cap + written.max()!)
                }
            } else {
                // Well under the cap: a fragment a second (the packet that reaches 1 s begins the next one).
                #expect(cut.count == 7, "\(cut.count) fragments, beginning at \(starts) s")
                for (start, next) in zip(starts, starts.dropFirst()) {
                    #expect(abs(next - start - 1) < 1024.0 / 48000, "fragments begin at \(starts) s")
                }
            }
            #expect(try decodeErrors(path) == "")
        }
    }

    @Test(
        "Memory: at 10 Mb/s the 4 MiB cap bounds the media the muxer holds to the cap and one GOP; 10 s fragments hold 10 s"
    )
    func heldMediaBounded() throws {
        // The bytes libavformat keeps for the fragment being filled, counted by the muxer, checked against the
        // fragments in the file: each was held whole until its cut. (The resident-set figure is in
        // Benchmarks/Comparisons/WriterMemory.)
        var held: [String: (largest: Int, gop: Int, tenSeconds: Int)] = [:]
        for (name, cap) in [("capped", Muxer.Options.defaultMaximumFragmentBytes), ("uncapped", Int.max)] {
            let path = try scratchPath("held-\(name).mov")
            var largest = 0
            var stillHeld = 0
            let written = try writeNoiseMovie(
                to: path, seconds: 12, bitRate: 10_000_000,
                options: Muxer.Options(fragmentInterval: CMTime(value: 10, timescale: 1), maximumFragmentBytes: cap),
                atEnd: { muxer in
                    largest = muxer.largestHeldMediaBytes
                    stillHeld = muxer.heldMediaBytes
                })
            let onDisk = try fragments(path).map(\.mediaBytes)
            // The file's media can be a few bytes larger than what was given: the muxer rewrites each H.264 NAL
            // unit's Annex B start code as a 4-byte length, and a 3-byte start code grows by one.
            let inFile = max(onDisk.max() ?? 0, stillHeld)
            #expect(
                largest <= inFile && inFile - largest <= 4 * written.count,
                "\(name): the counter says \(largest) B; fragments on disk \(onDisk), \(stillHeld) B still held")
            // Every video packet before 10 s is in the first fragment (audio may follow it into the next).
            let videoTenSeconds = written.filter { $0.stream == 0 && $0.time < CMTime(value: 10, timescale: 1) }
                .reduce(0) { $0 + $1.size }
            held[name] = (largest, largestGOPBytes(written), videoTenSeconds)
        }
        let capped = try #require(held["capped"])
        let uncapped = try #require(held["uncapped"])
        let cap = Muxer.Options.defaultMaximumFragmentBytes
        #expect(capped.largest >= cap && capped.largest <= cap + capped.gop, "capped: \(capped.largest) B held")
        // Without the cap the first fragment is the whole first 10 s: about 12.5 MB at 10 Mb/s.
        #expect(uncapped.largest >= uncapped.tenSeconds, "uncapped: \(uncapped.largest) B held")
        #expect(
            capped.largest + (3 << 20) < uncapped.largest, "capped \(capped.largest) B, uncapped \(uncapped.largest) B")
    }
}

@Suite("The muxer's bound on the finished file's size")
struct MuxerSizeBoundTests {
    @Test(
        "The bound is above the finished file and the fragments on disk, and within 3 % and 8 kB of it",
        arguments: [(500_000, 1.0), (500_000, 6.0), (10_000_000, 0.5), (10_000_000, 4.0), (2_000_000, 2.0)])
    func boundsFinishedFile(bitRate: Int, seconds: Double) throws {
        for interval in [CMTime(value: 1, timescale: 2), CMTime(value: 10, timescale: 1)] {
            let path = try scratchPath("bound-\(bitRate)-\(seconds)-\(interval.seconds).mov")
            var bound = 0
            var largestFragmentsBound = 0
            let options = Muxer.Options(
                fragmentInterval: interval, maximumFragmentBytes: 64 << 10,
                metadata: [(key: "com.apple.quicktime.location.ISO6709", value: "+48.8584+002.2945/")])
            try writeNoiseMovie(
                to: path, seconds: seconds, bitRate: bitRate, options: options, finish: true,
                afterEachWrite: { muxer in
                    // While writing, the fragments on disk never pass the bound either.
                    let onDisk = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                    largestFragmentsBound = max(largestFragmentsBound, onDisk - muxer.finishedSizeBound)
                },
                atEnd: { muxer in bound = muxer.finishedSizeBound })
            let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            #expect(size <= bound, "\(bitRate) b/s, \(seconds) s: the file has \(size) B, the bound says \(bound)")
            #expect(bound - size <= size * 3 / 100 + 8192, "\(bitRate) b/s, \(seconds) s: bound \(bound), file \(size)")
            #expect(largestFragmentsBound <= 0, "the fragments on disk passed the bound by \(largestFragmentsBound) B")
            #expect(try decodeErrors(path) == "")
        }
    }

    @Test("Abandoned after its first fragment, a movie is cut back to its complete fragments; before it, removed")
    func abandonKeepsCompleteFragments() throws {
        let path = try scratchPath("abandoned.mov")
        var left: Muxer.AbandonedFile?
        try writeNoiseMovie(
            to: path, seconds: 2.5, bitRate: 1_000_000,
            options: Muxer.Options(fragmentInterval: CMTime(value: 1, timescale: 1)),
            atEnd: { muxer in left = muxer.abandon() })
        guard case .fragments(let bytes)? = left else {
            Issue.record("abandon() left \(String(describing: left))")
            return
        }
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(Int64(size) == bytes)
        #expect(try fragments(path).count == 2, "the fragments from 0 and 1 s; the one from 2 s was in memory")
        #expect(try decodeErrors(path) == "")

        let early = try scratchPath("abandoned-early.mov")
        try writeNoiseMovie(
            to: early, seconds: 0.5, bitRate: 1_000_000,
            options: Muxer.Options(fragmentInterval: CMTime(value: 1, timescale: 1)),
            atEnd: { muxer in left = muxer.abandon() })
        #expect(left == .removed)
        #expect(!FileManager.default.fileExists(atPath: early))
    }
}
