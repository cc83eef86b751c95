/// One RTSP/1.0 request as a client sent it (RFC 2326): method, URI, header fields in order, body.
///
/// Threading: a value; `Sendable`.
public struct RTSPRequest: Sendable, Equatable {
    /// A header field: its name as sent, its value without surrounding spaces.
    public struct Field: Sendable, Equatable {
        /// The name, as the client spelled it.
        public var name: String
        /// The value, trimmed.
        public var value: String
    }

    /// `OPTIONS`, `DESCRIBE`, `SETUP`, `PLAY`, …
    public var method: String
    /// The request URI as sent (`rtsp://host:port/live/streamid=0`, or `*`).
    public var uri: String
    /// The header fields, in order.
    public var fields: [Field]
    /// The body (`Content-Length` bytes).
    public var body: [UInt8]

    /// The first field named `name` (case-insensitive), its value trimmed.
    public func header(_ name: String) -> String? {
        fields.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// `CSeq`, which every answer repeats.
    public var sequence: String? { header("CSeq") }
}

/// What arrives on an RTSP connection: a request, or a packet interleaved on the connection (RFC 2326 §10.12: `$`,
/// a channel byte, a 16-bit length, the data; clients send their RTCP receiver reports this way).
///
/// Threading: a value; `Sendable`.
public enum RTSPInbound: Sendable, Equatable {
    case request(RTSPRequest)
    case interleaved(channel: UInt8, payload: [UInt8])
}

/// Why bytes are not an RTSP request, with the status the server answers before it closes the connection (its
/// framing is lost, so nothing after the bad bytes can be trusted).
///
/// Threading: a value; `Sendable`.
public struct RTSPParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 400 Bad Request, 413 Request Entity Too Large, or 505 RTSP Version Not Supported.
    public let status: Int
    /// What was wrong, for the answer's body and the log.
    public let message: String
    /// `status: message`.
    public var description: String { "\(status): \(message)" }
}

/// An incremental parser of what RTSP clients send: bytes go in as they arrive (``append(_:)``), whole requests and
/// interleaved packets come out (``next()``), in order. Bounded: a request's header section is at most
/// ``maximumHeaderBytes``, its body at most ``maximumBodyBytes``, so a client cannot make it hold more.
///
/// Lines end in CRLF (a bare LF is taken too, as most servers do); empty lines between messages are skipped; a
/// field without a colon, a request line that is not `METHOD URI RTSP/1.0`, a `Content-Length` that is not a
/// number, or too much of anything is an ``RTSPParseError``. After an error the parser keeps failing.
///
/// Threading: a value; confined to one connection's event loop.
public struct RTSPRequestParser: Sendable {
    /// The longest header section taken (request line and fields).
    public static let maximumHeaderBytes = 8192
    /// The longest body taken.
    public static let maximumBodyBytes = 65536

    private var buffer: [UInt8] = []
    private var start = 0
    private var failure: RTSPParseError?

    /// A parser for a new connection.
    public init() {}

    /// Bytes received and not yet returned as a message.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Adds bytes as they arrived.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        if start > 4096, start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole message, or nil until more bytes arrive.
    public mutating func next() throws(RTSPParseError) -> RTSPInbound? {
        if let failure { throw failure }
        do throws(RTSPParseError) {
            return try parseNext()
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func parseNext() throws(RTSPParseError) -> RTSPInbound? {
        while start < buffer.count, buffer[start] == 13 || buffer[start] == 10 { start += 1 }
        guard start < buffer.count else { return nil }
        if buffer[start] == UInt8(ascii: "$") {
            guard buffer.count - start >= 4 else { return nil }
            let length = Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
            guard buffer.count - start >= 4 + length else { return nil }
            let packet = RTSPInbound.interleaved(
                channel: buffer[start + 1], payload: Array(buffer[start + 4..<start + 4 + length]))
            start += 4 + length
            return packet
        }
        guard let headerEnd = endOfHeader() else {
            if bufferedByteCount > Self.maximumHeaderBytes {
                throw RTSPParseError(
                    status: 400, message: "the request's header is over \(Self.maximumHeaderBytes) bytes")
            }
            return nil
        }
        guard headerEnd.count - start <= Self.maximumHeaderBytes else {
            throw RTSPParseError(status: 400, message: "the request's header is over \(Self.maximumHeaderBytes) bytes")
        }
        var lines = Self.lines(buffer[start..<headerEnd.lower])
        let requestLine = lines.removeFirst()
        let (method, uri) = try Self.parseRequestLine(requestLine)
        var fields: [RTSPRequest.Field] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else {
                throw RTSPParseError(status: 400, message: "a header line has no colon: \(Self.shown(line))")
            }
            let name = String(line[..<colon])
            guard !name.isEmpty, name.allSatisfy(Self.isTokenCharacter) else {
                throw RTSPParseError(status: 400, message: "a header name is not a token: \(Self.shown(name))")
            }
            let value = line[line.index(after: colon)...].trimmingSpaces
            fields.append(.init(name: name, value: value))
        }
        var request = RTSPRequest(method: method, uri: uri, fields: fields, body: [])
        let length = try Self.contentLength(request)
        guard buffer.count - headerEnd.count >= length else { return nil }
        request.body = Array(buffer[headerEnd.count..<headerEnd.count + length])
        start = headerEnd.count + length
        return .request(request)
    }

    /// Where the header section ends: the index of its blank line (`lower`) and of the first byte after it (`count`).
    private func endOfHeader() -> (lower: Int, count: Int)? {
        var index = start
        let limit = min(buffer.count, start + Self.maximumHeaderBytes + 4)
        while index < limit {
            if buffer[index] == 10 {
                if index + 1 < buffer.count, buffer[index + 1] == 10 { return (index, index + 2) }
                if index + 2 < buffer.count, buffer[index + 1] == 13, buffer[index + 2] == 10 {
                    return (index, index + 3)
                }
            }
            index += 1
        }
        return nil
    }

    private static func lines(_ bytes: ArraySlice<UInt8>) -> [String] {
        bytes.split(separator: 10, omittingEmptySubsequences: false).map { line in
            String(decoding: line.last == 13 ? line.dropLast() : line, as: UTF8.self)
        }
    }

    private static func parseRequestLine(_ line: String) throws(RTSPParseError) -> (String, String) {
        let parts = line.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3 else {
            throw RTSPParseError(status: 400, message: "the request line is not METHOD URI RTSP/1.0: \(shown(line))")
        }
        guard parts[2].hasPrefix("RTSP/") else {
            throw RTSPParseError(status: 400, message: "the request line does not end in RTSP/1.0: \(shown(line))")
        }
        guard parts[2] == "RTSP/1.0" else {
            throw RTSPParseError(status: 505, message: "only RTSP/1.0 is spoken, not \(shown(String(parts[2])))")
        }
        guard parts[0].count <= 32, parts[0].allSatisfy(isTokenCharacter) else {
            throw RTSPParseError(status: 400, message: "the method is not a token: \(shown(String(parts[0])))")
        }
        return (String(parts[0]), String(parts[1]))
    }

    private static func contentLength(_ request: RTSPRequest) throws(RTSPParseError) -> Int {
        guard let text = request.header("Content-Length") else { return 0 }
        guard !text.isEmpty, text.count <= 9, text.allSatisfy({ $0.isASCII && $0.isNumber }), let length = Int(text)
        else { throw RTSPParseError(status: 400, message: "Content-Length is not a number: \(shown(text))") }
        guard length <= maximumBodyBytes else {
            throw RTSPParseError(status: 413, message: "the body of \(length) bytes is over \(maximumBodyBytes)")
        }
        return length
    }

    /// RFC 7230's token characters.
    private static func isTokenCharacter(_ character: Character) -> Bool {
        guard character.isASCII, let value = character.asciiValue, value > 32, value < 127 else { return false }
        return !"()<>@,;:\\\"/[]?={}".contains(character)
    }

    /// Up to 60 characters of `text`, for a message.
    private static func shown(_ text: some StringProtocol) -> String {
        let prefix = text.prefix(60).map { $0.isASCII && !$0.isNewline ? String($0) : "?" }.joined()
        return "'\(prefix)\(text.count > 60 ? "…" : "")'"
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
