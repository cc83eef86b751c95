// An RTSP client on a bare TCP socket, for what real clients never do: send malformed requests, and stop reading
// in the middle of a stream. Its receive buffer is made small, so a stalled reader holds little in its kernel.

import Foundation

#if canImport(Glibc)
    import Glibc
#endif

final class RawRTSPClient {
    struct Answer {
        let status: Int
        let text: String
        func header(_ name: String) -> String? {
            text.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
                .map { $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces) }
        }
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    private let fd: Int32
    private var sequence = 0
    /// The status of the last answer read.
    private(set) var lastStatus = 0

    init(port: Int, timeout: Int = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        var small: Int32 = 4096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var time = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw Failure(description: "cannot connect to 127.0.0.1:\(port)")
        }
    }

    deinit { close(fd) }

    /// Sends `request` as written and reads one answer (its header and a `Content-Length` body).
    func exchange(_ request: String) throws -> Answer {
        let bytes = Array(request.utf8)
        guard send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else {
            throw Failure(description: "send failed")
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let text = String(decoding: received, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let length =
                    text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) } ?? 0
                if text[end.upperBound...].utf8.count >= length { break }
            }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        let text = String(decoding: received, as: UTF8.self)
        let fields = text.split(separator: " ", maxSplits: 2)
        let status = fields.count >= 2 && fields[0] == "RTSP/1.0" ? Int(fields[1]) ?? 0 : 0
        lastStatus = status
        return Answer(status: status, text: text)
    }

    /// Whether interleaved media (`$` frames) arrive within `timeout` seconds of reading.
    func receivesMedia(timeout: Int = 5) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var received = 0
        let deadline = Date().addingTimeInterval(TimeInterval(timeout))
        while Date() < deadline, received < 200_000 {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { return false }
            received += count
        }
        return received >= 200_000 || buffer.contains(UInt8(ascii: "$"))
    }

    /// DESCRIBE, SETUP of the video track interleaved, PLAY; throws unless each answers 200.
    func play(_ url: String) throws {
        func request(_ method: String, _ uri: String, _ extra: String = "") throws -> Answer {
            sequence += 1
            let answer = try exchange("\(method) \(uri) RTSP/1.0\r\nCSeq: \(sequence)\r\n\(extra)\r\n")
            guard answer.status == 200 else { throw Failure(description: "\(method) answered \(answer.text)") }
            return answer
        }
        _ = try request("DESCRIBE", url, "Accept: application/sdp\r\n")
        let setup = try request("SETUP", url + "/streamid=0", "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n")
        let session = setup.header("Session")?.split(separator: ";").first.map(String.init) ?? ""
        _ = try request("PLAY", url, "Session: \(session)\r\n")
    }
}
