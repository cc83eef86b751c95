// `avcapture serve` refusing what it should: a non-loopback address without a token, a missing or wrong token,
// unknown routes, '..' in a file name (sent raw, so no client tidies the path first), a huge body, malformed
// input, more viewers than allowed, many connections at once; and it keeps serving after all of them.

import Foundation
import OpenAVCaptureTesting
import Synchronization
import TestSupport
import Testing

/// One HTTP/1.1 exchange over a raw TCP socket: the request exactly as written, the response's status code (0 when
/// the server closed without one) and as much of the response as arrived within `timeout`.
/// With `whole`, it reads until the server closes the connection (send `Connection: close`), body included.
func rawHTTP(
    port: Int, _ request: String, body: Data = Data(), timeout: TimeInterval = 5, whole: Bool = false
) -> (status: Int, text: String) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return (0, "socket failed") }
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
    guard connected == 0 else { return (0, "connect failed") }
    var time = timeval(tv_sec: Int(timeout), tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    let message = Data(request.utf8) + body
    _ = message.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    var received = Data()
    var buffer = [UInt8](repeating: 0, count: 65536)
    while whole || !received.contains(Data("\r\n\r\n".utf8)) {
        let count = recv(fd, &buffer, buffer.count, 0)
        if count <= 0 { break }
        received.append(contentsOf: buffer[0..<count])
    }
    let text = String(decoding: received, as: UTF8.self)
    let fields = text.split(separator: " ", maxSplits: 2)
    let status = fields.count >= 2 && fields[0].hasPrefix("HTTP/") ? Int(fields[1]) ?? 0 : 0
    return (status, text)
}

/// `GET path` with the usual headers.
func get(_ path: String, port: Int, extra: String = "") -> Int {
    rawHTTP(port: port, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(extra)Connection: close\r\n\r\n").status
}

/// A running `avcapture serve`, its port read from the "listening on" line.
final class RunningServer {
    let tool: RunningTool
    let port: Int
    let directory: URL

    init(
        _ extra: [String], display: String = ProcessInfo.processInfo.environment["DISPLAY"] ?? "",
        environment: [String: String] = [:]
    ) throws {
        directory = try scratchURL("serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        tool = try RunningTool(
            ["serve", "--listen", "127.0.0.1:0"] + extra, in: directory, display: display, extraEnvironment: environment
        )
        let line = try #require(tool.line(startingWith: "listening on"), "no address: \(tool.standardError)")
        let address = try #require(URL(string: String(line.dropFirst("listening on ".count))))
        port = try #require(address.port)
    }

    func stop() -> Int32 {
        tool.interrupt()
        return tool.wait()
    }
}

@Suite(
    "avcapture serve refuses bad input", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct AVCaptureServeTests {
    @Test("beyond loopback without a token it refuses to start (64)")
    func nonLoopbackNeedsAToken() throws {
        let directory = try scratchURL("serve-open")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let result = try avcapture(["serve", "--listen", "0.0.0.0:0"], in: directory)
        #expect(result.status == 64)
        #expect(result.error.contains("--token"), "\(result.error)")
    }

    @Test("every bad request gets a 4xx and a log line; the server keeps serving")
    func badRequests() throws {
        let server = try RunningServer(["--token", "s3cret", "--max-viewers", "2", "--audio", "none"])
        let port = server.port
        // The first visit's token becomes a cookie (303 to an address without it); the cookie alone opens the page.
        #expect(get("/?token=s3cret", port: port) == 303)
        #expect(get("/", port: port, extra: "Cookie: avcapture_token=s3cret\r\n") == 200)
        #expect(get("/", port: port, extra: "Cookie: avcapture_token=wrong\r\n") == 401)
        #expect(get("/status", port: port, extra: "Authorization: Bearer s3cret\r\n") == 200)
        // The token: missing, wrong, or a prefix of the right one.
        #expect(get("/", port: port) == 401)
        #expect(get("/status?token=wrong", port: port) == 401)
        #expect(get("/status?token=s3cre", port: port) == 401)
        #expect(get("/status", port: port, extra: "Authorization: Bearer nope\r\n") == 401)
        // Unknown routes and methods.
        #expect(get("/nothing-here?token=s3cret", port: port) == 404)
        #expect(get("/media?token=s3cret", port: port) == 404)
        // File names: '..', encoded separators, hidden files, other extensions; a plain name that does not exist.
        for path in [
            "/media/..%2F..%2Fetc%2Fpasswd", "/media/%2E%2E%2Fsecret.jpg", "/media/..", "/media/.hidden.jpg",
            "/media/passwd", "/media/a%00.jpg",
        ] {
            let status = get(path + "?token=s3cret", port: port)
            #expect((400..<500).contains(status), "\(path) answered \(status)")
        }
        #expect(get("/media/../../etc/passwd?token=s3cret", port: port) != 200)
        #expect(get("/media/nothing.jpg?token=s3cret", port: port) == 404)
        // Bodies: too large, not JSON, out of range.
        let huge = Data(repeating: 0x41, count: 1_000_000)
        let tooLarge = rawHTTP(
            port: port,
            "POST /photo?token=s3cret HTTP/1.1\r\nHost: x\r\nContent-Length: \(huge.count)\r\nConnection: close\r\n\r\n",
            body: huge)
        #expect(tooLarge.status == 413)
        let notJSON = Data("{x".utf8)
        #expect(
            rawHTTP(
                port: port,
                "POST /focus?token=s3cret HTTP/1.1\r\nHost: x\r\nContent-Length: \(notJSON.count)\r\nConnection: close\r\n\r\n",
                body: notJSON
            ).status == 400)
        let outside = Data(#"{"x": 5000, "y": 1, "width": 100, "height": 100}"#.utf8)
        #expect(
            rawHTTP(
                port: port,
                "POST /focus?token=s3cret HTTP/1.1\r\nHost: x\r\nContent-Length: \(outside.count)\r\nConnection: close\r\n\r\n",
                body: outside
            ).status == 400)
        let badMode = Data(#"{"mode": "strobe"}"#.utf8)
        #expect(
            rawHTTP(
                port: port,
                "POST /flash?token=s3cret HTTP/1.1\r\nHost: x\r\nContent-Length: \(badMode.count)\r\nConnection: close\r\n\r\n",
                body: badMode
            ).status == 400)
        #expect(rawHTTP(port: port, "NONSENSE\r\n\r\n").status != 200)
        // A chunked body whose chunk size is not hexadecimal: malformed, not too large.
        let badChunks = rawHTTP(
            port: port,
            "POST /photo?token=s3cret HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                + "zz\r\nabc\r\n0\r\n\r\n")
        #expect(badChunks.status == 400, "a malformed chunked body answered \(badChunks.status)")

        // Viewers: two stream, the third is refused while they watch.
        let viewers = (0..<2).map { _ in StreamingViewer(port: port, path: "/stream?token=s3cret") }
        #expect(viewers.map(\.status) == [200, 200])
        #expect(get("/stream?token=s3cret", port: port) == 503)
        viewers.forEach { $0.close() }

        // Many connections at once: every one is answered.
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 64) { _ in
            let status = get("/status?token=s3cret", port: port)
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.withLock { $0.filter { $0 == 200 }.count } == 64)

        // Still serving, and every refusal was logged (the token never is).
        #expect(get("/status?token=s3cret", port: port) == 200)
        #expect(server.stop() == 0)
        let log = server.tool.standardError
        #expect(log.contains("401") && log.contains("404") && log.contains("413") && log.contains("503"), "\(log)")
        #expect(!log.contains("s3cret"))
    }

    @Test("serve --hls --token: /live/stream.m3u8 plays over HTTP in ffmpeg, the token carried to every segment")
    func liveStream() throws {
        guard MediaTool.available(for: "AVCaptureServeTests.liveStream") else { return }
        let temporary = try scratchURL("serve-hls-tmp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
        let server = try RunningServer(
            ["--token", "s3cret", "--hls", "--segment-duration", "1", "--preset", "320x240"],
            environment: ["TMPDIR": temporary.path])
        let port = server.port
        func playlist() -> String? {
            let answer = rawHTTP(
                port: port, "GET /live/stream.m3u8?token=s3cret HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                whole: true)
            return answer.status == 200 ? answer.text : nil
        }
        // The publishing output writes its playlist once the first segment is complete: wait for three.
        var listed = ""
        _ = waitUntil(timeout: 20, every: 0.1) {
            listed = playlist() ?? ""
            return listed.components(separatedBy: "#EXTINF").count > 3
        }
        try #require(listed.components(separatedBy: "#EXTINF").count > 3, "no playlist of 3 segments: \(listed)")
        #expect(listed.contains("application/vnd.apple.mpegurl"), "\(listed)")
        let uris = listed.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("#") && $0.contains(".m4s") }
        #expect(!uris.isEmpty && uris.allSatisfy { $0.hasSuffix("?token=s3cret") }, "\(uris)")
        #expect(listed.contains(#".mp4?token=s3cret""#), "the EXT-X-MAP's URI carries the token: \(listed)")
        // The live stream without its token, and names that are not the stream's.
        #expect(get("/live/stream.m3u8", port: port) == 401)
        for path in ["/live/..%2F..%2Fetc%2Fpasswd", "/live/passwd", "/live/.hidden.m3u8", "/live/a.mov"] {
            let status = get(path + "?token=s3cret", port: port)
            #expect((400..<500).contains(status), "\(path) answered \(status)")
        }
        #expect(get("/live/gone.m4s?token=s3cret", port: port) == 404)

        // A player over HTTP: ffprobe finds H.264 and AAC, ffmpeg decodes 2 s from the first listed segment without
        // an error, and the pictures carry the camera's frame indices in order.
        let url = "http://127.0.0.1:\(port)/live/stream.m3u8?token=s3cret"
        let codecs = try MediaTool.ffprobe.run([
            "-v", "error", "-show_entries", "stream=codec_name,codec_type", "-of", "csv=p=0", url,
        ]).outputText
        #expect(codecs.contains("h264,video") && codecs.contains("aac,audio"), "\(codecs)")
        let decoded = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-live_start_index", "0", "-i", url, "-t", "2", "-map", "0:v:0",
            "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", "-",
        ])
        #expect(decoded.status == 0 && decoded.error.isEmpty, "ffmpeg: \(decoded.error)")
        let size = 320 * 240
        let bytes = [UInt8](decoded.output)
        let indices = stride(from: 0, to: bytes.count - size + 1, by: size).map { start in
            VirtualFrameReader.readFrameIndex(fromLuma: Array(bytes[start..<start + size]), width: 320, height: 240)
        }
        #expect(indices.compactMap { $0 }.count >= 40, "\(indices.count) pictures in 2 s")
        #expect(indexSteps(indices).isEmpty, "frames missing from the stream: \(indexSteps(indices))")

        // Stopping ends the stream and removes its temporary directory.
        let hlsDirectories = { () -> [String] in
            ((try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? [])
                .filter { $0.hasPrefix("avcapture-serve-hls-") }
        }
        #expect(hlsDirectories().count == 1)
        #expect(server.stop() == 0, "\(server.tool.standardError)")
        #expect(hlsDirectories().isEmpty, "left behind: \(hlsDirectories())")
    }
}

/// A client reading an MJPEG stream's first bytes, holding the connection open until closed.
final class StreamingViewer {
    private let fd: Int32
    let status: Int

    init(port: Int, path: String) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var time = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        let text = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
        let fields = text.split(separator: " ", maxSplits: 2)
        status = fields.count >= 2 ? Int(fields[1]) ?? 0 : 0
    }

    func close() { Glibc.close(fd) }
}
