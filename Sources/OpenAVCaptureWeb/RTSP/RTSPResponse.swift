import NIOCore
import Synchronization

/// An RTSP/1.0 answer: status line, `CSeq`, fields, body.
///
/// Threading: a value.
struct RTSPResponse {
    var status: Int
    var sequence: String?
    var fields: [(String, String)] = []
    var body: [UInt8] = []

    init(status: Int, sequence: String?) {
        self.status = status
        self.sequence = sequence
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 413: "Request Entity Too Large"
        case 453: "Not Enough Bandwidth"
        case 454: "Session Not Found"
        case 455: "Method Not Valid in This State"
        case 461: "Unsupported Transport"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "RTSP Version Not Supported"
        default: "Error"
        }
    }

    func encoded(allocator: ByteBufferAllocator) -> ByteBuffer {
        var text = "RTSP/1.0 \(status) \(Self.reason(status))\r\n"
        // A CSeq of a line's worth at most is echoed; anything odd in it could split the answer's lines.
        if let sequence, sequence.count < 20, sequence.allSatisfy({ $0.isASCII && $0.isNumber }) {
            text += "CSeq: \(sequence)\r\n"
        }
        text += "Server: OpenAVCapture\r\n"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        if !body.isEmpty || status != 200 { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        var buffer = allocator.buffer(capacity: text.utf8.count + body.count)
        buffer.writeString(text)
        buffer.writeBytes(body)
        return buffer
    }
}

/// The stream's URL as a request names it: `rtsp://host[:port]/live` (the whole stream) or
/// `rtsp://host[:port]/live/streamid=N` (a track). Only `/live` is served.
///
/// Threading: a value.
struct RTSPPath {
    /// `rtsp://host:port/live`, as the request spelled its host.
    let base: String
    let track: Int?

    init?(_ uri: String) {
        guard uri.lowercased().hasPrefix("rtsp://") else { return nil }
        let afterScheme = uri.dropFirst(7)
        let slash = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
        var authority = afterScheme[..<slash]
        // Credentials in the URI are the client's to send as Digest; they never appear in what we echo.
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var path = afterScheme[slash...].split(separator: "?").first.map(String.init) ?? ""
        while path.hasSuffix("/") { path.removeLast() }
        let components = path.split(separator: "/")
        guard components.first == "live", components.count <= 2 else { return nil }
        if components.count == 2 {
            guard components[1].hasPrefix("streamid="), let track = Int(components[1].dropFirst(9)), track >= 0 else {
                return nil
            }
            self.track = track
        } else {
            track = nil
        }
        base = "rtsp://\(authority)/live"
    }
}

/// The clients playing, bounded.
///
/// Threading: thread safe.
final class RTSPClientCount: Sendable {
    private let count = Mutex(0)

    var current: Int { count.withLock { $0 } }

    /// Takes a place unless `limit` are taken.
    func reserve(limit: Int) -> Bool {
        count.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func release() { count.withLock { $0 = max(0, $0 - 1) } }
}
