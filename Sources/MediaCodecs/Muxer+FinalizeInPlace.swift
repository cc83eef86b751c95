// The finish of a fragmented movie where it lies: a complete `moov` appended after the fragments, then one header
// write that turns everything between the `ftyp` and that `moov` into a single `mdat`. No media byte is read or
// copied (the copy of a 10 s, 26 MB passthrough recording was most of its finish's CPU: docs/performance.md).
//
// The `moov` is libavformat's own: a second `mov` muxer is given every sample's times, flags and size (from the
// fragments' `trun` boxes, FragmentedMovieLayout) with zeroed bytes, and before each sample its output is moved to
// where the sample already lies, so the chunk offsets it records are the real ones. Its output goes to an
// `AVIOContext` that keeps only what is written past the end of the file: the `moov`.
//
// Crash safety: until the `moov` is synced the file is the fragmented movie, complete; with it appended a demuxer
// reads the first `moov` and its fragments (FFmpeg skips a second `moov`); the header write that follows is 8 or 16
// bytes at one place, after which the file is a conventional movie with its `moov` at the end, the layout Apple's
// capture files have.

import CFFmpeg
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension Muxer {
    /// Finishes the fragmented file at ``path`` in place (see the file's comment). Returns false, the file
    /// untouched, when its layout is not one this can index (the caller then makes the fast-start copy).
    func finalizeInPlace() throws(MediaCodecsError) -> Bool {
        let operation = "finalizing \(path) in place"
        StorageSeam.rewriteWillStart?(path)
        let descriptor = WriterStorage.openExisting(path, writable: true)
        guard descriptor >= 0 else { throw .ffmpegIO(CFFmpeg_AVERROR(-descriptor), while: operation) }
        defer { close(descriptor) }
        guard let end = WriterStorage.size(ofOpenFile: descriptor) else {
            throw .ffmpegIO(CFFmpeg_AVERROR(errno), while: operation)
        }
        let file = ISOBoxFile(descriptor: descriptor, size: end)
        guard let layout = try FragmentedMovieLayout.read(file, while: operation),
            let movieIndex = try indexMovie(layout, of: file, appendingAt: end, operation: operation)
        else { return false }
        do throws(MediaCodecsError) {
            try file.write(movieIndex, at: end, while: operation)
            let synced = WriterStorage.syncOpenFile(descriptor)
            guard synced == 0 else { throw .ffmpegIO(CFFmpeg_AVERROR(synced), while: "\(operation) (fsync)") }
        } catch {
            // A full disk may have taken part of the `moov`: the fragmented movie is left as it was.
            _ = ftruncate(descriptor, off_t(end))
            throw error
        }
        StorageSeam.finalizeWillSwitch?(path)
        // From the front `moov` to the end of the fragments: one `mdat` (a 64-bit size past 4 GiB).
        let span = UInt64(end - layout.movie.start)
        let header: [UInt8] =
            span <= UInt64(UInt32.max)
            ? BoxBytes.bigEndian(UInt32(span)) + Array("mdat".utf8)
            : BoxBytes.bigEndian(UInt32(1)) + Array("mdat".utf8) + BoxBytes.bigEndian(UInt32(span >> 32))
                + BoxBytes.bigEndian(UInt32(span & 0xFFFF_FFFF))
        try file.write(header, at: layout.movie.start, while: operation)
        let switched = WriterStorage.syncOpenFile(descriptor)
        guard switched == 0 else { throw .ffmpegIO(CFFmpeg_AVERROR(switched), while: "\(operation) (fsync)") }
        return true
    }

    /// The `moov` libavformat writes for the samples of `layout` where they lie; nil when a fragment cannot be read
    /// as ``FragmentedMovieLayout`` expects.
    private func indexMovie(
        _ layout: FragmentedMovieLayout, of file: ISOBoxFile, appendingAt end: Int64, operation: String
    ) throws(MediaCodecsError) -> [UInt8]? {
        guard let source = context, let packet else { return nil }
        var input: UnsafeMutablePointer<AVFormatContext>? = nil
        let opened = avformat_open_input(&input, path, nil, nil)
        guard opened >= 0, let reader = input else { throw .ffmpeg(opened, while: "\(operation) (opening)") }
        defer { avformat_close_input(&input) }
        guard Int(reader.pointee.nb_streams) == layout.tracks.count else { return nil }
        var output: UnsafeMutablePointer<AVFormatContext>? = nil
        let allocated = avformat_alloc_output_context2(&output, nil, fileType.formatName, nil)
        guard allocated >= 0, let writer = output else { throw .ffmpeg(allocated, while: "\(operation) (allocating)") }
        let sink = MovieIndexSink(capturingFrom: end)
        defer {
            // The context is ours, not avio_open's: freed here, never closed by libavformat.
            sink.release(writer.pointee.pb)
            writer.pointee.pb = nil
            avformat_free_context(writer)
        }
        try copyStreams(from: reader, into: writer, operation: operation)
        writer.pointee.pb = try sink.makeIOContext(while: operation)
        var dictionary: OpaquePointer? = nil
        defer { av_dict_free(&dictionary) }
        if fileType == .mov { setOption(&dictionary, "movflags", "+use_metadata_tags") }
        let header = avformat_write_header(writer, &dictionary)
        guard header >= 0 else { throw .ffmpegIO(header, while: "\(operation) (header)") }
        var zeros = ZeroedPacketData()
        defer { zeros.release() }
        var decodeTimes = [Int64](repeating: 0, count: layout.tracks.count)
        var last: [FragmentedMovieLayout.Sample?] = Array(repeating: nil, count: layout.tracks.count)
        var written = 0
        func write(_ sample: FragmentedMovieLayout.Sample) throws(MediaCodecsError) {
            guard let stream = writer.pointee.streams[sample.track] else { return }
            try zeros.fill(packet, size: sample.size, while: operation)
            defer { av_packet_unref(packet) }
            packet.pointee.stream_index = Int32(sample.track)
            packet.pointee.dts = sample.decodeTime
            packet.pointee.pts = sample.presentationTime
            packet.pointee.duration = sample.duration
            packet.pointee.flags = sample.isSync ? AV_PKT_FLAG_KEY : 0
            av_packet_rescale_ts(
                packet, AVRational(num: 1, den: layout.tracks[sample.track].timescale), stream.pointee.time_base)
            let moved = avio_seek(writer.pointee.pb, sample.offset, SEEK_SET)
            guard moved >= 0 else { throw .ffmpegIO(Int32(truncatingIfNeeded: moved), while: operation) }
            let status = av_write_frame(writer, packet)
            guard status >= 0 else { throw .ffmpegIO(status, while: "\(operation) (indexing)") }
            written += 1
            StorageSeam.rewriteDidWritePacket?(path, written)
        }
        // Each track's sample is written once the next is known, so its last can take the end this muxer recorded
        // (the fragments' last duration is libavformat's guess), as the copy does (HeldPackets).
        for fragment in layout.fragments {
            guard
                let samples = try layout.samples(
                    in: fragment, of: file, nextDecodeTimes: &decodeTimes, while: operation)
            else { return nil }
            for sample in samples {
                guard sample.offset + Int64(sample.size) <= end else { return nil }
                if let previous = last[sample.track] { try write(previous) }
                last[sample.track] = sample
            }
        }
        for (index, held) in last.enumerated() {
            guard var sample = held else { continue }
            if let streamEnd = streamEnds[index], let from = source.pointee.streams[index] {
                let ends = av_rescale_q(
                    streamEnd, from.pointee.time_base, AVRational(num: 1, den: layout.tracks[index].timescale))
                if ends > sample.presentationTime { sample.duration = ends - sample.presentationTime }
            }
            try write(sample)
        }
        let moved = avio_seek(writer.pointee.pb, end, SEEK_SET)
        guard moved >= 0 else { throw .ffmpegIO(Int32(truncatingIfNeeded: moved), while: operation) }
        let trailer = av_write_trailer(writer)
        guard trailer >= 0 else { throw .ffmpegIO(trailer, while: "\(operation) (trailer)") }
        avio_flush(writer.pointee.pb)
        return sink.movieBox()
    }
}

/// The bytes of packets whose content the indexing muxer never sees on disk: one zeroed, reference-counted buffer
/// lent to each packet (grown for a larger sample), so no sample's size costs an allocation or a copy.
private struct ZeroedPacketData {
    private var buffer: UnsafeMutablePointer<AVBufferRef>?
    private var capacity = 0

    mutating func fill(
        _ packet: UnsafeMutablePointer<AVPacket>, size: Int, while operation: String
    ) throws(MediaCodecsError) {
        if size > capacity || buffer == nil {
            av_buffer_unref(&buffer)
            capacity = max(size, 64 << 10)
            buffer = av_buffer_allocz(capacity + Int(AV_INPUT_BUFFER_PADDING_SIZE))
        }
        guard let buffer, let reference = av_buffer_ref(buffer) else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "av_buffer_allocz failed")
        }
        packet.pointee.buf = reference
        packet.pointee.data = reference.pointee.data
        packet.pointee.size = Int32(size)
    }

    // Not deinit: a struct. The last buffer is released by the packet that holds it and this one reference.
    mutating func release() { av_buffer_unref(&buffer) }
}

/// Where the indexing muxer writes: nothing is kept but what lands at or past `capturingFrom` (the end of the file),
/// which is the `moov` its trailer writes there.
private final class MovieIndexSink {
    let capturingFrom: Int64
    private(set) var position: Int64 = 0
    private var captured: [UInt8] = []

    init(capturingFrom: Int64) {
        self.capturingFrom = capturingFrom
    }

    func makeIOContext(while operation: String) throws(MediaCodecsError) -> UnsafeMutablePointer<AVIOContext> {
        let size: Int32 = 64 << 10
        guard let buffer = av_malloc(Int(size))?.assumingMemoryBound(to: UInt8.self) else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "av_malloc failed")
        }
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        guard let created = avio_alloc_context(buffer, size, 1, opaque, nil, movieIndexWrite, movieIndexSeek) else {
            av_free(buffer)
            throw MediaCodecsError(.allocationFailed, while: operation, message: "avio_alloc_context failed")
        }
        // Samples larger than the buffer go straight to the callback, uncopied.
        created.pointee.direct = 1
        return created
    }

    func release(_ context: UnsafeMutablePointer<AVIOContext>?) {
        guard let context else { return }
        var buffer: UnsafeMutablePointer<UInt8>? = context.pointee.buffer
        av_freep(&buffer)
        var pointer: UnsafeMutablePointer<AVIOContext>? = context
        avio_context_free(&pointer)
    }

    func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        let from = position - capturingFrom
        position += Int64(bytes.count)
        guard position > capturingFrom else { return }
        let skip = from < 0 ? Int(-from) : 0
        let at = max(0, Int(from))
        if captured.count < at { captured += [UInt8](repeating: 0, count: at - captured.count) }
        let kept = bytes[skip...]
        let overlap = min(kept.count, captured.count - at)
        captured.replaceSubrange(at..<at + overlap, with: kept.prefix(overlap))
        captured += kept.dropFirst(overlap)
    }

    func seek(to offset: Int64, whence: Int32) -> Int64 {
        let end = max(position, capturingFrom + Int64(captured.count))
        switch whence & ~AVSEEK_FORCE {
        case AVSEEK_SIZE: return end
        case SEEK_SET: position = offset
        case SEEK_CUR: position += offset
        case SEEK_END: position = end + offset
        default: return -1
        }
        return position
    }

    /// The `moov` written past the end, when that is all that was: one whole box.
    func movieBox() -> [UInt8]? {
        guard captured.count >= 8, String(decoding: captured[4..<8], as: UTF8.self) == "moov" else { return nil }
        let length = captured[0..<4].reduce(0) { $0 << 8 | Int($1) }
        return length == captured.count ? captured : nil
    }
}

private func movieIndexWrite(
    _ opaque: UnsafeMutableRawPointer?, _ bytes: UnsafeMutablePointer<UInt8>?, _ count: Int32
)
    -> Int32
{
    guard let opaque, let bytes, count > 0 else { return 0 }
    Unmanaged<MovieIndexSink>.fromOpaque(opaque).takeUnretainedValue().write(
        UnsafeBufferPointer(start: bytes, count: Int(count)))
    return count
}

private func movieIndexSeek(_ opaque: UnsafeMutableRawPointer?, _ offset: Int64, _ whence: Int32) -> Int64 {
    guard let opaque else { return -1 }
    return Unmanaged<MovieIndexSink>.fromOpaque(opaque).takeUnretainedValue().seek(to: offset, whence: whence)
}
