import NIOCore
import Synchronization

/// When each playing UDP client was last heard on the server's UDP ports. A UDP client's RTSP connection may stay
/// quiet for its whole session: what proves it alive is its RTCP receiver reports (RFC 3550 §6.4.2), which arrive
/// on the server's RTCP ports, not on the connection. The connection's handler asks here before it ends a session
/// as timed out (RFC 2326 §12.37).
///
/// Only the addresses of clients playing now are kept (``register(_:)`` at PLAY, ``unregister(_:)`` when they
/// stop): datagrams from anyone else change nothing, so the table is as large as the client limit.
///
/// Threading: thread safe. ``heard(from:)`` runs on the UDP channels' event loops; the rest on connections'.
final class RTSPClientActivity: Sendable {
    private let lastHeard = Mutex<[String: NIODeadline]>([:])

    /// The key of a datagram's sender: its address and port.
    static func key(host: String, port: Int) -> String { "\(host) \(port)" }

    /// Starts listening for `keys` (a client's RTP and RTCP addresses), as heard now.
    func register(_ keys: [String]) {
        let now = NIODeadline.now()
        lastHeard.withLock { table in for key in keys { table[key] = now } }
    }

    func unregister(_ keys: [String]) {
        lastHeard.withLock { table in for key in keys { table[key] = nil } }
    }

    /// A datagram arrived from `address`.
    func heard(from address: SocketAddress) {
        guard let host = address.ipAddress, let port = address.port else { return }
        let key = Self.key(host: host, port: port)
        let now = NIODeadline.now()
        lastHeard.withLock { table in
            if table[key] != nil { table[key] = now }
        }
    }

    /// The latest time any of `keys` was heard, or nil when none is registered.
    func latest(of keys: [String]) -> NIODeadline? {
        lastHeard.withLock { table in keys.compactMap { table[$0] }.max() }
    }
}

/// Reads what clients send to the server's UDP ports (receiver reports on the RTCP ports, the odd hole-punching
/// packet on the RTP ports) and notes only who sent it.
///
/// Threading: confined to its datagram channel's event loop (NIO calls it there).
final class RTSPDatagramListener: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let activity: RTSPClientActivity

    init(activity: RTSPClientActivity) { self.activity = activity }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        activity.heard(from: unwrapInboundIn(data).remoteAddress)
    }
}
