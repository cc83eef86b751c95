import NIOCore
import OpenAVCapture

/// What the connections of one server share: the stream, the rules, the UDP ports, the count of playing clients.
///
/// Threading: thread safe (immutable, or `Sendable` parts).
struct RTSPServerContext: Sendable {
    let output: RTPStreamOutput
    let configuration: AVCaptureRTSPServer.Configuration
    let datagrams: RTSPClientSink.DatagramPorts
    let shared: RTSPSharedPackets
    let serverPorts: [(rtp: Int, rtcp: Int)]
    let clients: RTSPClientCount
    let activity: RTSPClientActivity
    let log: @Sendable (String) -> Void
}

/// One RTSP connection: its requests parsed as they arrive and answered in order; one session (RFC 2326 §3), which
/// lives as long as the connection, and ends (the connection closed) once the client has been unheard for the
/// session timeout: no bytes on the connection, no datagram from its UDP ports. Bad bytes get a 4xx naming the fault, then the connection closes; nothing else
/// on the server is touched.
///
/// Threading: confined to the connection's event loop (NIO calls it there).
final class RTSPConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let server: RTSPServerContext
    private var parser = RTSPRequestParser()
    private let authentication: RTSPDigestAuthentication?
    private let sessionID = String(UInt64.random(in: 1 << 40..<1 << 60), radix: 16).uppercased()
    private var transports: [Int: RTSPTransport] = [:]
    private var sink: RTSPClientSink?
    private var describeAttempts = 0
    /// When the client last sent anything on the connection.
    private var lastHeard = NIODeadline.now()
    /// The addresses a UDP client's receiver reports come from, while it plays.
    private var datagramSources: [String] = []
    private var livenessCheck: RepeatedTask?

    init(server: RTSPServerContext) {
        self.server = server
        if let user = server.configuration.user, let password = server.configuration.password {
            authentication = RTSPDigestAuthentication(user: user, password: password)
        } else {
            authentication = nil
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let timeout = TimeAmount.seconds(Int64(server.configuration.sessionTimeoutSeconds))
        // Checked four times per timeout, so a silent client goes at most a quarter of it late.
        let quarter = TimeAmount.nanoseconds(timeout.nanoseconds / 4)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        livenessCheck = context.eventLoop.scheduleRepeatedTask(initialDelay: quarter, delay: quarter) { _ in
            let (handler, context) = bound.value
            handler.endIfSilent(for: timeout, context: context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        livenessCheck?.cancel()
        livenessCheck = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastHeard = .now()
        var bytes = unwrapInboundIn(data)
        parser.append(bytes.readBytes(length: bytes.readableBytes) ?? [])
        do {
            while let message = try parser.next() {
                // Clients' RTCP receiver reports arrive interleaved; the server needs none of them.
                guard case .request(let request) = message else { continue }
                answer(request, context: context)
            }
        } catch {
            server.log("RTSP: refused \(context.remoteAddress?.description ?? "a client"): \(error.message)")
            var response = RTSPResponse(status: error.status, sequence: nil)
            response.body = Array((error.message + "\n").utf8)
            response.fields.append(("Content-Type", "text/plain"))
            response.fields.append(("Connection", "close"))
            let closing = context.channel
            context.writeAndFlush(wrapOutboundOut(response.encoded(allocator: context.channel.allocator))).whenComplete
            {
                _ in closing.close(promise: nil)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        livenessCheck?.cancel()
        livenessCheck = nil
        stopPlaying()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// Closes the connection when neither it nor the client's UDP ports have been heard from for `timeout`.
    private func endIfSilent(for timeout: TimeAmount, context: ChannelHandlerContext) {
        var last = lastHeard
        if let heard = server.activity.latest(of: datagramSources), heard > last { last = heard }
        guard NIODeadline.now() - last > timeout else { return }
        let seconds = server.configuration.sessionTimeoutSeconds
        server.log(
            "RTSP: dropped \(context.remoteAddress?.description ?? "a client"): nothing heard for \(seconds) s"
                + " (no request, no RTCP receiver report), its session timed out")
        livenessCheck?.cancel()
        livenessCheck = nil
        context.close(promise: nil)
    }

    // MARK: Methods

    private func answer(_ request: RTSPRequest, context: ChannelHandlerContext) {
        var response = RTSPResponse(status: 200, sequence: request.sequence)
        if request.method != "OPTIONS", let authentication, !authentication.accepts(request) {
            if request.header("Authorization") != nil {
                server.log("RTSP: wrong credentials from \(context.remoteAddress?.description ?? "a client")")
            }
            response.status = 401
            response.fields.append(("WWW-Authenticate", authentication.challenge))
            return send(response, context: context)
        }
        switch request.method {
        case "OPTIONS":
            response.fields.append(("Public", "OPTIONS, DESCRIBE, SETUP, PLAY, PAUSE, TEARDOWN, GET_PARAMETER"))
        case "DESCRIBE":
            if server.output.sessionDescription == nil, RTSPPath(request.uri) != nil, describeAttempts < 50 {
                // The session is starting and its first key frame is not encoded yet: answer once it is (5 s at
                // most), rather than refuse a client that asked a moment early.
                describeAttempts += 1
                let retry = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: .milliseconds(100)) {
                    let (handler, context) = retry.value
                    handler.answer(request, context: context)
                }
                return
            }
            describeAttempts = 0
            describe(request, into: &response)
        case "SETUP":
            setUp(request, into: &response)
        case "PLAY":
            return play(request, response: response, context: context)
        case "PAUSE", "TEARDOWN":
            guard checkSession(request, into: &response) else { break }
            stopPlaying()
            if request.method == "TEARDOWN" { transports = [:] }
        case "GET_PARAMETER", "SET_PARAMETER":
            // Keep-alives.
            break
        default:
            response.status = 501
        }
        if !transports.isEmpty, response.status == 200 {
            response.fields.append(("Session", sessionField))
        }
        send(response, context: context)
    }

    private func describe(_ request: RTSPRequest, into response: inout RTSPResponse) {
        guard let path = RTSPPath(request.uri), path.track == nil else {
            response.status = 404
            return
        }
        guard let sdp = server.output.sessionDescription else {
            // The stream has not reached its first key frame yet (the session is starting): ask again shortly.
            response.status = 503
            response.fields.append(("Retry-After", "1"))
            return
        }
        response.fields.append(("Content-Base", path.base + "/"))
        response.fields.append(("Content-Type", "application/sdp"))
        response.body = Array(sdp.utf8)
    }

    private func setUp(_ request: RTSPRequest, into response: inout RTSPResponse) {
        guard let path = RTSPPath(request.uri), let track = path.track, track < server.output.trackCount else {
            response.status = 404
            return
        }
        if let session = request.header("Session"), !transports.isEmpty,
            session.split(separator: ";").first.map(String.init) != sessionID
        {
            response.status = 454
            return
        }
        guard sink == nil else {
            response.status = 455
            return
        }
        guard let offered = request.header("Transport"),
            let transport = RTSPTransport.choose(from: offered, track: track)
        else {
            response.status = 461
            return
        }
        transports[track] = transport
        let ports = server.serverPorts[min(track, server.serverPorts.count - 1)]
        response.fields.append(("Transport", transport.answer(serverPorts: (ports.rtp, ports.rtcp), ssrc: nil)))
    }

    private func play(_ request: RTSPRequest, response: RTSPResponse, context: ChannelHandlerContext) {
        var response = response
        guard checkSession(request, into: &response), !transports.isEmpty else {
            if response.status == 200 { response.status = 455 }
            return send(response, context: context)
        }
        if sink == nil {
            guard server.clients.reserve(limit: server.configuration.maximumClients) else {
                server.log("RTSP: refused a client: \(server.configuration.maximumClients) are playing already")
                response.status = 453
                return send(response, context: context)
            }
            let address = context.remoteAddress?.description ?? "a client"
            let log = server.log
            // The answer waits for the key frame the client starts at (asked of the encoder now: the next picture),
            // so that its RTP-Info names each track's first packet; the packets follow it on the connection.
            let bound = NIOLoopBound((self, context, request, response), eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            let sink = RTSPClientSink(
                connection: context.channel, transports: transports, trackCount: server.output.trackCount,
                datagrams: server.datagrams, shared: server.shared, limitBytes: server.configuration.clientQueueBytes,
                onStart: { tracks in
                    eventLoop.execute {
                        let (handler, context, request, response) = bound.value
                        handler.answerPlay(request, response: response, starts: tracks, context: context)
                    }
                }, onDrop: { log("RTSP: dropped \(address): \($0)") })
            guard server.output.subscribe(sink) else {
                server.clients.release()
                response.status = 503
                return send(response, context: context)
            }
            self.sink = sink
            datagramSources = Self.datagramSources(of: transports, at: context.remoteAddress)
            server.activity.register(datagramSources)
            return
        }
        response.fields.append(("Session", sessionField))
        send(response, context: context)
    }

    /// The answer to the PLAY that made the client's sink, once its stream starts at `starts`.
    private func answerPlay(
        _ request: RTSPRequest, response: RTSPResponse, starts: [RTPTrackStart], context: ChannelHandlerContext
    ) {
        guard sink != nil, context.channel.isActive else { return }
        var response = response
        let base = RTSPPath(request.uri)?.base ?? ""
        let info = starts.filter { transports[$0.track] != nil }.map { start in
            "url=\(base)/streamid=\(start.track);seq=\(start.sequenceNumber);rtptime=\(start.rtpTimestamp)"
        }
        if !info.isEmpty { response.fields.append(("RTP-Info", info.joined(separator: ","))) }
        response.fields.append(("Range", "npt=now-"))
        response.fields.append(("Session", sessionField))
        send(response, context: context)
    }

    private var sessionField: String { "\(sessionID);timeout=\(server.configuration.sessionTimeoutSeconds)" }

    private func checkSession(_ request: RTSPRequest, into response: inout RTSPResponse) -> Bool {
        guard let session = request.header("Session")?.split(separator: ";").first.map({ $0.trimmingSpaces }),
            session == sessionID
        else {
            response.status = 454
            return false
        }
        return true
    }

    private func stopPlaying() {
        guard let sink else { return }
        self.sink = nil
        server.activity.unregister(datagramSources)
        datagramSources = []
        server.output.unsubscribe(sink)
        server.clients.release()
    }

    /// The RTP and RTCP addresses of a UDP client's tracks: where its receiver reports come from.
    private static func datagramSources(of transports: [Int: RTSPTransport], at address: SocketAddress?) -> [String] {
        guard let host = address?.ipAddress else { return [] }
        return transports.values.flatMap { transport -> [String] in
            guard case .udp(let rtp, let rtcp) = transport else { return [] }
            return [RTSPClientActivity.key(host: host, port: rtp), RTSPClientActivity.key(host: host, port: rtcp)]
        }
    }

    private func send(_ response: RTSPResponse, context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(response.encoded(allocator: context.channel.allocator)), promise: nil)
    }
}
