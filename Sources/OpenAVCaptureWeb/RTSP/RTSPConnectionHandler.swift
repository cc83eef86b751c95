import NIOCore
import OpenAVCapture

/// What the connections of one server share: the stream, the rules, the UDP ports, the count of playing clients.
///
/// Threading: thread safe (immutable, or `Sendable` parts).
struct RTSPServerContext: Sendable {
    let output: RTPStreamOutput
    let configuration: AVCaptureRTSPServer.Configuration
    let datagrams: RTSPClientSink.DatagramPorts
    let serverPorts: [(rtp: Int, rtcp: Int)]
    let clients: RTSPClientCount
    let log: @Sendable (String) -> Void
}

/// One RTSP connection: its requests parsed as they arrive and answered in order; one session (RFC 2326 §3), which
/// lives as long as the connection. Bad bytes get a 4xx naming the fault, then the connection closes; nothing else
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

    init(server: RTSPServerContext) {
        self.server = server
        if let user = server.configuration.user, let password = server.configuration.password {
            authentication = RTSPDigestAuthentication(user: user, password: password)
        } else {
            authentication = nil
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
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
        stopPlaying()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
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
            response.fields.append(("Session", "\(sessionID);timeout=60"))
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
            let sink = RTSPClientSink(
                connection: context.channel, transports: transports, datagrams: server.datagrams,
                limitBytes: server.configuration.clientQueueBytes
            ) { log("RTSP: dropped \(address): \($0)") }
            guard let backlog = server.output.subscribe(sink) else {
                server.clients.release()
                response.status = 503
                return send(response, context: context)
            }
            self.sink = sink
            let info = transports.keys.sorted().compactMap { track -> String? in
                guard let first = backlog.first(where: { $0.track == track && !$0.isControl }) else { return nil }
                let base = RTSPPath(request.uri)?.base ?? ""
                return "url=\(base)/streamid=\(track);seq=\(first.sequenceNumber);rtptime=\(first.timestamp)"
            }
            if !info.isEmpty { response.fields.append(("RTP-Info", info.joined(separator: ","))) }
            response.fields.append(("Range", "npt=now-"))
            response.fields.append(("Session", "\(sessionID);timeout=60"))
            send(response, context: context)
            // The response first, then the packets a joining client starts with; live packets queue behind.
            sink.receive(backlog)
            return
        }
        response.fields.append(("Session", "\(sessionID);timeout=60"))
        send(response, context: context)
    }

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
        server.output.unsubscribe(sink)
        server.clients.release()
    }

    private func send(_ response: RTSPResponse, context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(response.encoded(allocator: context.channel.allocator)), promise: nil)
    }
}
