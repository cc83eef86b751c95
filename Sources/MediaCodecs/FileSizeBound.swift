// FileSizeBound: the most bytes a file the Muxer writes can occupy, kept up to date packet by packet.

import OpenCoreMedia

/// An upper bound on the size of a file ``Muxer`` writes, in both of its forms: the fragmented movie on disk while
/// recording (with its `mfra` once finished) and the conventional fast-start movie that replaces it, or the audio
/// file written directly. A recording that must stay under a size asks it before each packet and stops at the
/// last packet that fits, so the limit holds whatever the bit rate and whatever libavformat still holds in memory.
///
/// The bound is the media bytes plus what each form adds, each part counted from what was written:
/// - per sample, 24 bytes: `stsz` (4), `stco`/`co64` and `stsc` when every sample is a chunk of its own (8 + 12),
///   which covers a fragment's `trun` entry (at most 16: size, duration, flags, composition offset);
/// - per change of a stream's sample duration or composition offset, 8 bytes (an `stts` or `ctts` entry);
/// - per key frame, 4 bytes (`stss`);
/// - per fragment (fragmented movies), ``bytesPerFragment(streams:)``: `moof`, `mfhd`, each track's `traf` with
///   its `tfhd`, `tfdt` and `trun` header, the `mdat` header, and the fragment's `tfra` entries in the `mfra`;
/// - once, ``fixedBytes``: `ftyp`, the movie and track headers with their sample descriptions (the codec's
///   extradata), edit lists, `mvex`, the metadata (counted twice: QuickTime `mdta` items and user data atoms), the
///   `mfra` and `mfro` headers.
/// `MuxerSizeBoundTests` checks it against finished and crashed files over many bit rates and lengths.
///
/// Threading: a value; not shared.
struct FileSizeBound {
    /// Bytes per sample: see the type's documentation.
    static let bytesPerSample = 24
    /// Bytes per change of duration or composition offset, and per key frame.
    static let bytesPerTimingChange = 8
    static let bytesPerKeyFrame = 4
    /// A fragment's boxes besides its media, for `streams` tracks.
    static func bytesPerFragment(streams: Int) -> Int { 64 + 160 * streams }

    private struct Stream {
        var extradataBytes: Int
        var lastDuration: CMTime = .invalid
        var lastOffset: CMTime = .invalid
    }

    private var streams: [Stream] = []
    private var metadataBytes = 0
    private var isFragmented = false
    /// Media, per-sample and per-change bytes counted so far.
    private var variableBytes = 0
    /// The media alone, of those.
    private var mediaBytes = 0
    /// Fragments cut so far.
    private var fragmentsCut = 0

    /// The parts of the file that do not grow with the media.
    var fixedBytes: Int {
        2048 + streams.reduce(0) { $0 + 1024 + $1.extradataBytes } + 2 * metadataBytes
    }

    /// The bound for what was written so far: every fragment cut, and the one being filled.
    var bytes: Int {
        fixedBytes + variableBytes
            + (isFragmented ? (fragmentsCut + 1) * Self.bytesPerFragment(streams: streams.count) : 0)
    }

    /// The bound less the media and the fragments: the most the conventional movie's boxes other than its media
    /// can take (`ftyp`, `moov`, the `mdat` header). The rewrite reserves this much for its `moov` at the front.
    var indexBytes: Int { fixedBytes + variableBytes - mediaBytes }

    mutating func addStream(extradataBytes: Int) { streams.append(Stream(extradataBytes: extradataBytes)) }

    mutating func setMetadata(_ metadata: [(key: String, value: String)], fragmented: Bool) {
        metadataBytes = metadata.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 48 }
        isFragmented = fragmented
    }

    /// What writing `packet` to `stream` adds, the fragment it may begin included (counted whether or not it does:
    /// the bound only has to be above the file).
    func growth(writing packet: EncodedPacket, stream: Int) -> Int {
        guard streams.indices.contains(stream) else { return packet.data.dataLength }
        return sampleBytes(packet, streams[stream])
            + (isFragmented ? Self.bytesPerFragment(streams: streams.count) : 0)
    }

    mutating func add(_ packet: EncodedPacket, stream: Int) {
        guard streams.indices.contains(stream) else { return }
        variableBytes += sampleBytes(packet, streams[stream])
        mediaBytes += packet.data.dataLength
        streams[stream].lastDuration = packet.duration
        streams[stream].lastOffset = Self.compositionOffset(packet)
    }

    mutating func fragmentWasCut() { fragmentsCut += 1 }

    private func sampleBytes(_ packet: EncodedPacket, _ stream: Stream) -> Int {
        var bytes = packet.data.dataLength + Self.bytesPerSample
        if packet.duration != stream.lastDuration { bytes += Self.bytesPerTimingChange }
        if Self.compositionOffset(packet) != stream.lastOffset { bytes += Self.bytesPerTimingChange }
        if packet.isKeyFrame { bytes += Self.bytesPerKeyFrame }
        return bytes
    }

    private static func compositionOffset(_ packet: EncodedPacket) -> CMTime {
        packet.decodeTime.isNumeric && packet.presentationTime.isNumeric
            ? packet.presentationTime - packet.decodeTime : .zero
    }
}
