import NIOCore
import OpenAVCapture
import Synchronization

/// One playing client's end of the shared stream: it takes the packets the encoder hands every client and writes
/// them to this client (interleaved on its RTSP connection, or as UDP datagrams from the server's ports), never
/// waiting. What is handed to the network and not yet written is bounded (``limitBytes``); a client whose queue
/// would pass it (it stopped reading, or its link is slower than the stream) is dropped: its connection is closed,
/// and the encoder, the recording, the preview and the other clients never wait for it.
///
/// Threading: thread safe. `receive` runs on the encoder's queue; writes complete on the connection's event loop.
final class RTSPClientSink: RTPStreamSubscriber, Sendable {
    /// The UDP sockets of the server: per track, the RTP and RTCP channel (datagrams go out from these ports).
    struct DatagramPorts: Sendable {
        let rtp: [any Channel]
        let rtcp: [any Channel]
    }

    let connection: any Channel
    let transports: [Int: RTSPTransport]
    let limitBytes: Int
    private let datagrams: DatagramPorts?
    private let remoteAddress: SocketAddress?
    private let queuedBytes = Atomic<Int>(0)
    private let dropped = Atomic<Bool>(false)
    private let onStart: @Sendable ([RTPTrackStart]) -> Void
    private let onDrop: @Sendable (String) -> Void

    /// `onStart` is told where each track starts, on the encoder's queue, before the first packets are written (the
    /// PLAY answer it sends goes first when it hands its write to the connection's event loop at once).
    init(
        connection: any Channel, transports: [Int: RTSPTransport], datagrams: DatagramPorts?, limitBytes: Int,
        onStart: @escaping @Sendable ([RTPTrackStart]) -> Void, onDrop: @escaping @Sendable (String) -> Void
    ) {
        self.connection = connection
        self.transports = transports
        self.datagrams = datagrams
        self.limitBytes = limitBytes
        self.onStart = onStart
        self.onDrop = onDrop
        remoteAddress = connection.remoteAddress
    }

    var isDropped: Bool { dropped.load(ordering: .relaxed) }

    func start(_ packets: [RTPStreamPacket], tracks: [RTPTrackStart]) {
        guard !isDropped else { return }
        onStart(tracks)
        receive(packets)
    }

    func receive(_ packets: [RTPStreamPacket]) {
        guard !isDropped, !packets.isEmpty else { return }
        var interleaved = connection.allocator.buffer(capacity: packets.reduce(0) { $0 + $1.bytes.count + 4 })
        var datagrams: [(any Channel, AddressedEnvelope<ByteBuffer>)] = []
        for packet in packets {
            switch transports[packet.track] {
            case .interleaved(let rtp, let rtcp):
                interleaved.writeInteger(UInt8(ascii: "$"))
                interleaved.writeInteger(packet.isControl ? rtcp : rtp)
                interleaved.writeInteger(UInt16(packet.bytes.count))
                interleaved.writeBytes(packet.bytes)
            case .udp(let rtpPort, let rtcpPort):
                guard let ports = self.datagrams, packet.track < ports.rtp.count, let host = remoteAddress?.ipAddress,
                    let address = try? SocketAddress(ipAddress: host, port: packet.isControl ? rtcpPort : rtpPort)
                else { continue }
                let channel = packet.isControl ? ports.rtcp[packet.track] : ports.rtp[packet.track]
                datagrams.append(
                    (channel, AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: packet.bytes))))
            case nil:
                continue
            }
        }
        let size = interleaved.readableBytes + datagrams.reduce(0) { $0 + $1.1.data.readableBytes }
        guard size > 0 else { return }
        guard queuedBytes.add(size, ordering: .relaxed).newValue <= limitBytes else {
            drop("it did not take \(limitBytes / 1024) KiB of stream in time (stopped reading, or too slow a link)")
            return
        }
        if interleaved.readableBytes > 0 {
            let promise = connection.eventLoop.makePromise(of: Void.self)
            let written = interleaved.readableBytes
            promise.futureResult.whenComplete { [self] _ in queuedBytes.subtract(written, ordering: .relaxed) }
            connection.writeAndFlush(interleaved, promise: promise)
        }
        for (channel, envelope) in datagrams {
            let promise = channel.eventLoop.makePromise(of: Void.self)
            let written = envelope.data.readableBytes
            promise.futureResult.whenComplete { [self] _ in queuedBytes.subtract(written, ordering: .relaxed) }
            channel.writeAndFlush(envelope, promise: promise)
        }
    }

    func streamEnded() { drop("the server stopped") }

    /// Stops sending and closes the client's connection (its handler then lets go of the subscription).
    func drop(_ reason: String) {
        guard !dropped.exchange(true, ordering: .relaxed) else { return }
        onDrop(reason)
        connection.close(promise: nil)
    }
}
