// TrackHeaderDisplaySize: writes a movie track's display size (the `tkhd` width and height) after libavformat has
// finished the file, for `AVAssetWriterInput.naturalSize`.

import CFFmpeg
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Sets the width and height of tracks' headers (`moov/trak/tkhd`, 16.16 fixed point) in a finished QuickTime or
/// MPEG-4 file, in place.
///
/// Why after the fact: libavformat's `mov` muxer always writes the encoded width into `tkhd` (its `mp4` mode derives
/// it from the sample aspect ratio, and only when the height is the encoded one), while Apple's `naturalSize` sets
/// both sides independently of the encoded picture. The two fields have a fixed place in the box, so overwriting
/// them changes no size and no offset. FFmpeg's demuxer reads a `tkhd` size that differs from the coded size as a
/// sample aspect ratio, as QuickTime shows it at that size.
///
/// Threading: stateless; any thread.
package enum TrackHeaderDisplaySize {
    /// Sets the display size of the tracks at the given indices (their order in `moov`, the muxer's stream order).
    ///
    /// - Throws: ``MediaCodecsError`` `.ffmpeg` (I/O) when the file cannot be read or written, `.formatMismatch`
    ///   when it has no `moov` or fewer tracks than asked for.
    package static func set(
        _ sizes: [Int: (width: Double, height: Double)], inMovieAt path: String
    )
        throws(MediaCodecsError)
    {
        let operation = "setting the track display size of \(path)"
        let descriptor = WriterStorage.openExisting(path, writable: true)
        guard descriptor >= 0 else { throw .ffmpegIO(CFFmpeg_AVERROR(-descriptor), while: operation) }
        defer { close(descriptor) }
        guard let size = WriterStorage.size(ofOpenFile: descriptor) else {
            throw .ffmpegIO(CFFmpeg_AVERROR(errno), while: operation)
        }
        let file = BoxFile(descriptor: descriptor, size: size)
        guard let movie = try file.children(in: 0..<file.size, while: operation).first(where: { $0.type == "moov" })
        else { throw MediaCodecsError(.formatMismatch, while: operation, message: "the file has no movie box") }
        let tracks = try file.children(in: movie.contents, while: operation).filter { $0.type == "trak" }
        for (index, size) in sizes {
            guard index < tracks.count,
                let header = try file.children(in: tracks[index].contents, while: operation).first(where: {
                    $0.type == "tkhd"
                })
            else {
                throw MediaCodecsError(
                    .formatMismatch, while: operation, message: "the movie has no track \(index + 1)")
            }
            // Version 0 has 32-bit times and duration, version 1 64-bit: the size follows 76 or 88 bytes of fields.
            let version = try file.read(at: header.contents.lowerBound, count: 1, while: operation)[0]
            let offset = header.contents.lowerBound + (version == 1 ? 88 : 76)
            guard offset + 8 <= header.contents.upperBound else {
                throw MediaCodecsError(
                    .formatMismatch, while: operation, message: "track \(index + 1)'s header is short")
            }
            var bytes: [UInt8] = []
            for side in [size.width, size.height] {
                let fixed = UInt32(clamping: Int64((side * 65536).rounded()))
                bytes += [UInt8(fixed >> 24), UInt8(fixed >> 16 & 0xFF), UInt8(fixed >> 8 & 0xFF), UInt8(fixed & 0xFF)]
            }
            try file.write(bytes, at: offset, while: operation)
        }
        let synced = WriterStorage.syncPatchedFile(descriptor)
        guard synced == 0 else { throw .ffmpegIO(CFFmpeg_AVERROR(synced), while: operation) }
    }

    /// The display size in each track's header, in `moov` order (a stream's index in FFmpeg's demuxer); nil when
    /// the file is not a QuickTime or MPEG-4 movie or cannot be read. Apple's `AVAssetTrack.naturalSize` is this size.
    package static func sizes(inMovieAt path: String) -> [(width: Double, height: Double)]? {
        let operation = "reading the track display sizes of \(path)"
        let descriptor = WriterStorage.openExisting(path, writable: false)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        guard let size = WriterStorage.size(ofOpenFile: descriptor) else { return nil }
        let file = BoxFile(descriptor: descriptor, size: size)
        do throws(MediaCodecsError) {
            guard let movie = try file.children(in: 0..<file.size, while: operation).first(where: { $0.type == "moov" })
            else { return nil }
            var sizes: [(width: Double, height: Double)] = []
            for track in try file.children(in: movie.contents, while: operation) where track.type == "trak" {
                guard
                    let header = try file.children(in: track.contents, while: operation).first(where: {
                        $0.type == "tkhd"
                    })
                else { return nil }
                let version = try file.read(at: header.contents.lowerBound, count: 1, while: operation)[0]
                let offset = header.contents.lowerBound + (version == 1 ? 88 : 76)
                guard offset + 8 <= header.contents.upperBound else { return nil }
                let bytes = try file.read(at: offset, count: 8, while: operation)
                let width = bytes[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                let height = bytes[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                sizes.append((Double(width) / 65536, Double(height) / 65536))
            }
            return sizes
        } catch {
            return nil
        }
    }

    /// An ISO base media box: its four-character type and the byte range of its contents.
    struct Box {
        var type: String
        var contents: Range<Int64>
    }

    /// Reads boxes from an open file.
    struct BoxFile {
        let descriptor: Int32
        let size: Int64

        /// The boxes directly inside `range`.
        func children(in range: Range<Int64>, while operation: String) throws(MediaCodecsError) -> [Box] {
            var boxes: [Box] = []
            var start = range.lowerBound
            while start + 8 <= range.upperBound {
                let header = try read(at: start, count: 8, while: operation)
                var length = Int64(header[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
                let type = String(decoding: header[4..<8], as: UTF8.self)
                var headerLength: Int64 = 8
                if length == 1 {
                    // A 64-bit size follows the type.
                    let large = try read(at: start + 8, count: 8, while: operation)
                    length = Int64(bitPattern: large.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
                    headerLength = 16
                } else if length == 0 {
                    length = range.upperBound - start  // to the end of the enclosing range
                }
                guard length >= headerLength, start + length <= range.upperBound else {
                    throw MediaCodecsError(
                        .formatMismatch, while: operation, message: "box '\(type)' at \(start) runs past its container")
                }
                boxes.append(Box(type: type, contents: (start + headerLength)..<(start + length)))
                start += length
            }
            return boxes
        }

        func read(at offset: Int64, count: Int, while operation: String) throws(MediaCodecsError) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
            guard got == count else {
                throw got < 0
                    ? .ffmpegIO(CFFmpeg_AVERROR(errno), while: operation)
                    : MediaCodecsError(.formatMismatch, while: operation, message: "the file ends inside a box")
            }
            return bytes
        }

        func write(_ bytes: [UInt8], at offset: Int64, while operation: String) throws(MediaCodecsError) {
            let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, bytes.count, off_t(offset)) }
            guard written == bytes.count else {
                throw .ffmpegIO(CFFmpeg_AVERROR(written < 0 ? errno : EIO), while: operation)
            }
        }
    }
}
