// The finishing rewrite of a fragmented movie as a conventional fast-start one: the room it needs, the copy beside
// the file, and the rename over it (see ``WriterStorage`` for what is synced when).
//
// The copy is written once: its `moov` goes into room reserved at the front (libavformat's `moov_size`), sized by
// ``FileSizeBound/indexBytes``, the unused rest left as a `free` box. `movflags=faststart` instead writes the
// `moov` at the end and then reads and writes the whole file again to move it to the front: for a 26 MB, 10 s
// recording that second pass was most of the finish's CPU. It stays the fallback if the `moov` outgrows its room.

import CFFmpeg
import Foundation

extension Muxer {
    /// What a finish of a fragmented movie writes beside it: a conventional copy, or an index appended in place.
    enum FinishWrite {
        /// The whole movie again, in a file beside it until the rename (``remuxToConventionalMovie()``).
        case copy
        /// The `moov` appended to the file (``finalizeInPlace()``).
        case index

        func activity(on path: String) -> String {
            self == .copy ? "rewriting \(path) as a conventional movie" : "finishing \(path) in place"
        }
        var needs: String { self == .copy ? "the copy needs" : "its index needs" }
    }

    /// Throws (keeping the fragmented file) when `write` would not leave ``Options/minimumFreeBytesAfterRewrite``
    /// free: the copy needs the file's size again until the rename, the index its bound.
    func ensureRoom(for write: FinishWrite) throws(MediaCodecsError) {
        guard let free = WriterStorage.freeBytes(besides: path) else { return }
        let bytes = write == .copy ? Int64(finishedSizeBound) : Int64(sizeBound.indexBytes)
        let needed = bytes + options.minimumFreeBytesAfterRewrite
        guard free < needed else { return }
        throw MediaCodecsError(
            .diskFull, while: write.activity(on: path),
            message: "\(free) bytes are free, \(write.needs) up to \(needed); the fragmented movie was kept")
    }

    /// Copies every packet of the fragmented file at `path` into a conventional fast-start movie (a hidden file
    /// beside it, created exclusively) and renames it over `path`, syncing the copy and the directory before the
    /// rename and the directory after it (see ``WriterStorage``).
    func remuxToConventionalMovie() throws(MediaCodecsError) {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let operation = "remuxing \(path) into a conventional movie"
        StorageSeam.rewriteWillStart?(path)
        var temporary = ""
        var created: Int32 = -1
        // A random part in the name: a stale copy left by a killed process of the same id is never reused.
        for _ in 0..<8 where created < 0 {
            let unique = "\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
            temporary = (directory.isEmpty ? "" : directory + "/") + ".\(name).\(unique).remux"
            created = WriterStorage.createExclusively(temporary)
            if created < 0, created != -EEXIST {
                throw .ffmpegIO(CFFmpeg_AVERROR(-created), while: "\(operation) (creating the copy)")
            }
        }
        guard created >= 0 else {
            throw .ffmpegIO(CFFmpeg_AVERROR(EEXIST), while: "\(operation) (creating the copy)")
        }
        close(created)
        do throws(MediaCodecsError) {
            // Never too small with the size bound's reservation; the fallback is for a smaller one (tests set it).
            let reservation = rewriteHeaderReservation ?? sizeBound.indexBytes
            if try !remux(into: temporary, operation: operation, reserving: reservation) {
                try remux(into: temporary, operation: operation, reserving: nil)
            }
            let synced = WriterStorage.syncFile(temporary)
            guard synced == 0 else { throw .ffmpegIO(CFFmpeg_AVERROR(synced), while: "\(operation) (fsync)") }
        } catch {
            WriterStorage.removeFile(temporary)
            throw error
        }
        WriterStorage.syncDirectory(of: path)
        guard !WriterStorage.wasRemoved(fileDescriptor) else {
            WriterStorage.removeFile(temporary)
            throw WriterStorage.removedError(path, while: operation)
        }
        let renamed = WriterStorage.renameFile(temporary, over: path)
        guard renamed == 0 else {
            WriterStorage.removeFile(temporary)
            throw .ffmpegIO(CFFmpeg_AVERROR(renamed), while: "\(operation) (rename)")
        }
        WriterStorage.syncDirectory(of: path)
    }

    /// Copies the packets into `temporary` (truncated first) with `reserved` bytes kept for the `moov` after the
    /// `ftyp`, or with `faststart`'s second pass when `reserved` is nil. Returns false, the copy unfinished, when
    /// the `moov` did not fit in `reserved`.
    @discardableResult
    private func remux(
        into temporary: String, operation: String, reserving reserved: Int?
    ) throws(MediaCodecsError) -> Bool {
        guard let source = context, let packet else { return true }
        // libavformat's option is an int; a reservation past it (billions of samples) takes the second pass.
        let reserved = reserved.flatMap { $0 > 0 && $0 <= Int(Int32.max) ? $0 : nil }
        var input: UnsafeMutablePointer<AVFormatContext>? = nil
        let opened = avformat_open_input(&input, path, nil, nil)
        guard opened >= 0, let reader = input else { throw .ffmpeg(opened, while: "\(operation) (opening)") }
        defer { avformat_close_input(&input) }
        var output: UnsafeMutablePointer<AVFormatContext>? = nil
        let allocated = avformat_alloc_output_context2(&output, nil, fileType.formatName, temporary)
        guard allocated >= 0, let writer = output else { throw .ffmpeg(allocated, while: "\(operation) (allocating)") }
        defer {
            if writer.pointee.pb != nil { avio_closep(&writer.pointee.pb) }
            avformat_free_context(writer)
        }
        try copyStreams(from: reader, into: writer, operation: operation)
        var dictionary: OpaquePointer? = nil
        defer { av_dict_free(&dictionary) }
        if let reserved {
            setOption(&dictionary, "moov_size", String(reserved))
            if fileType == .mov { setOption(&dictionary, "movflags", "+use_metadata_tags") }
        } else {
            setOption(&dictionary, "movflags", fileType == .mov ? "+faststart+use_metadata_tags" : "+faststart")
        }
        let openedOutput = avio_open(&writer.pointee.pb, temporary, AVIO_FLAG_WRITE)
        guard openedOutput >= 0 else { throw .ffmpegIO(openedOutput, while: "\(operation) (avio_open)") }
        let header = avformat_write_header(writer, &dictionary)
        guard header >= 0 else { throw .ffmpegIO(header, while: "\(operation) (header)") }
        var copiedPackets = 0
        let held = HeldPackets(streams: Int(reader.pointee.nb_streams))
        func write(_ outgoing: UnsafeMutablePointer<AVPacket>) throws(MediaCodecsError) {
            let index = Int(outgoing.pointee.stream_index)
            guard let from = reader.pointee.streams[index], let to = writer.pointee.streams[index] else { return }
            av_packet_rescale_ts(outgoing, from.pointee.time_base, to.pointee.time_base)
            outgoing.pointee.pos = -1
            let written = av_interleaved_write_frame(writer, outgoing)
            guard written >= 0 else { throw .ffmpegIO(written, while: "\(operation) (writing)") }
            copiedPackets += 1
            StorageSeam.rewriteDidWritePacket?(path, copiedPackets)
        }
        while true {
            let status = av_read_frame(reader, packet)
            if status == CFFmpeg_AVERROR_EOF() { break }
            if status == CFFmpeg_AVERROR_EAGAIN() { continue }
            guard status >= 0 else { throw .ffmpeg(status, while: "\(operation) (reading)") }
            guard let previous = held.exchange(packet) else { continue }
            defer { av_packet_unref(previous) }
            try write(previous)
        }
        for index in 0..<Int(reader.pointee.nb_streams) {
            guard let last = held.remaining(index) else { continue }
            defer { av_packet_unref(last) }
            if last.pointee.duration <= 0, let end = streamEnds[index], let from = source.pointee.streams[index],
                let to = reader.pointee.streams[index]
            {
                let ends = av_rescale_q(end, from.pointee.time_base, to.pointee.time_base)
                last.pointee.duration = max(0, ends - last.pointee.pts)
            }
            try write(last)
        }
        let trailer = av_write_trailer(writer)
        // libavformat's answer when the `moov` is larger than its reserved room.
        if reserved != nil, trailer == CFFmpeg_AVERROR(EINVAL) { return false }
        guard trailer >= 0 else { throw .ffmpegIO(trailer, while: "\(operation) (trailer)") }
        let closed = avio_closep(&writer.pointee.pb)
        guard closed >= 0 else { throw .ffmpegIO(closed, while: "\(operation) (closing)") }
        return true
    }

    /// Gives `writer` the streams of the fragmented file open in `reader`, with what this muxer knows of them (pixel
    /// aspect ratio, time base, frame rate, metadata, transforms), and the file's metadata.
    func copyStreams(
        from reader: UnsafeMutablePointer<AVFormatContext>, into writer: UnsafeMutablePointer<AVFormatContext>,
        operation: String
    ) throws(MediaCodecsError) {
        guard let source = context else { return }
        guard reader.pointee.nb_streams == source.pointee.nb_streams else {
            throw MediaCodecsError(
                .formatMismatch, while: operation,
                message:
                    "the fragmented file has \(reader.pointee.nb_streams) streams, not \(source.pointee.nb_streams)")
        }
        for index in 0..<Int(source.pointee.nb_streams) {
            guard let original = source.pointee.streams[index], let demuxed = reader.pointee.streams[index],
                let stream = avformat_new_stream(writer, nil)
            else {
                throw MediaCodecsError(.allocationFailed, while: operation, message: "avformat_new_stream gave NULL")
            }
            // The parameters as read back, not the encoder's: the packets in the file are already in the
            // container's form (length-prefixed NAL units, with avcC/hvcC extradata), and libx264's Annex B
            // extradata would make the muxer convert them a second time.
            let copied = avcodec_parameters_copy(stream.pointee.codecpar, demuxed.pointee.codecpar)
            guard copied >= 0 else { throw .ffmpeg(copied, while: operation) }
            // libavformat reads a `pasp` box into the stream, not its parameters: the pixel aspect ratio is the
            // one this muxer was given (0:1 where a display size replaced it), so a device-coded track keeps it.
            stream.pointee.codecpar.pointee.sample_aspect_ratio = original.pointee.codecpar.pointee.sample_aspect_ratio
            stream.pointee.time_base = original.pointee.time_base
            stream.pointee.avg_frame_rate = original.pointee.avg_frame_rate
            av_dict_copy(&stream.pointee.metadata, original.pointee.metadata, 0)
            if let transform = transforms[index] { try setTransform(transform, on: stream) }
        }
        av_dict_copy(&writer.pointee.metadata, source.pointee.metadata, 0)
    }
}

/// One packet held back per stream while the rewrite copies a fragmented movie. libavformat's demuxer hands the
/// fragments' packets back without durations, and a packet of duration 0 ends its track where it starts: the
/// last frame or AAC packet fell outside the finished movie's edit list. Each packet is written once the next one
/// of its stream says where it ends; the last takes the end the muxer recorded when it wrote it.
private final class HeldPackets {
    private var packets: [UnsafeMutablePointer<AVPacket>?]
    private var isHeld: [Bool]
    private var scratch: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()

    init(streams: Int) {
        packets = (0..<streams).map { _ in av_packet_alloc() }
        isHeld = Array(repeating: false, count: streams)
    }

    deinit {
        for index in packets.indices { av_packet_free(&packets[index]) }
        av_packet_free(&scratch)
    }

    /// Holds `incoming`'s packet and puts in `incoming` the one of its stream held before it, its duration set
    /// from the new one's decode time where it had none. Returns `incoming` when it holds a packet to write: nil
    /// for a stream's first packet.
    func exchange(_ incoming: UnsafeMutablePointer<AVPacket>) -> UnsafeMutablePointer<AVPacket>? {
        let index = Int(incoming.pointee.stream_index)
        guard packets.indices.contains(index), let slot = packets[index], let scratch else { return incoming }
        guard isHeld[index] else {
            av_packet_move_ref(slot, incoming)
            isHeld[index] = true
            return nil
        }
        if slot.pointee.duration <= 0, incoming.pointee.dts > slot.pointee.dts {
            slot.pointee.duration = incoming.pointee.dts - slot.pointee.dts
        }
        av_packet_move_ref(scratch, slot)
        av_packet_move_ref(slot, incoming)
        av_packet_move_ref(incoming, scratch)
        return incoming
    }

    /// The packet still held for stream `index` at the end, if any.
    func remaining(_ index: Int) -> UnsafeMutablePointer<AVPacket>? {
        guard isHeld.indices.contains(index), isHeld[index], let slot = packets[index] else { return nil }
        isHeld[index] = false
        return slot
    }
}
