// MD5Digest: the hash RTSP Digest authentication (RFC 2617, RFC 7826 §19.1) is defined on, from libavutil.

import CFFmpeg

/// MD5 of a string's UTF-8 bytes as 32 lowercase hex digits (`av_md5_sum`). Only for protocols that define their
/// exchange on MD5 (RTSP Digest, which every camera client speaks); never for anything meant to be secret-proof.
///
/// Threading: a pure function; any thread.
package func md5Hex(_ text: String) -> String {
    var digest = [UInt8](repeating: 0, count: 16)
    let bytes = Array(text.utf8)
    bytes.withUnsafeBufferPointer { av_md5_sum(&digest, $0.baseAddress, Int($0.count)) }
    let digits = Array("0123456789abcdef".utf8)
    return String(decoding: digest.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
}
