// ISOBoxFile: reads (and patches) the boxes of an ISO base media file (QuickTime, MPEG-4) with `pread`/`pwrite`.

import CFFmpeg
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An ISO base media box: its four-character type, where it starts (its header) and the byte range of its contents.
struct ISOBox {
    var type: String
    var start: Int64
    var contents: Range<Int64>
}

/// Reads boxes from an open file.
struct ISOBoxFile {
    let descriptor: Int32
    let size: Int64

    /// The boxes directly inside `range`.
    func children(in range: Range<Int64>, while operation: String) throws(MediaCodecsError) -> [ISOBox] {
        var boxes: [ISOBox] = []
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
            boxes.append(ISOBox(type: type, start: start, contents: (start + headerLength)..<(start + length)))
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

    /// Writes all of `bytes` at `offset` (a short write is continued; its error, `ENOSPC` included, is thrown).
    func write(_ bytes: [UInt8], at offset: Int64, while operation: String) throws(MediaCodecsError) {
        var done = 0
        while done < bytes.count {
            let written = bytes.withUnsafeBytes {
                pwrite(descriptor, $0.baseAddress! + done, bytes.count - done, off_t(offset + Int64(done)))
            }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { throw .ffmpegIO(CFFmpeg_AVERROR(written < 0 ? errno : EIO), while: operation) }
            done += written
        }
    }
}
