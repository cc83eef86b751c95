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
        let file = ISOBoxFile(descriptor: descriptor, size: size)
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
                bytes += BoxBytes.bigEndian(fixed)
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
        let file = ISOBoxFile(descriptor: descriptor, size: size)
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
}
