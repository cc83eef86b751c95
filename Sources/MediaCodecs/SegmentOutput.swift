// SegmentOutput: a muxer's bytes caught in memory through a custom AVIOContext and handed on as fragmented MPEG-4
// segments (an initialization segment, then one moof+mdat per segment), for AVAssetWriter's segment delegate.

import CFFmpeg
import Foundation
import OpenCoreMedia

/// Where a segmenting ``Muxer`` writes: an `AVIOContext` (`avio_alloc_context`, no seek callback, so libavformat
/// writes strictly forward) whose write callback appends to memory, and a delivery closure that receives each
/// segment once the muxer has ended it (`av_write_frame(ctx, NULL)` with `frag_custom`, then `avio_flush`).
///
/// The muxer writes the header with `movflags=frag_custom+empty_moov+default_base_moof+skip_trailer+frag_discont`
/// (and `+cmaf` for ``Profile/cmaf``; `frag_discont` and `avoid_negative_ts=make_non_negative` keep the samples'
/// own times in the `tfdt` boxes, where libavformat would start them at 0): `ftyp`+`moov` is the initialization segment; each fragment is `moof`+`mdat`, so a segment's
/// offsets (`default_base_moof`) count from its own first byte. Segments are cut at the first video key frame at or
/// after the next boundary `initialStart + k × interval` (any packet of an audio-only output), or only on
/// ``Muxer/cutSegment()`` when ``interval`` is nil.
///
/// Threading: thread-bound, as its muxer (the writer's queue). Not `Sendable`.
package final class SegmentOutput {
    /// The brands and structure asked for.
    package enum Profile: Sendable {
        /// Fragmented MPEG-4 for HTTP Live Streaming: libavformat's brands for fragments (`iso5`, `iso6`, `mp41`).
        case appleHLS
        /// CMAF: `movflags=+cmaf`, whose `ftyp` lists `cmfc` (major brand `iso6`).
        case cmaf
    }

    /// One segment as delivered.
    package struct Segment: Sendable {
        package var data: Data
        /// The `ftyp`+`moov` that every media segment needs before it.
        package var isInitialization: Bool
        /// Per track with samples in a media segment, in stream order; empty for the initialization segment.
        package var tracks: [TrackSummary]
    }

    /// What one track put into a media segment.
    package struct TrackSummary: Sendable {
        /// The track's ID in the movie (libavformat numbers tracks from 1 in stream order).
        package var trackID: Int32
        package var isVideo: Bool
        /// The earliest presentation time of its samples (source time).
        package var earliestPresentationTime: CMTime
        /// From the earliest presentation time to the latest sample's end.
        package var duration: CMTime
        /// The first video sample: its time, where its bytes are in the segment (from the `moof`'s `trun`), and
        /// whether it is a sync sample. Nil for audio tracks.
        package var firstSample: FirstSample?
    }

    /// The first sample of a video track in a segment.
    package struct FirstSample: Sendable {
        package var presentationTime: CMTime
        package var offset: Int
        package var length: Int
        package var isSync: Bool
    }

    package let profile: Profile
    /// The preferred segment length; nil: segments end only when asked (`kCMTimeIndefinite`).
    package let interval: CMTime?
    /// Where segment boundaries are counted from (source time); invalid: from the first packet written.
    package private(set) var initialStart: CMTime
    private let deliver: (Segment) -> Void
    private(set) var io: UnsafeMutablePointer<AVIOContext>?
    /// The bytes written since the last delivery.
    fileprivate var pending = Data()
    /// Per stream: whether it is video, and what it wrote into the segment being filled.
    private var streams: [Int: (isVideo: Bool, earliest: CMTime, end: CMTime, first: (CMTime, Bool)?)] = [:]
    /// Whether the next video packet begins a segment (and so must be a key frame).
    private(set) var awaitingSegmentStart = true

    package init(profile: Profile, interval: CMTime?, initialStart: CMTime, deliver: @escaping (Segment) -> Void) {
        self.profile = profile
        self.interval = interval
        self.initialStart = initialStart
        self.deliver = deliver
    }

    deinit {
        if let io {
            var buffer: UnsafeMutablePointer<UInt8>? = io.pointee.buffer
            av_freep(&buffer)
            var context: UnsafeMutablePointer<AVIOContext>? = io
            avio_context_free(&context)
        }
    }

    /// The `movflags` a segmenting muxer writes with.
    var movieFlags: [String] {
        ["frag_custom", "empty_moov", "default_base_moof", "skip_trailer", "frag_discont"]
            + (profile == .cmaf ? ["cmaf"] : [])
    }

    /// Makes the AVIO context the muxer writes into (`avio_alloc_context`, 64 KiB buffer).
    func makeIOContext() throws(MediaCodecsError) -> UnsafeMutablePointer<AVIOContext> {
        if let io { return io }
        let size: Int32 = 64 << 10
        guard let buffer = av_malloc(Int(size))?.assumingMemoryBound(to: UInt8.self) else {
            throw MediaCodecsError(.allocationFailed, while: "making the segment output", message: "av_malloc failed")
        }
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        guard let created = avio_alloc_context(buffer, size, 1, opaque, nil, segmentOutputWrite, nil) else {
            av_free(buffer)
            throw MediaCodecsError(
                .allocationFailed, while: "making the segment output", message: "avio_alloc_context failed")
        }
        io = created
        return created
    }

    /// Whether a segment that began at `segmentStart` should end before a packet (that may begin one) at `time`.
    func boundaryPassed(at time: CMTime, segmentStart: CMTime) -> Bool {
        guard let interval else { return false }
        if !initialStart.isNumeric { initialStart = segmentStart }
        let passed = max(0, ((segmentStart - initialStart).seconds / interval.seconds).rounded(.down))
        return time >= initialStart + CMTimeMultiplyByFloat64(interval, multiplier: passed + 1)
    }

    /// Notes a packet written to `stream` at `time` (source time) lasting `duration`.
    func note(stream: Int, isVideo: Bool, time: CMTime, duration: CMTime, isKeyFrame: Bool) throws(MediaCodecsError) {
        if isVideo, awaitingSegmentStart {
            guard isKeyFrame else {
                throw MediaCodecsError(
                    .segmentStartedWithNonSyncSample, while: "starting a segment",
                    message: "the segment's first video sample (at \(time.seconds) s) is not a key frame")
            }
            awaitingSegmentStart = false
        }
        if !initialStart.isNumeric, interval != nil { initialStart = time }
        let end = duration.isNumeric ? time + duration : time
        if var entry = streams[stream], entry.earliest.isNumeric {
            entry.earliest = min(entry.earliest, time)
            entry.end = max(entry.end, end)
            streams[stream] = entry
        } else {
            streams[stream] = (isVideo, time, end, isVideo ? (time, isKeyFrame) : nil)
        }
    }

    /// Hands on what the header wrote: the initialization segment.
    func deliverInitialization() {
        avio_flush(io)
        deliver(Segment(data: take(), isInitialization: true, tracks: []))
    }

    /// Hands on the fragment just ended, with what each track put in it; nothing when it holds no bytes.
    func deliverSegment() {
        avio_flush(io)
        let data = take()
        awaitingSegmentStart = true
        let noted = streams
        streams = [:]
        guard !data.isEmpty else { return }
        let runs = SegmentBoxes.firstSampleRuns(in: data)
        let tracks = noted.keys.sorted().compactMap { stream -> TrackSummary? in
            guard let entry = noted[stream], entry.earliest.isNumeric else { return nil }
            let trackID = Int32(stream + 1)
            var first: FirstSample?
            if let (time, isSync) = entry.first, let run = runs[trackID] {
                first = FirstSample(presentationTime: time, offset: run.offset, length: run.length, isSync: isSync)
            }
            return TrackSummary(
                trackID: trackID, isVideo: entry.isVideo, earliestPresentationTime: entry.earliest,
                duration: entry.end - entry.earliest, firstSample: first)
        }
        deliver(Segment(data: data, isInitialization: false, tracks: tracks))
    }

    private func take() -> Data {
        defer { pending = Data() }
        return pending
    }
}

/// The AVIO write callback: appends to the output's pending bytes.
private func segmentOutputWrite(_ opaque: UnsafeMutableRawPointer?, _ bytes: UnsafeMutablePointer<UInt8>?, _ count: Int32)
    -> Int32
{
    guard let opaque, let bytes, count > 0 else { return 0 }
    Unmanaged<SegmentOutput>.fromOpaque(opaque).takeUnretainedValue().pending.append(bytes, count: Int(count))
    return count
}

/// Reads a media segment's boxes: per track, where its first sample's bytes are (ISO/IEC 14496-12: `moof` →
/// `traf` → `tfhd` track ID and default sample size, `trun` data offset and first sample size).
enum SegmentBoxes {
    static func firstSampleRuns(in data: Data) -> [Int32: (offset: Int, length: Int)] {
        let bytes = [UInt8](data)
        var runs: [Int32: (offset: Int, length: Int)] = [:]
        for moof in boxes(bytes, in: 0..<bytes.count) where moof.type == "moof" {
            for traf in boxes(bytes, in: moof.body) where traf.type == "traf" {
                var trackID: Int32 = 0
                var defaultSize = 0
                for box in boxes(bytes, in: traf.body) {
                    let flags = Int(word(bytes, box.body.lowerBound)) & 0xFF_FFFF
                    if box.type == "tfhd" {
                        trackID = Int32(bitPattern: word(bytes, box.body.lowerBound + 4))
                        // base data offset (8 bytes), sample description index, default duration: then the size.
                        var at = box.body.lowerBound + 8
                        if flags & 0x1 != 0 { at += 8 }
                        if flags & 0x2 != 0 { at += 4 }
                        if flags & 0x8 != 0 { at += 4 }
                        if flags & 0x10 != 0 { defaultSize = Int(word(bytes, at)) }
                    } else if box.type == "trun", runs[trackID] == nil, flags & 0x1 != 0 {
                        let offset = moof.start + Int(Int32(bitPattern: word(bytes, box.body.lowerBound + 8)))
                        var at = box.body.lowerBound + 12
                        if flags & 0x4 != 0 { at += 4 }  // first sample flags
                        if flags & 0x100 != 0 { at += 4 }  // sample duration
                        let length = flags & 0x200 != 0 ? Int(word(bytes, at)) : defaultSize
                        runs[trackID] = (offset, length)
                    }
                }
            }
        }
        return runs
    }

    private static func word(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        guard at + 4 <= bytes.count else { return 0 }
        return bytes[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    private static func boxes(_ bytes: [UInt8], in range: Range<Int>) -> [(type: String, start: Int, body: Range<Int>)] {
        var found: [(type: String, start: Int, body: Range<Int>)] = []
        var at = range.lowerBound
        while at + 8 <= range.upperBound {
            let size = Int(word(bytes, at))
            guard size >= 8, at + size <= range.upperBound else { break }
            let type = String(decoding: bytes[at + 4..<at + 8], as: UTF8.self)
            found.append((type, at, at + 8..<at + size))
            at += size
        }
        return found
    }
}
