import NIOCore
import OpenAVCapture
import Synchronization

/// One playing client's end of the shared stream: it takes the packets the encoder hands every client and writes
/// them to this client (interleaved on its RTSP connection, or as UDP datagrams from the server's ports), never
/// waiting. What is handed to the network and not yet written is bounded (``limitBytes``); a client whose queue
/// would pass it (it stopped reading, or its link is slower than the stream) is dropped: its connection is closed,
/// and the encoder, the recording, the preview and the other clients never wait for it.
///
/// What one client costs is kept small, as ten clients should cost little more than one: the bytes are made once
/// for all clients (``RTSPSharedPackets``), a connection's bound is NIO's own count of its unsent bytes (its write
/// buffer water mark, set to ``limitBytes`` on every connection), and a UDP client's datagrams go out in one task on
/// the event loop that owns every UDP port, in the order given, so a sender report reaches the client before the
/// packets it times.
///
/// Threading: thread safe. `receive` runs on the encoder's queue; writes complete on the channels' event loops.
final class RTSPClientSink: RTPStreamSubscriber, Sendable {
    /// The UDP sockets of the server, all on one event loop: per track, the RTP and RTCP channel (datagrams go out
    /// from these ports).
    struct DatagramPorts: Sendable {
        let rtp: [any Channel]
        let rtcp: [any Channel]
    }

    /// Where one track's datagrams go for this client: the server's channel and the client's port, RTP and RTCP.
    private struct Route: Sendable {
        let rtp: (any Channel, SocketAddress)
        let rtcp: (any Channel, SocketAddress)
    }

    let connection: any Channel
    let transports: [Int: RTSPTransport]
    let limitBytes: Int
    private let shared: RTSPSharedPackets
    /// Whether every track is interleaved on the usual channels, so the shared frames fit this client.
    private let takesSharedFrames: Bool
    private let routes: [Int: Route]
    private let datagramLoop: (any EventLoop)?
    private let queuedDatagramBytes = Atomic<Int>(0)
    private let dropped = Atomic<Bool>(false)
    private let onStart: @Sendable ([RTPTrackStart]) -> Void
    private let onDrop: @Sendable (String) -> Void

    /// `onStart` is told where each track starts, on the encoder's queue, before the first packets are written (the
    /// PLAY answer it sends goes first when it hands its write to the connection's event loop at once).
    init(
        connection: any Channel, transports: [Int: RTSPTransport], trackCount: Int, datagrams: DatagramPorts?,
        shared: RTSPSharedPackets, limitBytes: Int, onStart: @escaping @Sendable ([RTPTrackStart]) -> Void,
        onDrop: @escaping @Sendable (String) -> Void
    ) {
        self.connection = connection
        self.transports = transports
        self.shared = shared
        self.limitBytes = limitBytes
        self.onStart = onStart
        self.onDrop = onDrop
        takesSharedFrames =
            transports.count == trackCount
            && transports.allSatisfy { track, transport in
                transport == .interleaved(rtp: UInt8(2 * track), rtcp: UInt8(2 * track + 1))
            }
        routes = Self.routes(transports, ports: datagrams, host: connection.remoteAddress?.ipAddress)
        datagramLoop = datagrams?.rtp.first?.eventLoop
    }

    var isDropped: Bool { dropped.load(ordering: .relaxed) }

    func start(_ packets: [RTPStreamPacket], tracks: [RTPTrackStart]) {
        guard !isDropped else { return }
        onStart(tracks)
        receive(packets)
    }

    func receive(_ packets: [RTPStreamPacket]) {
        guard !isDropped, !packets.isEmpty else { return }
        sendInterleaved(packets)
        if !routes.isEmpty { sendDatagrams(packets) }
    }

    func streamEnded() { drop("the server stopped") }

    /// Stops sending and closes the client's connection (its handler then lets go of the subscription).
    func drop(_ reason: String) {
        guard !dropped.exchange(true, ordering: .relaxed) else { return }
        onDrop(reason)
        connection.close(promise: nil)
    }

    // MARK: Writing

    private func sendInterleaved(_ packets: [RTPStreamPacket]) {
        let frames: ByteBuffer
        if takesSharedFrames {
            frames = shared.interleaved(packets)
        } else {
            frames = RTSPSharedPackets.frame(packets) { packet in
                guard case .interleaved(let rtp, let rtcp) = transports[packet.track] else { return nil }
                return packet.isControl ? rtcp : rtp
            }
        }
        guard frames.readableBytes > 0 else { return }
        // Unwritable: more than `limitBytes` wait in NIO's buffer (the kernel's being full already).
        guard connection.isWritable else { return tooSlow() }
        connection.writeAndFlush(frames, promise: nil)
    }

    private func sendDatagrams(_ packets: [RTPStreamPacket]) {
        guard let loop = datagramLoop else { return }
        let payloads = shared.payloads(packets)
        var envelopes: [(any Channel, AddressedEnvelope<ByteBuffer>)] = []
        var size = 0
        for (packet, payload) in zip(packets, payloads) {
            guard let route = routes[packet.track] else { continue }
            let (channel, address) = packet.isControl ? route.rtcp : route.rtp
            envelopes.append((channel, AddressedEnvelope(remoteAddress: address, data: payload)))
            size += payload.readableBytes
        }
        guard size > 0 else { return }
        guard queuedDatagramBytes.add(size, ordering: .relaxed).newValue <= limitBytes else { return tooSlow() }
        loop.execute { [self, envelopes, size] in
            // In order, each sent as it is written: the kernel delivers a report before the packets after it.
            for (index, (channel, envelope)) in envelopes.enumerated() {
                guard index == envelopes.count - 1 else {
                    channel.writeAndFlush(envelope, promise: nil)
                    continue
                }
                // The last write done: the loop has sent (or queued behind a full socket) the hand-out's datagrams.
                let promise = loop.makePromise(of: Void.self)
                promise.futureResult.whenComplete { [self] _ in queuedDatagramBytes.subtract(size, ordering: .relaxed) }
                channel.writeAndFlush(envelope, promise: promise)
            }
        }
    }

    private func tooSlow() {
        drop("it did not take \(limitBytes / 1024) KiB of stream in time (stopped reading, or too slow a link)")
    }

    /// The UDP destinations of the tracks sent over UDP, resolved once.
    private static func routes(
        _ transports: [Int: RTSPTransport], ports: DatagramPorts?, host: String?
    ) -> [Int: Route] {
        guard let ports, let host else { return [:] }
        var routes: [Int: Route] = [:]
        for (track, transport) in transports {
            guard case .udp(let rtpPort, let rtcpPort) = transport, track < ports.rtp.count,
                let rtp = try? SocketAddress(ipAddress: host, port: rtpPort),
                let rtcp = try? SocketAddress(ipAddress: host, port: rtcpPort)
            else { continue }
            routes[track] = Route(rtp: (ports.rtp[track], rtp), rtcp: (ports.rtcp[track], rtcp))
        }
        return routes
    }
}
