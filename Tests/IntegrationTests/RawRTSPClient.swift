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

    /// The client's own port, which the server's log names.
    var localPort: Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let status = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return status == 0 ? Int(UInt16(bigEndian: address.sin_port)) : 0
    }

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

    /// What a SETUP answered: the session, its announced timeout, and the server's RTCP port for UDP.
    struct Setup {
        let session: String
        let sessionTimeout: Int?
        let serverRTCPPort: Int
    }

    /// DESCRIBE, SETUP of the video track interleaved, PLAY; throws unless each answers 200.
    func play(_ url: String) throws {
        _ = try play(url, transport: "RTP/AVP/TCP;unicast;interleaved=0-1")
    }

    /// DESCRIBE, SETUP of the video track over UDP to `ports`, PLAY; throws unless each answers 200.
    func play(_ url: String, udp ports: RTPPortPair) throws -> Setup {
        try play(url, transport: "RTP/AVP;unicast;client_port=\(ports.rtpPort)-\(ports.rtpPort + 1)")
    }

    private func play(_ url: String, transport: String) throws -> Setup {
        func request(_ method: String, _ uri: String, _ extra: String = "") throws -> Answer {
            sequence += 1
            let answer = try exchange("\(method) \(uri) RTSP/1.0\r\nCSeq: \(sequence)\r\n\(extra)\r\n")
            guard answer.status == 200 else { throw Failure(description: "\(method) answered \(answer.text)") }
            return answer
        }
        _ = try request("DESCRIBE", url, "Accept: application/sdp\r\n")
        let setup = try request("SETUP", url + "/streamid=0", "Transport: \(transport)\r\n")
        let sessionField = setup.header("Session") ?? ""
        let session = sessionField.split(separator: ";").first.map(String.init) ?? ""
        let timeout = sessionField.split(separator: ";").first { $0.hasPrefix("timeout=") }
            .flatMap { Int($0.dropFirst("timeout=".count)) }
        let serverPorts = setup.header("Transport")?.split(separator: ";").first { $0.hasPrefix("server_port=") }
            .flatMap { Int($0.dropFirst("server_port=".count).split(separator: "-").last ?? "") }
        _ = try request("PLAY", url, "Session: \(session)\r\n")
        return Setup(session: session, sessionTimeout: timeout, serverRTCPPort: serverPorts ?? 0)
    }

    /// Whether the server closes the connection within `timeout` seconds (reading, and discarding, what comes).
    func isClosedByServer(timeout: TimeInterval = 20) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count == 0 { return true }
            if count < 0, errno != EAGAIN, errno != EWOULDBLOCK, errno != EINTR { return true }
        }
        return false
    }
}

/// A UDP client's RTP and RTCP sockets on loopback (an even port and the next), for RTP over UDP.
final class RTPPortPair {
    let rtpPort: Int
    private let rtp: Int32
    private let rtcp: Int32

    init() throws {
        for _ in 0..<32 {
            let port = Int.random(in: 20_000..<30_000) * 2
            guard let rtp = Self.bind(port) else { continue }
            guard let rtcp = Self.bind(port + 1) else {
                close(rtp)
                continue
            }
            (self.rtpPort, self.rtp, self.rtcp) = (port, rtp, rtcp)
            return
        }
        throw RawRTSPClient.Failure(description: "no free UDP port pair")
    }

    deinit {
        close(rtp)
        close(rtcp)
    }

    private static func bind(_ port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = Self.loopback(port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            close(fd)
            return nil
        }
        var time = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    private static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// An empty RTCP receiver report (RFC 3550 §6.4.2: version 2, no report blocks) from the RTCP port to `port`.
    func sendReceiverReport(to port: Int) {
        let report: [UInt8] = [0x80, 201, 0, 1, 0x12, 0x34, 0x56, 0x78]
        var address = Self.loopback(port)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(rtcp, report, report.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// Whether an RTP packet (version 2) arrives on the RTP port within two seconds of asking: what the kernel held
    /// from before is thrown away first, so only a packet sent now counts.
    func receivedMedia() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while recv(rtp, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 {}
        let count = recv(rtp, &buffer, buffer.count, 0)
        return count >= 12 && buffer[0] >> 6 == 2
    }
}
