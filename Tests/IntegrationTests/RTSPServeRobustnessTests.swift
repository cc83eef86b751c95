// `avcapture serve --rtsp` (AVCaptureRTSPServer) against clients that misbehave, beside ones that do not:
// - a UDP client that goes silent after PLAY (no request, no RTCP receiver report; its connection left open, as a
//   player that froze leaves it) is dropped once the session timeout it was told in `Session: …;timeout=N` has
//   passed, while a raw UDP client that only sends receiver reports, and FFmpeg over UDP (which sends keep-alives),
//   play on;
// - a TCP client that PLAYs and never reads is dropped while FFmpeg pulls the stream in order, the camera app's
//   recording writes every frame (the virtual camera's frame indices in the file, read back with ffmpeg), and the
//   web preview's MJPEG stream goes on.

import Foundation
import OpenAVCaptureTesting
import Synchronization
import TestSupport
import Testing

@Suite(
    "avcapture serve --rtsp: silent and stalled clients", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct RTSPServeRobustnessTests {
    @Test("A silent UDP client is dropped after the session timeout; RTCP reports and keep-alives keep others")
    func silentUDPClientTimesOut() throws {
        guard MediaTool.available(for: "RTSPServeRobustnessTests") else { return }
        let timeout = 3
        let server = try RunningRTSPServer(["--rtsp-session-timeout", String(timeout)])
        defer { _ = server.stop() }
        let silent = try RawRTSPClient(port: server.port)
        let silentPorts = try RTPPortPair()
        let silentSetup = try silent.play(server.url, udp: silentPorts)
        #expect(silentSetup.sessionTimeout == timeout, "the SETUP answer announced \(silentSetup.session)")
        let reporting = try RawRTSPClient(port: server.port)
        let reportingPorts = try RTPPortPair()
        let reportingSetup = try reporting.play(server.url, udp: reportingPorts)
        let file = try scratchURL("rtsp-beside-silent-\(UUID().uuidString).mkv")
        let pull = pullWithFFmpeg(server.url, transport: "udp", seconds: 3 * timeout, into: file)
        try pull.run()

        // The reporting client says nothing on its connection; one receiver report a second from its RTCP port is
        // all that shows it alive. Real seconds pass here: the timeout is on the server's clock.
        var reports = 0
        while pull.isRunning, reports < 6 * timeout {
            reportingPorts.sendReceiverReport(to: reportingSetup.serverRTCPPort)
            reports += 1
            Thread.sleep(forTimeInterval: 0.5)
        }
        #expect(finish(pull) == 0, "ffmpeg over UDP, which sends keep-alives, was cut off: \(server.log)")
        #expect(silent.isClosedByServer(), "the silent client's connection is still open")
        let keptAlive = try reporting.exchange(
            "GET_PARAMETER \(server.url) RTSP/1.0\r\nCSeq: 9\r\nSession: \(reportingSetup.session)\r\n\r\n")
        #expect(keptAlive.status == 200, "the client sending receiver reports lost its session: \(keptAlive.text)")
        #expect(reportingPorts.receivedMedia(), "the client sending receiver reports got no RTP")
        // One session timed out, the silent client's, named by its address.
        let log = server.log
        #expect(log.components(separatedBy: "its session timed out").count == 2, "\(log)")
        #expect(log.contains("127.0.0.1:\(silent.localPort): nothing heard for \(timeout) s"), "\(log)")
        let pulled = try PulledStream(file)
        #expect(pulled.inOrder, "ffmpeg's indices out of order: \(pulled.indices)")
        #expect(pulled.frameCount > 0)
        withExtendedLifetime((silentPorts, reporting)) {}
    }

    @Test("A TCP client that never reads is dropped; FFmpeg, the recording and the web preview go on untouched")
    func stalledTCPClientLeavesTheRestAlone() throws {
        guard MediaTool.available(for: "RTSPServeRobustnessTests") else { return }
        // The smallest queue, so the stalled client's kernel buffers and its queue fill within seconds.
        let server = try RunningRTSPServer(["--rtsp-client-queue", "65536"])
        defer { _ = server.stop() }
        let webPort = server.server.port
        let preview = MJPEGCounter(port: webPort)
        #expect(post("/record", port: webPort) == 200)
        #expect(server.server.tool.line(startingWith: "recording") != nil, "\(server.log)")

        let stalled = try RawRTSPClient(port: server.port)
        try stalled.play(server.url)
        // It reads nothing more from here on.
        let partsBeforeStall = preview.parts
        let file = try scratchURL("rtsp-beside-stalled-tcp-\(UUID().uuidString).mkv")
        let pull = pullWithFFmpeg(server.url, transport: "tcp", seconds: 6, into: file)
        try pull.run()
        #expect(waitUntil(timeout: 60, every: 0.2) { server.log.contains("RTSP: dropped") }, "\(server.log)")
        let partsAtDrop = preview.parts
        #expect(finish(pull) == 0, "server log: \(server.log)")
        #expect(
            waitUntil(timeout: 10, every: 0.1) { preview.parts > partsAtDrop },
            "the preview stopped after the client was dropped (\(partsBeforeStall), \(partsAtDrop)): \(server.log)")
        let partsAfterDrop = preview.parts
        // Where the recording lost frames, if it did, in the output's own counts (read before it stops):
        // OutOfBuffers (the camera's buffers all held by an encoder behind), FrameWasLate (the camera's thread ran
        // late), or nothing counted (lost where nothing counts, which would be ours to find).
        let drops = recordingDrops(port: webPort)
        #expect(post("/record", port: webPort) == 200)
        let movieLine = try #require(server.server.tool.line(startingWith: "movie "), "\(server.log)")
        preview.stop()

        let pulled = try PulledStream(file)
        #expect(pulled.inOrder, "ffmpeg's indices out of order: \(pulled.indices)")
        #expect(pulled.frameCount > 0)
        // The preview streamed all along: while the stalled client filled its queue, and after it was dropped.
        // (Whether every picture reached it is not asked: a viewer is sent only the newest picture.)
        #expect(partsAtDrop > partsBeforeStall, "the preview stopped while the client stalled")
        let movie = URL(fileURLWithPath: String(movieLine.dropFirst("movie ".count)))
        let indices = try decodedFrameIndices(movie)
        print(
            "RTSP stalled TCP client: ffmpeg \(pulled.frameCount) frames; preview \(partsAfterDrop) pictures;"
                + " recording \(indices.count) frames, drops by reason \(drops)")
        #expect(indices.compactMap { $0 }.count > 30, "the recording holds \(indices.count) frames")
        #expect(
            indexSteps(indices).isEmpty,
            "frames missing from the recording: \(indexSteps(indices)); its drops by reason: \(drops)")
        #expect(server.log.contains("127.0.0.1:\(stalled.localPort): it did not take"), "\(server.log)")
        withExtendedLifetime(stalled) {}
    }
}

/// The page's recording's dropped frames by reason, from the server's `/metrics`
/// (`avcapture_frames_dropped_total{output="AVCaptureMovieFileOutput",reason=…}`), those above zero.
private func recordingDrops(port: Int) -> [String: Int] {
    let scraped = rawHTTP(
        port: port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", whole: true)
    var drops: [String: Int] = [:]
    for line in scraped.text.split(separator: "\n")
    where line.hasPrefix("avcapture_frames_dropped_total{output=\"AVCaptureMovieFileOutput\"") {
        guard let reason = line.split(separator: "\"").dropFirst(3).first,
            let count = line.split(separator: " ").last.flatMap({ Double($0) }), count > 0
        else { continue }
        drops[String(reason)] = Int(count)
    }
    return drops
}

/// `POST path` with an empty JSON body; the status.
private func post(_ path: String, port: Int) -> Int {
    rawHTTP(
        port: port, "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n",
        body: Data("{}".utf8)
    ).status
}

/// A web preview viewer reading `/stream` on its own thread and counting the pictures (multipart parts) it gets.
private final class MJPEGCounter: Sendable {
    private let counted = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(port: Int) {
        Thread.detachNewThread { [self] in
            defer { finished.signal() }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else { return }
            var time = timeval(tv_sec: 1, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
            let request = "GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            // Each picture starts with a JPEG's start-of-image marker followed by its first segment's marker.
            var buffer = [UInt8](repeating: 0, count: 65536)
            var previous: UInt8 = 0
            var beforePrevious: UInt8 = 0
            while !stopping.load(ordering: .relaxed) {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count == 0 { return }
                if count < 0 { continue }
                for byte in buffer[0..<count] {
                    if beforePrevious == 0xFF, previous == 0xD8, byte == 0xFF { counted.add(1, ordering: .relaxed) }
                    (beforePrevious, previous) = (previous, byte)
                }
            }
        }
    }

    var parts: Int { counted.load(ordering: .relaxed) }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }
}
