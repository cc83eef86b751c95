// Muxer: QuickTime, MPEG-4, WAVE, AIFF and CAF files from encoded packets with libavformat, crash-safe movies.

import CFFmpeg
import Foundation
import OpenCoreMedia
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Writes encoded packets into a file with libavformat: QuickTime movies that survive a crash and become
/// conventional fast-start movies when finished cleanly.
///
/// Life cycle: ``init(path:fileType:options:)`` claims the path (`O_CREAT | O_EXCL`, so an existing file is never
/// touched unless ``Options/overwrite``), ``addVideoStream(from:transform:)`` / ``addAudioStream(from:)`` describe
/// the tracks (FFmpeg's codec parameters copied from the encoder's context), ``start(atSourceTime:)`` opens the
/// file and writes the header, ``write(_:stream:)`` interleaves packets (`av_interleaved_write_frame`), and
/// ``finish()`` writes the trailer. A muxer released without ``finish()`` closes the file as it stands (no
/// trailer), exactly what a crash leaves behind.
///
/// Timestamps: like `AVAssetWriter.startSession(atSourceTime:)`, the muxer takes source times (the encoders' packets
/// carry the capture clock's times) and the session start given to ``start(atSourceTime:)``; each packet is
/// written at (its time − session start), exactly (`CMTime` arithmetic, one rounding into the stream's time base).
/// Packets before the start keep their negative times: AAC priming (see ``AudioEncoder``) becomes an edit list and
/// both tracks start at 0 in a player.
///
/// Crash safety (``Options/fragmentInterval``, for `.mov`, `.mp4`, `.m4v`, `.m4a`): the file at `path` is written
/// as a fragmented movie with `movflags=frag_custom+empty_moov+delay_moov+default_base_moof`, and the muxer decides
/// where fragments end. A fragment is cut at the first video key frame once either the interval has passed since
/// the fragment began or the media written into it (all streams) has reached ``Options/maximumFragmentBytes``;
/// audio-only movies are cut at the first packet that meets either limit. So fragments come at least every
/// interval (plus one key frame interval), earlier when a fragment would outgrow the cap, and each begins with a
/// key frame. A cut drains the interleaving queue (`av_interleaved_write_frame(ctx, NULL)`), then ends the fragment
/// (`av_write_frame(ctx, NULL)`, which with `frag_custom` writes the `moof` and `mdat` whole), and is flushed to the
/// kernel at once (`flush_packets=1`; libavformat's avio buffer would otherwise hold the fragment's tail).
/// `delay_moov` writes the initial `moov` at the first cut, when the tracks' start offsets are known, so the AAC
/// priming edit list is in it; that first `av_write_frame(ctx, NULL)` writes only the `moov`, so the first cut
/// calls it twice (as libavformat's own cuts do), and it waits until every track has a packet. A process killed at
/// any instant leaves a file that ffprobe and ffmpeg read up to its last complete fragment: at most one fragment
/// (one interval plus one key frame interval, less at high bit rates) is lost.
///
/// Memory: libavformat keeps the current fragment's media in memory until it is cut (per-track growing buffers,
/// enlarged by 1.5×). The cap bounds it whatever the bit rate: at most the cap plus one key frame interval of media
/// (about 5 MB at the 10 Mb/s of 1080p30 with the default 4 MiB cap, instead of 12.5 MB for 10 s; at 50 Mb/s about
/// 10 MB instead of 60 MB). Below about 3.4 Mb/s (4 MiB in 10 s) the interval governs, as before.
/// ``heldMediaBytes`` and ``largestHeldMediaBytes`` count those bytes.
///
/// Size: ``finishedSizeBound`` is never below the size of the finished file (or of the fragments on disk), and
/// ``finishedSizeBound(afterWriting:stream:)`` tells a writer that must stay under a size whether the next packet
/// fits (see ``FileSizeBound``); a movie finishing on a nearly full volume keeps its fragmented form rather than
/// start a rewrite that would leave less than ``Options/minimumFreeBytesAfterRewrite`` free.
///
/// After a failure, ``abandon()`` keeps only what plays: a fragmented movie cut back to its last complete
/// fragment, or nothing.
///
/// Clean finish: ``finish()`` writes the fragmented trailer (`mfra`). Then, without ``Options/fastStart``, the movie
/// is finished where it lies (``finalizeInPlace()``, Muxer+FinalizeInPlace.swift): a complete `moov` appended, and
/// the fragments made one `mdat` by one header write; no media byte is copied. With it, the file is remuxed with a
/// stream copy (`av_read_frame` → `av_interleaved_write_frame`, timestamps unchanged) into a conventional movie
/// (`moov` first, one `mdat`, no `moof`) in a hidden temporary file beside it, and renamed over `path`
/// (`rename(2)`: atomic, so at every instant `path` holds one of the two complete files). The remux reads and writes
/// the file once: the `moov` goes into room reserved after the `ftyp` (`moov_size`, sized by
/// ``FileSizeBound/indexBytes``; the rest a `free` box), and `movflags=faststart`'s second pass over the whole file
/// is only the fallback for a `moov` larger than that; ``lastRemuxDuration`` reports the time either finish took.
/// If it fails, the fragmented file stays, readable, and the error is thrown.
///
/// Durability (``WriterStorage``): files are created `O_EXCL`, mode 0644 less the umask; each cut fragment is
/// `fdatasync`ed at most once a second; ``finish()`` `fsync`s the finished file, then in place the file again with
/// its `moov` appended and once more after the header write, or for fast start the copy and the directory before
/// the rename and the directory after it. A file deleted while written (its directory removed)
/// is noticed at the next cut and at the finish, and reported; nothing is written anywhere else.
///
/// Segments (``init(segmentsTo:fileType:metadata:)``): no file; the header and each fragment go to a ``SegmentOutput`` in
/// memory as an initialization segment and media segments, with source times, cut at key frames past each segment
/// boundary or on ``cutSegment()``.
///
/// Without a fragment interval, movies are written conventionally, directly to `path` (`faststart` when
/// ``Options/fastStart``). WAVE, AIFF and CAF are always written directly.
///
/// Metadata (``Options/metadata``): format-level key/value pairs, given to libavformat as they are. In `.mov`,
/// `movflags=use_metadata_tags` writes every key verbatim as a QuickTime metadata (`mdta`) item, so Apple's keys
/// (`com.apple.quicktime.location.ISO6709`, `com.apple.quicktime.make`, …) survive; FFmpeg's own names also give
/// the classic user data atoms (`title` → `©nam`, `location` → `©xyz`, `creation_time` → `mvhd`). In MPEG-4
/// files, FFmpeg's iTunes-style names (`title`, `artist`, `comment`, `encoder`, …) and `creation_time` apply.
///
/// Track matrix: ``TrackTransform`` (Apple's `CGAffineTransform` of `AVAssetWriterInput.transform`) becomes the
/// stream's display matrix side data (`AV_PKT_DATA_DISPLAYMATRIX`, the `tkhd` matrix). A 90° clockwise
/// transform (Apple's portrait recording) reads back in ffprobe as "rotation": -90 (FFmpeg counts
/// counterclockwise).
///
/// Errors: `ENOSPC`/`EDQUOT` while writing are ``MediaCodecsError/Kind/diskFull``; an existing file is
/// ``MediaCodecsError/Kind/fileAlreadyExists``; the rest ``MediaCodecsError/Kind/ffmpeg`` with the operation.
///
/// Wraps `avformat_alloc_output_context2`, `avformat_new_stream`, `avcodec_parameters_from_context`,
/// `av_stream_new_side_data`, `av_dict_set`, `avio_open`, `avformat_write_header`, `av_interleaved_write_frame`,
/// `av_write_trailer`, `avio_closep`, `avformat_open_input`, `av_read_frame`, `avformat_close_input` and
/// `avformat_free_context`. The muxer is the one owner of its `AVFormatContext` (and the remux's) and frees it;
/// no stream pointer leaves it.
///
/// Threading: thread-bound; use it from one thread at a time (an output's serial queue). Not `Sendable`. Debug
/// builds trap when two threads use it at once.
package final class Muxer {
    /// The containers this type writes.
    ///
    /// Threading: a value; `Sendable`.
    package enum FileType: String, Hashable, Sendable, CaseIterable {
        /// QuickTime movie (`mov`).
        case mov
        /// MPEG-4 (`mp4`).
        case mp4
        /// iTunes video (`ipod`).
        case m4v
        /// MPEG-4 audio (`ipod`).
        case m4a
        /// WAVE (`wav`).
        case wav
        /// AIFF (`aiff`).
        case aiff
        /// AIFF-C (libavformat's `aiff` muxer writes the AIFC form for codecs other than big-endian integer PCM,
        /// such as float or little-endian samples).
        case aifc
        /// Core Audio Format (`caf`).
        case caf

        /// libavformat's muxer name.
        package var formatName: String {
            switch self {
            case .mov: "mov"
            case .mp4: "mp4"
            case .m4v, .m4a: "ipod"
            case .wav: "wav"
            case .aiff, .aifc: "aiff"
            case .caf: "caf"
            }
        }

        /// Whether the file is an ISO/QuickTime movie that can be fragmented.
        package var isMovie: Bool { [.mov, .mp4, .m4v, .m4a].contains(self) }
    }

    /// Where the file is.
    package let path: String
    /// The container.
    package let fileType: FileType
    /// How it is written.
    package let options: Options
    /// Whether the file is written fragmented (a movie with a fragment interval).
    package var isFragmented: Bool { fileType.isMovie && (options.fragmentInterval != nil || segmentOutput != nil) }
    /// Where the fragments go when they are delivered as segments rather than written to ``path`` (see
    /// ``init(segmentsTo:fileType:metadata:)``).
    let segmentOutput: SegmentOutput?
    /// How long the last clean finish spent remuxing the fragmented file into a conventional one.
    package private(set) var lastRemuxDuration: Duration?
    /// Media bytes written so far (all streams).
    package private(set) var mediaBytes = 0
    /// The most media bytes libavformat held in memory at once: a fragmented movie keeps a fragment's media until
    /// the fragment is cut (a conventional movie or an audio file writes it at once: 0). The fragment cap bounds it.
    package private(set) var largestHeldMediaBytes = 0
    /// The media bytes libavformat holds now (the fragment being filled).
    package var heldMediaBytes: Int { isFragmented ? fragmentBytes : 0 }
    /// The most bytes the file can occupy once finished, or as the fragments on disk, with what was written so
    /// far (see ``FileSizeBound``).
    package var finishedSizeBound: Int { sizeBound.bytes }
    /// The same, had `packet` been written to `stream` too: a writer that must keep the file under a size writes
    /// the packet only when this is within it.
    package func finishedSizeBound(afterWriting packet: EncodedPacket, stream: Int) -> Int {
        sizeBound.bytes + sizeBound.growth(writing: packet, stream: stream)
    }

    private(set) var context: UnsafeMutablePointer<AVFormatContext>?
    private(set) var packet: UnsafeMutablePointer<AVPacket>?
    private var sessionStart: CMTime = .invalid
    private(set) var state: State = .configuring
    /// The video streams: fragments begin at their key frames.
    var videoStreams: Set<Int> = []
    private var hasVideo: Bool { !videoStreams.isEmpty }
    /// The streams that have had a packet (the first cut waits for all: its `moov` needs every track's start).
    private var streamsWritten: Set<Int> = []
    /// The fragment being written: the time of its first packet (session time) and the media bytes given to it.
    private var fragmentStart: CMTime = .invalid
    private var fragmentBytes = 0
    /// Whether a cut has written the initial `moov` (`delay_moov`).
    private var wroteMovieHeader = false
    /// Where the last complete fragment ends in the file (0 before the first cut): what ``abandon()`` keeps.
    private var completeFragmentsEnd: Int64 = 0
    var sizeBound = FileSizeBound()
    /// Where each stream's last packet ends (presentation time plus duration, in the stream's time base): the
    /// rewrite gives the last packet its duration from it, which the fragmented file's demuxer does not hand back.
    private(set) var streamEnds: [Int: Int64] = [:]
    /// The bytes the finishing rewrite reserves for the `moov` at the front; nil: ``FileSizeBound/indexBytes``.
    /// Tests set a smaller one to drive the fallback to `faststart`'s second pass.
    var rewriteHeaderReservation: Int?
    /// The transform of each stream, re-applied in the remux.
    var transforms: [Int: TrackTransform] = [:]
    /// The display size of each stream that has one (`AVAssetWriterInput.naturalSize`), written at ``finish()``.
    var displaySizes: [Int: (width: Double, height: Double)] = [:]
    /// The descriptor of the file this muxer created, kept open to sync it and to notice its deletion (see
    /// ``WriterStorage``); -1 once closed.
    private(set) var fileDescriptor: Int32 = -1
    private var fragmentSync = FragmentSync()
    #if DEBUG
        private let isBusy = Atomic<Bool>(false)
    #endif

    enum State { case configuring, writing, finished }

    /// A muxer for a new file at `path`.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/fileAlreadyExists`` when the file exists and
    ///   ``Options/overwrite`` is false, ``MediaCodecsError/Kind/ffmpeg`` (or ``MediaCodecsError/Kind/diskFull``)
    ///   when it cannot be created, ``MediaCodecsError/Kind/unsupportedConfiguration`` for a fragment interval
    ///   that is not a positive time or a fragment cap that is not positive.
    package init(path: String, fileType: FileType, options: Options = Options()) throws(MediaCodecsError) {
        FFmpegLogging.configured
        let operation = "creating \(path) as \(fileType.rawValue)"
        self.path = path
        self.fileType = fileType
        self.options = options
        self.segmentOutput = nil
        if let interval = options.fragmentInterval, !(interval.isNumeric && interval > .zero) {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation, message: "the fragment interval must be positive")
        }
        guard options.maximumFragmentBytes > 0 else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation, message: "the fragment cap must be positive")
        }
        // Claim the path atomically: O_EXCL fails if anything is there, a symbolic link included. avio_open then
        // truncates our own file; the descriptor stays open for syncing (WriterStorage).
        let descriptor = WriterStorage.createExclusively(path, truncatingExisting: options.overwrite)
        guard descriptor >= 0 else {
            if descriptor == -EEXIST {
                throw MediaCodecsError(.fileAlreadyExists, while: operation, message: "the file exists")
            }
            throw .ffmpegIO(CFFmpeg_AVERROR(-descriptor), while: operation)
        }
        fileDescriptor = descriptor
        packet = av_packet_alloc()
        let status = avformat_alloc_output_context2(&context, nil, fileType.formatName, path)
        guard status >= 0, context != nil, packet != nil else {
            WriterStorage.removeFile(path)
            throw .ffmpeg(status < 0 ? status : CFFmpeg_AVERROR(ENOMEM), while: "\(operation) (allocating)")
        }
    }

    /// A muxer whose header and fragments go to `output` as segments, in memory, rather than into a file: no path is
    /// claimed, nothing is synced or rewritten (see ``SegmentOutput``). MPEG-4 only.
    ///
    /// - Throws: ``MediaCodecsError/Kind/unsupportedConfiguration`` for another container,
    ///   ``MediaCodecsError/Kind/ffmpeg`` when the context cannot be allocated.
    package init(
        segmentsTo output: SegmentOutput, fileType: FileType = .mp4, metadata: [(key: String, value: String)] = []
    ) throws(MediaCodecsError) {
        FFmpegLogging.configured
        self.path = "the segment output"
        self.fileType = fileType
        self.options = Options(fragmentInterval: nil, maximumFragmentBytes: .max, fastStart: false, metadata: metadata)
        self.segmentOutput = output
        guard fileType == .mp4 else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: "making a segment output",
                message: "segments are fragmented MPEG-4, not \(fileType.rawValue)")
        }
        packet = av_packet_alloc()
        let status = avformat_alloc_output_context2(&context, nil, fileType.formatName, nil)
        guard status >= 0, context != nil, packet != nil else {
            throw .ffmpeg(status < 0 ? status : CFFmpeg_AVERROR(ENOMEM), while: "making a segment output (allocating)")
        }
    }

    deinit {
        // The segment output owns its AVIO context; libavformat must not close it as a file.
        if segmentOutput != nil { context?.pointee.pb = nil }
        if let context {
            // Not finished: close the file as it stands, as a crash would.
            if context.pointee.pb != nil, context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
                avio_closep(&context.pointee.pb)
            }
            avformat_free_context(context)
        }
        av_packet_free(&packet)
        if fileDescriptor >= 0 { close(fileDescriptor) }
    }

    // MARK: Writing

    /// Opens the file and writes the header; packets are written relative to `sessionStart`.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/unsupportedConfiguration`` when libavformat
    ///   leaves an option unused or refuses the streams, ``MediaCodecsError/Kind/diskFull``,
    ///   ``MediaCodecsError/Kind/ffmpeg``, ``MediaCodecsError/Kind/invalidState`` when called twice.
    package func start(atSourceTime sessionStart: CMTime) throws(MediaCodecsError) {
        let operation = "writing the header of \(path)"
        guard state == .configuring, let context else {
            throw MediaCodecsError(.invalidState, while: operation, message: "the file was already started")
        }
        guard sessionStart.isNumeric else {
            throw MediaCodecsError(.unsupportedConfiguration, while: operation, message: "the start is not numeric")
        }
        guard context.pointee.nb_streams > 0 else {
            throw MediaCodecsError(.invalidState, while: operation, message: "the file has no streams")
        }
        for (key, value) in options.metadata { av_dict_set(&context.pointee.metadata, key, value, 0) }
        sizeBound.setMetadata(options.metadata, fragmented: isFragmented)
        var dictionary = headerOptions()
        defer { av_dict_free(&dictionary) }
        if let segmentOutput {
            context.pointee.pb = try segmentOutput.makeIOContext()
            context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
            // Segments keep the samples' own times: without an edit list (empty_moov) libavformat would shift the
            // first to 0 (make_zero); only a negative time shifts them now, and frag_discont makes the first
            // fragment's tfdt the first packet's time rather than 0.
            context.pointee.avoid_negative_ts = AVFMT_AVOID_NEG_TS_MAKE_NON_NEGATIVE
        } else {
            let opened = avio_open(&context.pointee.pb, path, AVIO_FLAG_WRITE)
            guard opened >= 0 else { throw .ffmpegIO(opened, while: "\(operation) (avio_open)") }
        }
        let status = avformat_write_header(context, &dictionary)
        guard status >= 0 else { throw .ffmpegIO(status, while: operation) }
        if av_dict_count(dictionary) > 0 {
            let unused = dictionaryEntries(dictionary).map(\.key).joined(separator: ", ")
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation, message: "libavformat did not use \(unused)")
        }
        // Segments carry source times, as Apple's segment writer's do; a file starts at the session's start.
        self.sessionStart = segmentOutput == nil ? sessionStart : .zero
        state = .writing
        if let segmentOutput {
            wroteMovieHeader = true
            segmentOutput.deliverInitialization()
        }
    }

    /// The options for `avformat_write_header`.
    private func headerOptions() -> OpaquePointer? {
        var dictionary: OpaquePointer? = nil
        guard fileType.isMovie else { return nil }
        var flags: [String] = []
        if fileType == .mov { flags.append("use_metadata_tags") }
        if let segmentOutput {
            flags += segmentOutput.movieFlags
        } else if options.fragmentInterval != nil {
            // frag_custom: libavformat cuts no fragment itself; write(_:stream:) cuts them (see Muxer).
            flags += ["frag_custom", "empty_moov", "delay_moov", "default_base_moof"]
            setOption(&dictionary, "flush_packets", "1")
        } else if options.fastStart {
            flags.append("faststart")
        }
        if !flags.isEmpty { setOption(&dictionary, "movflags", flags.map { "+" + $0 }.joined()) }
        return dictionary
    }

    /// Writes `packet` to stream `stream` at its time minus the session start, interleaved with the other
    /// streams (`av_interleaved_write_frame`). In a fragmented movie, the fragment is cut first when the packet may
    /// begin one and the fragment is due (see ``Muxer``).
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/diskFull``, ``MediaCodecsError/Kind/ffmpeg``
    ///   (a timestamp out of order, an I/O error), ``MediaCodecsError/Kind/invalidState`` outside
    ///   ``start(atSourceTime:)`` … ``finish()``, ``MediaCodecsError/Kind/formatMismatch`` for a bad stream or a
    ///   packet without a numeric time.
    package func write(_ encoded: EncodedPacket, stream: Int) throws(MediaCodecsError) {
        #if DEBUG
            precondition(
                !isBusy.exchange(true, ordering: .acquiring), "Muxer is thread-bound: it was used from two threads")
            defer { isBusy.store(false, ordering: .releasing) }
        #endif
        let operation = "writing a packet of stream \(stream) to \(path)"
        guard state == .writing, let context, let packet else {
            throw MediaCodecsError(.invalidState, while: operation, message: "the file is not being written")
        }
        guard stream >= 0, stream < Int(context.pointee.nb_streams), let avStream = context.pointee.streams[stream]
        else { throw MediaCodecsError(.formatMismatch, while: operation, message: "there is no such stream") }
        let timeBase = avStream.pointee.time_base
        let decodeTime = encoded.decodeTime.isNumeric ? encoded.decodeTime : encoded.presentationTime
        guard let pts = (encoded.presentationTime - sessionStart).ffmpegTimestamp(in: timeBase),
            let dts = (decodeTime - sessionStart).ffmpegTimestamp(in: timeBase)
        else {
            throw MediaCodecsError(.formatMismatch, while: operation, message: "the packet has no numeric time")
        }
        if isFragmented { try cutFragmentIfDue(before: encoded, stream: stream, at: decodeTime - sessionStart) }
        try segmentOutput?.note(
            stream: stream, isVideo: videoStreams.contains(stream), time: encoded.presentationTime - sessionStart,
            duration: encoded.duration, isKeyFrame: encoded.isKeyFrame)
        try loadPacket(packet, from: encoded.data, while: "\(operation) (av_new_packet)")
        packet.pointee.pts = pts
        packet.pointee.dts = dts
        packet.pointee.duration = encoded.duration.ffmpegTimestamp(in: timeBase) ?? 0
        streamEnds[stream] = max(streamEnds[stream] ?? .min, pts + packet.pointee.duration)
        packet.pointee.flags = encoded.isKeyFrame ? AV_PKT_FLAG_KEY : 0
        packet.pointee.stream_index = Int32(stream)
        let status = av_interleaved_write_frame(context, packet)
        av_packet_unref(packet)
        guard status >= 0 else { throw .ffmpegIO(status, while: operation) }
        fragmentBytes += encoded.data.dataLength
        mediaBytes += encoded.data.dataLength
        if isFragmented { largestHeldMediaBytes = max(largestHeldMediaBytes, fragmentBytes) }
        sizeBound.add(encoded, stream: stream)
        streamsWritten.insert(stream)
    }

    /// Ends the current fragment before `encoded` (at session time `time` on `stream`) when it may begin one (a
    /// video key frame; any packet of an audio-only movie) and the fragment has reached its interval or its cap.
    private func cutFragmentIfDue(
        before encoded: EncodedPacket, stream: Int, at time: CMTime
    ) throws(MediaCodecsError) {
        guard let context else { return }
        guard hasVideo ? videoStreams.contains(stream) && encoded.isKeyFrame : true else { return }
        guard fragmentStart.isNumeric else {
            fragmentStart = time
            return
        }
        if let segmentOutput {
            guard fragmentBytes > 0, segmentOutput.boundaryPassed(at: time, segmentStart: fragmentStart) else { return }
        } else {
            guard let interval = options.fragmentInterval, fragmentBytes > 0,
                streamsWritten.count == Int(context.pointee.nb_streams),
                time - fragmentStart >= interval || fragmentBytes >= options.maximumFragmentBytes
            else { return }
        }
        try cutFragment(startingNextAt: time)
    }

    /// Ends the fragment being filled (drains the interleaving queue, `av_write_frame(ctx, NULL)`): flushed to the
    /// file and synced, or delivered as a segment. `time` is where the next fragment begins (invalid: unknown yet).
    func cutFragment(startingNextAt time: CMTime) throws(MediaCodecsError) {
        guard let context else { return }
        let operation = "cutting a movie fragment of \(path)"
        if segmentOutput == nil { StorageSeam.fragmentWillBeWritten?(path) }
        // Every packet given so far goes into this fragment: the interleaving queue is drained first.
        let drained = av_interleaved_write_frame(context, nil)
        guard drained >= 0 else { throw .ffmpegIO(drained, while: operation) }
        // With delay_moov the first cut writes only the moov; a second one writes the fragment.
        for _ in 0..<(wroteMovieHeader ? 1 : 2) {
            let cut = av_write_frame(context, nil)
            guard cut >= 0 else { throw .ffmpegIO(cut, while: operation) }
        }
        wroteMovieHeader = true
        fragmentStart = time
        fragmentBytes = 0
        sizeBound.fragmentWasCut()
        if let segmentOutput {
            segmentOutput.deliverSegment()
            return
        }
        // flush_packets has handed the fragment to the kernel; the offset is where a crash-cut file ends cleanly.
        avio_flush(context.pointee.pb)
        // libavformat's fragment flush does not return the I/O error (ENOSPC among them); avio keeps it.
        let ioError = context.pointee.pb.pointee.error
        guard ioError >= 0 else { throw .ffmpegIO(ioError, while: operation) }
        completeFragmentsEnd = avio_tell(context.pointee.pb)
        guard !WriterStorage.wasRemoved(fileDescriptor) else {
            throw WriterStorage.removedError(path, while: operation)
        }
        let synced = fragmentSync.fragmentWasFlushed(fileDescriptor)
        guard synced == 0 else { throw .ffmpegIO(CFFmpeg_AVERROR(synced), while: "\(operation) (fdatasync)") }
    }

    /// Replaces the format-level metadata while writing. It reaches the file's final form: the movie header a
    /// conventional movie gets at ``finish()``, or the rewritten movie of a fragmented one. Keys not in `metadata`
    /// that the file had (its creation time) are kept. WAVE and AIFF wrote their tags with the header: unchanged.
    package func replaceMetadata(_ metadata: [(key: String, value: String)]) throws(MediaCodecsError) {
        guard state == .writing, let context else {
            throw MediaCodecsError(.invalidState, while: "replacing the metadata of \(path)", message: "not writing")
        }
        let kept = av_dict_get(context.pointee.metadata, "creation_time", nil, 0).map {
            String(cString: $0.pointee.value)
        }
        av_dict_free(&context.pointee.metadata)
        for (key, value) in metadata { av_dict_set(&context.pointee.metadata, key, value, 0) }
        var counted = metadata
        if let kept, !metadata.contains(where: { $0.key == "creation_time" }) {
            av_dict_set(&context.pointee.metadata, "creation_time", kept, 0)
            counted.append((key: "creation_time", value: kept))
        }
        sizeBound.setMetadata(counted, fragmented: isFragmented)
    }

    /// True when ``finish()`` wrote the whole fragmented movie but could not rewrite it as a conventional one (the
    /// remux failed, usually for lack of space): the fragmented file at ``path`` is complete and playable.
    package private(set) var keptFragmentedFile = false

    /// Writes the trailer and closes the file; a fragmented movie is then remuxed into a conventional fast-start
    /// movie that atomically replaces it (see ``Muxer``). Calling it again does nothing.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/diskFull`` or ``MediaCodecsError/Kind/ffmpeg``;
    ///   after a failed remux, the fragmented file is still at ``path``.
    package func finish() throws(MediaCodecsError) {
        let operation = "finishing \(path)"
        guard state != .finished else { return }
        guard state == .writing, let context else {
            throw MediaCodecsError(.invalidState, while: operation, message: "the file was never started")
        }
        state = .finished
        if let segmentOutput {
            // The last segment, then the trailer (skip_trailer: no `mfra`, so nothing should follow).
            if fragmentBytes > 0 { try cutFragment(startingNextAt: .invalid) }
            let trailer = av_write_trailer(context)
            guard trailer >= 0 else { throw .ffmpegIO(trailer, while: "\(operation) (av_write_trailer)") }
            segmentOutput.deliverSegment()
            return
        }
        let trailer = av_write_trailer(context)
        let closed = avio_closep(&context.pointee.pb)
        guard trailer >= 0 else { throw .ffmpegIO(trailer, while: "\(operation) (av_write_trailer)") }
        guard closed >= 0 else { throw .ffmpegIO(closed, while: "\(operation) (closing)") }
        guard !WriterStorage.wasRemoved(fileDescriptor) else {
            throw WriterStorage.removedError(path, while: operation)
        }
        // The finished file (the fragmented one: the rewrite's fallback) is on stable storage before it is copied.
        let synced = WriterStorage.syncOpenFile(fileDescriptor)
        guard synced == 0 else { throw .ffmpegIO(CFFmpeg_AVERROR(synced), while: "\(operation) (fsync)") }
        if isFragmented {
            let clock = ContinuousClock()
            let started = clock.now
            do throws(MediaCodecsError) {
                // Fast start needs the copy (the `moov` first); otherwise the movie is finished where it lies.
                if options.fastStart {
                    try ensureRoom(for: .copy)
                    try remuxToConventionalMovie()
                } else {
                    try ensureRoom(for: .index)
                    if try !finalizeInPlace() {
                        try ensureRoom(for: .copy)
                        try remuxToConventionalMovie()
                    }
                }
            } catch {
                keptFragmentedFile = true
                throw error
            }
            lastRemuxDuration = clock.now - started
        }
        if !displaySizes.isEmpty { try TrackHeaderDisplaySize.set(displaySizes, inMovieAt: path) }
    }

    /// Ends the segment being filled now, when it holds media (`AVAssetWriter.flushSegment()`); the next video
    /// packet written must then be a key frame (``MediaCodecsError/Kind/segmentStartedWithNonSyncSample``).
    package func cutSegment() throws(MediaCodecsError) {
        guard segmentOutput != nil, state == .writing, fragmentBytes > 0 else { return }
        try cutFragment(startingNextAt: .invalid)
    }

    /// What ``abandon()`` left at ``path``.
    package enum AbandonedFile: Equatable, Sendable {
        /// Nothing playable had reached the disk: the file was removed.
        case removed
        /// The fragments complete on disk, `bytes` long: readable to its end, with no index (`mfra`) and not
        /// rewritten.
        case fragments(bytes: Int64)
        /// An audio file (WAVE, AIFF, CAF) as written so far: its header's sizes are those of the start.
        case unfinishedAudio
    }

    /// Gives up writing after a failure and keeps only what can be played: a fragmented movie is cut back to the
    /// end of its last complete fragment (a failed write may have left part of the next), a file with nothing
    /// playable (no fragment yet, a conventional movie without its `moov`, no media) is removed. Later calls do
    /// nothing and return what the first did.
    @discardableResult
    package func abandon() -> AbandonedFile {
        if let abandoned { return abandoned }
        state = .finished
        if segmentOutput != nil {
            // Segments already delivered stand; nothing is on disk.
            abandoned = .removed
            return .removed
        }
        if let context, context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
        if fileDescriptor >= 0 {
            close(fileDescriptor)
            fileDescriptor = -1
        }
        let result: AbandonedFile
        if isFragmented, completeFragmentsEnd > 0, WriterStorage.truncateFile(path, to: Int64(completeFragmentsEnd)) {
            result = .fragments(bytes: completeFragmentsEnd)
        } else if !fileType.isMovie, mediaBytes > 0 {
            result = .unfinishedAudio
        } else {
            WriterStorage.removeFile(path)
            result = .removed
        }
        abandoned = result
        return result
    }

    private var abandoned: AbandonedFile?
    /// What ``abandon()`` left, once it was called.
    package var abandonedFile: AbandonedFile? { abandoned }
    /// Whether the file was started and is neither finished nor abandoned: packets may be written.
    package var isWriting: Bool { state == .writing }
}
