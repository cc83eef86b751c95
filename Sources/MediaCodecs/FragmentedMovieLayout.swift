// FragmentedMovieLayout: where a finished fragmented movie's samples are, read from its boxes alone (ISO/IEC
// 14496-12: `moov` → `trak` → `tkhd`, `mdhd`, `elst`; `mvex` → `trex`; `moof` → `traf` → `tfhd`, `tfdt`, `trun`),
// so the movie can be indexed where it lies (Muxer+FinalizeInPlace.swift) without reading a byte of its media.

/// Big-endian fields of a box held in memory.
struct BoxBytes {
    let bytes: [UInt8]

    func u32(_ at: Int) -> UInt32? {
        guard at >= 0, at + 4 <= bytes.count else { return nil }
        return bytes[at..<at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    func u64(_ at: Int) -> UInt64? {
        guard let high = u32(at), let low = u32(at + 4) else { return nil }
        return UInt64(high) << 32 | UInt64(low)
    }

    /// `value`'s four bytes, most significant first, as a box field stores it.
    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    /// The boxes directly inside `range`: type, start of the box, range of its contents; nil when one runs past it.
    func children(in range: Range<Int>) -> [(type: String, start: Int, contents: Range<Int>)]? {
        var found: [(type: String, start: Int, contents: Range<Int>)] = []
        var start = range.lowerBound
        while start + 8 <= range.upperBound {
            guard var length = u32(start).map(Int.init) else { return nil }
            var header = 8
            if length == 1 {
                guard let large = u64(start + 8), large <= UInt64(Int.max) else { return nil }
                length = Int(large)
                header = 16
            } else if length == 0 {
                length = range.upperBound - start
            }
            guard length >= header, start + length <= range.upperBound else { return nil }
            let type = String(decoding: bytes[start + 4..<start + 8], as: UTF8.self)
            found.append((type, start, start + header..<start + length))
            start += length
        }
        return found
    }

    /// The first child of `range` of type `type`.
    func child(_ type: String, in range: Range<Int>) -> Range<Int>? {
        children(in: range)?.first { $0.type == type }?.contents
    }
}

/// The tracks and fragments of a fragmented movie as ``Muxer`` writes it (`empty_moov`, `delay_moov`): a `moov`
/// without samples, then `moof`/`mdat` pairs, then perhaps an `mfra`. Anything else (samples in the `moov`, an edit
/// list of more than one edit, a box of another kind at the top) is not this layout, and ``read(_:while:)`` says so
/// with nil.
///
/// Threading: a value; not shared.
struct FragmentedMovieLayout {
    /// A track: its ID, its media timescale, what the demuxer subtracts from its decode times (the edit list's media
    /// time less its leading empty edit, as FFmpeg's `mov` demuxer computes `time_offset`), and its `trex` defaults.
    struct Track {
        var id: UInt32
        var timescale: Int32
        var timeOffset: Int64
        var defaultDuration: UInt32 = 0
        var defaultSize: UInt32 = 0
        var defaultFlags: UInt32 = 0
    }

    /// One sample: its track's index, where its bytes are, and its times in the track's timescale (the edit list
    /// applied, as a demuxer hands them out).
    struct Sample {
        var track: Int
        var offset: Int64
        var size: Int
        var decodeTime: Int64
        var presentationTime: Int64
        var duration: Int64
        var isSync: Bool
    }

    /// The `moov` box at the front (whole, header included).
    var movie: ISOBox
    /// The `moof` boxes, in file order.
    var fragments: [ISOBox]
    var tracks: [Track]

    /// Reads the layout of `file`; nil when it is not one ``Muxer`` writes.
    static func read(_ file: ISOBoxFile, while operation: String) throws(MediaCodecsError) -> FragmentedMovieLayout? {
        let top = try file.children(in: 0..<file.size, while: operation)
        let allowed: Set<String> = ["ftyp", "moov", "moof", "mdat", "mfra", "free", "skip", "wide"]
        guard top.allSatisfy({ allowed.contains($0.type) }),
            let movieIndex = top.firstIndex(where: { $0.type == "moov" }),
            top.filter({ $0.type == "moov" }).count == 1,
            !top[..<movieIndex].contains(where: { $0.type == "moof" || $0.type == "mdat" })
        else { return nil }
        let movie = top[movieIndex]
        let length = Int(movie.contents.upperBound - movie.contents.lowerBound)
        let bytes = BoxBytes(bytes: try file.read(at: movie.contents.lowerBound, count: length, while: operation))
        guard let tracks = Self.tracks(in: bytes) else { return nil }
        return FragmentedMovieLayout(movie: movie, fragments: top.filter { $0.type == "moof" }, tracks: tracks)
    }

    /// The tracks of a `moov`'s contents, in order; nil when one has samples or an edit list this cannot apply.
    private static func tracks(in movie: BoxBytes) -> [Track]? {
        let all = 0..<movie.bytes.count
        guard let boxes = movie.children(in: all), let header = movie.child("mvhd", in: all),
            let version = movie.bytes[safe: header.lowerBound],
            let movieTimescale = movie.u32(header.lowerBound + (version == 1 ? 20 : 12)), movieTimescale > 0
        else { return nil }
        var tracks: [Track] = []
        for trak in boxes where trak.type == "trak" {
            guard let trackHeader = movie.child("tkhd", in: trak.contents),
                let trackVersion = movie.bytes[safe: trackHeader.lowerBound],
                let id = movie.u32(trackHeader.lowerBound + (trackVersion == 1 ? 20 : 12)),
                let media = movie.child("mdia", in: trak.contents),
                let mediaHeader = movie.child("mdhd", in: media),
                let mediaVersion = movie.bytes[safe: mediaHeader.lowerBound],
                let timescale = movie.u32(mediaHeader.lowerBound + (mediaVersion == 1 ? 20 : 12)),
                timescale > 0, timescale <= UInt32(Int32.max),
                let information = movie.child("minf", in: media),
                let table = movie.child("stbl", in: information),
                let sizes = movie.child("stsz", in: table), movie.u32(sizes.lowerBound + 8) == 0
            else { return nil }
            guard let offset = timeOffset(of: movie, track: trak.contents, trackTimescale: timescale, movieTimescale)
            else { return nil }
            tracks.append(Track(id: id, timescale: Int32(timescale), timeOffset: offset))
        }
        guard !tracks.isEmpty, let extends = movie.child("mvex", in: all), let entries = movie.children(in: extends)
        else { return nil }
        for entry in entries where entry.type == "trex" {
            let at = entry.contents.lowerBound
            guard let id = movie.u32(at + 4), let index = tracks.firstIndex(where: { $0.id == id }),
                let duration = movie.u32(at + 12), let size = movie.u32(at + 16), let flags = movie.u32(at + 20)
            else { return nil }
            tracks[index].defaultDuration = duration
            tracks[index].defaultSize = size
            tracks[index].defaultFlags = flags
        }
        return tracks
    }

    /// What FFmpeg's demuxer subtracts from a track's decode times: an edit list of one edit, perhaps after an
    /// empty one, starts the media at its media time and the presentation after the empty edit. Nil for others.
    private static func timeOffset(
        of movie: BoxBytes, track: Range<Int>, trackTimescale: UInt32, _ movieTimescale: UInt32
    ) -> Int64? {
        guard let edits = movie.child("edts", in: track) else { return 0 }
        guard let list = movie.child("elst", in: edits), let version = movie.bytes[safe: list.lowerBound],
            let count = movie.u32(list.lowerBound + 4)
        else { return nil }
        let entrySize = version == 1 ? 20 : 12
        var empty: Int64 = 0
        var start: Int64 = 0
        var startIndex = 0
        for index in 0..<Int(count) {
            let at = list.lowerBound + 8 + index * entrySize
            let duration = version == 1 ? movie.u64(at) : movie.u32(at).map(UInt64.init)
            let time =
                version == 1
                ? movie.u64(at + 8).map { Int64(bitPattern: $0) }
                : movie.u32(at + 4).map { Int64(Int32(bitPattern: $0)) }
            guard let duration, let time
            else { return nil }
            if index == 0, time == -1 {
                empty = Int64(clamping: duration)
                startIndex = 1
            } else if index == startIndex, time >= 0 {
                start = time
            } else {
                return nil
            }
        }
        let emptyInTrack = empty == 0 ? 0 : empty * Int64(trackTimescale) / Int64(movieTimescale)
        return start - emptyInTrack
    }

    /// The samples of the fragment `moof`, in file order. `nextDecodeTimes` carries each track's decode time on to
    /// the next fragment (used where a `traf` has no `tfdt`). Nil when a `traf` names an unknown track.
    func samples(
        in moof: ISOBox, of file: ISOBoxFile, nextDecodeTimes: inout [Int64], while operation: String
    ) throws(MediaCodecsError) -> [Sample]? {
        let length = Int(moof.contents.upperBound - moof.contents.lowerBound)
        let box = BoxBytes(bytes: try file.read(at: moof.contents.lowerBound, count: length, while: operation))
        guard let children = box.children(in: 0..<length) else { return nil }
        var samples: [Sample] = []
        // Without a base data offset, a `traf`'s data follows the previous one's (the first's: the `moof`'s start).
        var implicitBase = moof.start
        for traf in children where traf.type == "traf" {
            guard let fields = box.children(in: traf.contents), let header = fields.first(where: { $0.type == "tfhd" })
            else { return nil }
            let at = header.contents.lowerBound
            guard let flags = box.u32(at).map({ $0 & 0xFF_FFFF }), let id = box.u32(at + 4),
                let track = tracks.firstIndex(where: { $0.id == id })
            else { return nil }
            var cursor = at + 8
            var base = flags & 0x02_0000 != 0 ? moof.start : implicitBase
            func next32() -> UInt32? {
                defer { cursor += 4 }
                return box.u32(cursor)
            }
            if flags & 0x01 != 0 {
                guard let explicit = box.u64(cursor) else { return nil }
                base = Int64(bitPattern: explicit)
                cursor += 8
            }
            if flags & 0x02 != 0 { guard next32() != nil else { return nil } }
            var defaults = (
                duration: tracks[track].defaultDuration, size: tracks[track].defaultSize,
                flags: tracks[track].defaultFlags
            )
            if flags & 0x08 != 0 { guard let value = next32() else { return nil }; defaults.duration = value }
            if flags & 0x10 != 0 { guard let value = next32() else { return nil }; defaults.size = value }
            if flags & 0x20 != 0 { guard let value = next32() else { return nil }; defaults.flags = value }
            if let decodeTime = fields.first(where: { $0.type == "tfdt" }) {
                let start = decodeTime.contents.lowerBound
                let value = box.bytes[safe: start] == 1 ? box.u64(start + 4) : box.u32(start + 4).map(UInt64.init)
                guard let time = value else { return nil }
                nextDecodeTimes[track] = Int64(bitPattern: time)
            }
            var dataEnd = base
            for run in fields where run.type == "trun" {
                guard
                    let runSamples = samplesOfRun(
                        box, run.contents, track: track, base: base, continuingAt: dataEnd, defaults: defaults,
                        decodeTime: &nextDecodeTimes[track])
                else { return nil }
                samples += runSamples
                if let last = runSamples.last { dataEnd = last.offset + Int64(last.size) }
            }
            implicitBase = dataEnd
        }
        return samples
    }

    /// The samples of one `trun`: its data starts at `base` plus its data offset, or where the previous run's ended.
    private func samplesOfRun(
        _ box: BoxBytes, _ run: Range<Int>, track: Int, base: Int64, continuingAt previousEnd: Int64,
        defaults: (duration: UInt32, size: UInt32, flags: UInt32), decodeTime: inout Int64
    ) -> [Sample]? {
        guard let versionAndFlags = box.u32(run.lowerBound), let count = box.u32(run.lowerBound + 4) else {
            return nil
        }
        let version = versionAndFlags >> 24
        let flags = versionAndFlags & 0xFF_FFFF
        var cursor = run.lowerBound + 8
        var offset = previousEnd
        if flags & 0x01 != 0 {
            guard let relative = box.u32(cursor) else { return nil }
            offset = base + Int64(Int32(bitPattern: relative))
            cursor += 4
        }
        var firstFlags: UInt32?
        if flags & 0x04 != 0 {
            guard let value = box.u32(cursor) else { return nil }
            firstFlags = value
            cursor += 4
        }
        let perSample = [0x100, 0x200, 0x400, 0x800].filter { flags & UInt32($0) != 0 }.count * 4
        guard cursor + Int(count) * perSample <= run.upperBound else { return nil }
        let timeOffset = tracks[track].timeOffset
        var samples: [Sample] = []
        samples.reserveCapacity(Int(count))
        for index in 0..<Int(count) {
            func field(_ flag: UInt32) -> UInt32? {
                guard flags & flag != 0 else { return nil }
                defer { cursor += 4 }
                return box.u32(cursor)
            }
            let duration = field(0x100) ?? defaults.duration
            let size = field(0x200) ?? defaults.size
            let sampleFlags = field(0x400) ?? (index == 0 ? firstFlags : nil) ?? defaults.flags
            let composition = field(0x800).map { version == 0 ? Int64($0) : Int64(Int32(bitPattern: $0)) } ?? 0
            let decode = decodeTime - timeOffset
            samples.append(
                Sample(
                    track: track, offset: offset, size: Int(size), decodeTime: decode,
                    presentationTime: decode + composition, duration: Int64(duration),
                    isSync: sampleFlags & 0x1_0000 == 0))
            offset += Int64(size)
            decodeTime += Int64(duration)
        }
        return samples
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
