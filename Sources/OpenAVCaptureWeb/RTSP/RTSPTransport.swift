/// Where one track's packets go for one client, as its SETUP's `Transport` asked (RFC 2326 §12.39): interleaved on
/// the RTSP connection, or UDP to the client's port pair.
///
/// Threading: a value; `Sendable`.
enum RTSPTransport: Sendable, Equatable {
    /// `RTP/AVP/TCP;unicast;interleaved=RTP-RTCP`.
    case interleaved(rtp: UInt8, rtcp: UInt8)
    /// `RTP/AVP;unicast;client_port=RTP-RTCP`.
    case udp(rtpPort: Int, rtcpPort: Int)

    /// The first transport of a `Transport` header that this server can serve (unicast RTP over TCP or UDP), or nil.
    /// An interleaved transport without channels gets `2 × track`, `2 × track + 1`.
    static func choose(from header: String, track: Int) -> RTSPTransport? {
        for offer in header.split(separator: ",") {
            let parts = offer.split(separator: ";").map { $0.trimmingSpaces }
            guard let profile = parts.first?.uppercased(), !parts.contains(where: { $0.lowercased() == "multicast" })
            else { continue }
            let values = Dictionary(
                parts.dropFirst().compactMap { part -> (String, String)? in
                    guard let equals = part.firstIndex(of: "=") else { return nil }
                    return (part[..<equals].lowercased(), String(part[part.index(after: equals)...]))
                }, uniquingKeysWith: { first, _ in first })
            if profile == "RTP/AVP/TCP" {
                if let channels = values["interleaved"] {
                    guard let pair = pair(channels), pair.0 < 256, pair.1 < 256 else { continue }
                    return .interleaved(rtp: UInt8(pair.0), rtcp: UInt8(pair.1))
                }
                let base = UInt8(min(2 * track, 254))
                return .interleaved(rtp: base, rtcp: base + 1)
            }
            if profile == "RTP/AVP" || profile == "RTP/AVP/UDP", let ports = values["client_port"],
                let pair = pair(ports), (1...65535).contains(pair.0), (1...65535).contains(pair.1)
            {
                return .udp(rtpPort: pair.0, rtcpPort: pair.1)
            }
        }
        return nil
    }

    /// `a-b`, or `a` alone meaning `a-(a+1)`.
    private static func pair(_ text: String) -> (Int, Int)? {
        let numbers = text.split(separator: "-", maxSplits: 1).map { Int($0.trimmingSpaces) }
        guard let first = numbers.first ?? nil, first >= 0 else { return nil }
        guard numbers.count == 2 else { return (first, first + 1) }
        guard let second = numbers[1], second >= 0 else { return nil }
        return (first, second)
    }

    /// The `Transport` value of the answer; `serverPorts` are the server's RTP and RTCP ports for UDP.
    func answer(serverPorts: (Int, Int), ssrc: UInt32?) -> String {
        let ssrcField = ssrc.map { ";ssrc=" + String($0, radix: 16, uppercase: true) } ?? ""
        switch self {
        case .interleaved(let rtp, let rtcp):
            return "RTP/AVP/TCP;unicast;interleaved=\(rtp)-\(rtcp)\(ssrcField)"
        case .udp(let rtpPort, let rtcpPort):
            return "RTP/AVP;unicast;client_port=\(rtpPort)-\(rtcpPort);server_port=\(serverPorts.0)-\(serverPorts.1)"
                + ssrcField
        }
    }
}
