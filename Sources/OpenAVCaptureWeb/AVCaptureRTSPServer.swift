import Foundation
import NIOCore
import NIOPosix
import OpenAVCapture
import Synchronization

/// Serves a capture session's camera and microphone over RTSP at `rtsp://HOST:PORT/live`: H.264 and AAC in RTP,
/// interleaved on the RTSP connection (`RTP/AVP/TCP`) or over UDP (`RTP/AVP`), for NVRs, home-automation systems,
/// players and media servers. Beyond Apple: ours.
///
/// - One encoder for every client: the session's media is encoded once (H.264 with a key frame every second, AAC)
///   and cut into RTP once by libavformat; each client is handed the same packets.
/// - A joining client gets the parameter sets and the AAC configuration in the SDP of its DESCRIBE; its PLAY asks
///   the encoder for a key frame (the next picture), and the answer, an RTCP sender report per track and that key
///   frame come together, so its picture starts at once and live. Sender reports follow every second; they put both
///   tracks on one clock, so the client plays them in sync.
/// - Each client's unsent packets are bounded (``Configuration/clientQueueBytes``); a client that stops reading or
///   cannot keep up is dropped (its connection closed), and the encoder, the other clients, a recording and a
///   preview of the same session never wait for it.
/// - A client unheard for ``Configuration/sessionTimeoutSeconds`` (no RTSP request on its connection, no RTCP
///   receiver report on the server's UDP ports) is dropped: a player that vanished without TEARDOWN, whose
///   connection the kernel still holds open, stops costing a place and the bandwidth of its stream.
/// - Safe by default: listening beyond loopback needs a user and password, asked for with RTSP Digest
///   authentication (`rtsp://user:password@host:port/live`). At most ``Configuration/maximumClients`` play at once;
///   more get `453 Not Enough Bandwidth`.
///
/// The session is the caller's to configure and run; the server adds its output to it in
/// ``init(session:configuration:log:)``.
///
/// Threading: thread safe. ``start()`` blocks until the sockets are bound; connections are served on SwiftNIO's
/// event loops; ``stop()`` may be called from any thread.
public final class AVCaptureRTSPServer: Sendable {
    /// Where the server listens and whom it serves.
    public struct Configuration: Sendable {
        /// Address to listen on; loopback unless a user and password are set.
        public var host: String
        /// The RTSP port; 0 picks a free one (see ``AVCaptureRTSPServer/url``). RTSP's own is 554, 8554 unprivileged.
        public var port: Int
        /// The user and password Digest authentication asks for; both or neither. Required beyond loopback.
        public var user: String?
        /// The password of ``user``.
        public var password: String?
        /// Clients playing at once; more are refused.
        public var maximumClients: Int
        /// Bytes handed to one client's connection and not yet taken; past this the client is dropped.
        public var clientQueueBytes: Int
        /// Seconds a client may go unheard (no RTSP request, no RTCP receiver report) before its session ends and
        /// its connection closes; announced in every `Session: ID;timeout=N` answer (RFC 2326 §12.37), so clients
        /// send their keep-alives well within it.
        public var sessionTimeoutSeconds: Int

        /// A configuration; the defaults serve loopback on 8554, 16 clients, 1 MiB each, 60 s session timeout.
        public init(
            host: String = "127.0.0.1", port: Int = 8554, user: String? = nil, password: String? = nil,
            maximumClients: Int = 16, clientQueueBytes: Int = 1 << 20, sessionTimeoutSeconds: Int = 60
        ) {
            (self.host, self.port, self.user, self.password) = (host, port, user, password)
            (self.maximumClients, self.clientQueueBytes) = (maximumClients, clientQueueBytes)
            self.sessionTimeoutSeconds = sessionTimeoutSeconds
        }

        /// Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost).
        public var isLoopback: Bool { host == "localhost" || host == "::1" || host.hasPrefix("127.") }
    }

    private struct Running {
        var listener: (any Channel)?
        var datagrams: [any Channel] = []
        var url: URL?
    }

    /// What the server was made with.
    public let configuration: Configuration
    private let output = RTPStreamOutput()
    private let clients = RTSPClientCount()
    private let activity = RTSPClientActivity()
    private let log: @Sendable (String) -> Void
    private let running = Mutex(Running())
    private let session: AVCaptureSession

    /// A server for `session`'s video (and audio, when it has a microphone); `log` gets a line per refused or dropped
    /// client. Adds its output to the session (between `beginConfiguration` and `commitConfiguration`).
    ///
    /// - Throws: ``PreviewError`` when the configuration is unsafe (beyond loopback without credentials, a user
    ///   without a password) or the session cannot take another output.
    public init(
        session: AVCaptureSession, configuration: Configuration,
        log: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
    ) throws(PreviewError) {
        let hasCredentials = !(configuration.user ?? "").isEmpty && !(configuration.password ?? "").isEmpty
        guard (configuration.user == nil) == (configuration.password == nil),
            configuration.user == nil || hasCredentials
        else { throw PreviewError("an RTSP user needs a password and a password a user, neither empty") }
        guard configuration.isLoopback || hasCredentials else {
            throw PreviewError(
                "serving RTSP on \(configuration.host) would show the camera to the network; give a user and password"
                    + " (clients then use rtsp://USER:PASSWORD@HOST:PORT/live) or listen on 127.0.0.1")
        }
        guard configuration.maximumClients > 0, configuration.clientQueueBytes >= 65536 else {
            throw PreviewError("the RTSP client limit must be at least 1 and the client queue at least 64 KiB")
        }
        guard configuration.sessionTimeoutSeconds >= 1 else {
            throw PreviewError("the RTSP session timeout must be at least 1 second")
        }
        self.configuration = configuration
        self.log = log
        self.session = session
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        guard session.canAddOutput(output) else {
            throw PreviewError("the session cannot take the RTSP stream's output")
        }
        session.addOutput(output)
    }

    /// The stream's address once started (`rtsp://HOST:PORT/live`, without credentials).
    public var url: URL? { running.withLock { $0.url } }

    /// Clients playing now.
    public var clientCount: Int { clients.current }

    /// Binds the RTSP port and the UDP ports and starts serving; returns the stream's URL.
    ///
    /// - Throws: ``PreviewError`` naming the address when a port cannot be bound (in use, not an address here).
    @discardableResult
    public func start() throws(PreviewError) -> URL {
        let group = MultiThreadedEventLoopGroup.singleton
        let host = configuration.host
        do {
            var ports: [(rtp: Int, rtcp: Int)] = []
            var rtp: [any Channel] = []
            var rtcp: [any Channel] = []
            // Every UDP port on one event loop: a client's report and packets, written there in one task, leave in
            // the order they were written, whatever port each goes from.
            let datagramLoop = group.next()
            for _ in 0..<2 {
                let pair = try Self.bindDatagramPair(host: host, loop: datagramLoop, activity: activity)
                rtp.append(pair.rtp)
                rtcp.append(pair.rtcp)
                ports.append((pair.rtp.localAddress?.port ?? 0, pair.rtcp.localAddress?.port ?? 0))
            }
            running.withLock { $0.datagrams = rtp + rtcp }
            let context = RTSPServerContext(
                output: output, configuration: configuration,
                datagrams: .init(rtp: rtp, rtcp: rtcp), shared: RTSPSharedPackets(), serverPorts: ports,
                clients: clients, activity: activity, log: log)
            let listener = try ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 64)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                // A small send buffer: a client that stops reading fills it and then its bounded queue within
                // seconds, instead of hiding megabytes of old stream in the kernel.
                .childChannelOption(.socketOption(.so_sndbuf), value: 128 * 1024)
                // A client's bound: past `clientQueueBytes` unsent, its connection turns unwritable and it is dropped
                // (RTSPClientSink), counted by NIO without a promise per write.
                .childChannelOption(
                    .writeBufferWaterMark,
                    value: .init(low: configuration.clientQueueBytes / 2, high: configuration.clientQueueBytes)
                )
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(RTSPConnectionHandler(server: context))
                    }
                }
                .bind(host: host, port: configuration.port).wait()
            let port = listener.localAddress?.port ?? configuration.port
            let shownHost = host.contains(":") ? "[\(host)]" : host
            guard let url = URL(string: "rtsp://\(shownHost):\(port)/live") else {
                throw PreviewError("rtsp://\(shownHost):\(port)/live is not a URL")
            }
            running.withLock {
                $0.listener = listener
                $0.url = url
            }
            return url
        } catch let error as PreviewError {
            stop()
            throw error
        } catch {
            stop()
            throw PreviewError("cannot serve RTSP on \(host):\(configuration.port): \(error)")
        }
    }

    /// Closes the listening socket, every client's connection and the UDP ports, and takes the output off the
    /// session. Any thread.
    public func stop() {
        let (listener, datagrams) = running.withLock { state in
            defer { state = Running() }
            return (state.listener, state.datagrams)
        }
        try? listener?.close().wait()
        for channel in datagrams { try? channel.close().wait() }
        output.closeSubscribers()
        if session.outputs.contains(where: { $0 === output }) {
            session.beginConfiguration()
            session.removeOutput(output)
            session.commitConfiguration()
        }
    }

    /// A UDP port pair for one track: RTP on an even port, RTCP on the next (RFC 3550 §11), both bound to `host`.
    private static func bindDatagramPair(
        host: String, loop: any EventLoop, activity: RTSPClientActivity
    ) throws -> (rtp: any Channel, rtcp: any Channel) {
        let bootstrap = DatagramBootstrap(group: loop)
            // Clients' receiver reports tell only that their sender is alive.
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(RTSPDatagramListener(activity: activity))
                }
            }
        for _ in 0..<32 {
            let port = Int.random(in: 25_000..<32_000) * 2
            guard let rtp = try? bootstrap.bind(host: host, port: port).wait() else { continue }
            if let rtcp = try? bootstrap.bind(host: host, port: port + 1).wait() { return (rtp, rtcp) }
            try? rtp.close().wait()
        }
        throw PreviewError("no free UDP port pair for RTP on \(host)")
    }
}
