// `avcapture serve`'s HTTP server (WebPreviewServer, Hummingbird 2 on SwiftNIO), fed arbitrary bytes as one TCP
// connection's request: the real server, started once on a loopback port with a token and a media directory, so the
// whole of request handling is fuzzed (NIO's HTTP/1 parser, the router, the token guard, the JSON bodies, the media
// name checks), not a copy of its pure functions. About 70 connections a second on a loaded 2-core machine: each
// waits for the whole answer, and a request the server waits on for 100 ms, then half-closed, for 100 ms more.
//
// Besides crashes, three properties are checked on every answer: a request that does not carry the token (after
// percent-decoding) gets no 2xx and triggers no camera action; no answer ever holds the bytes of the files outside
// the media directory (one reached by '..', one by a symlink inside it, one hidden).

import Foundation
import FuzzSupport
import OpenAVCapture
import OpenAVCaptureWeb
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

let token = "fuzz0token0A7q"
let secret = Array("SECRET-4c1d-MUST-NOT-LEAVE".utf8)

/// The camera actions, counted: a request without the token must not reach them.
final class CountingActions: WebCameraActions {
    let calls = Atomic<Int>(0)
    private func called() { calls.add(1, ordering: .relaxed) }
    func focus(atDevicePoint point: CGPoint) { called() }
    func expose(atDevicePoint point: CGPoint) { called() }
    func resetFocusAndExposure() { called() }
    func switchCamera() -> Bool {
        called()
        return false
    }
    func setFlashMode(_ mode: String) -> Bool {
        called()
        return mode != "auto"
    }
    func setTorchMode(_ mode: String) -> Bool {
        called()
        return mode == "off"
    }
    func zoom(toValue value: Double) { called() }
    func takePhoto() { called() }
    func toggleRecording() { called() }
    func status() -> WebCameraStatus {
        WebCameraStatus(
            camera: "Fuzz Camera", cameras: ["Fuzz Camera"], hasFlash: true, flashMode: "off", hasTorch: false,
            torchMode: "off", zoomValue: 0, isRecording: false, recordedSeconds: 0, audioLevel: nil,
            focusPoint: [0.5, 0.5], exposurePoint: [0.5, 0.5])
    }
}

/// The server, started on first use and kept for the process.
final class Server: Sendable {
    let port: UInt16
    let actions = CountingActions()
    private let server: WebPreviewServer

    init() {
        let root = URL(fileURLWithPath: NSTemporaryDirectory() + "openav-serve-fuzz-\(getpid())")
        let media = root.appendingPathComponent("media")
        try! FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        let files = [
            media.path + "/photo.jpg": Data("PUBLIC-JPEG".utf8), media.path + "/movie.mov": Data("PUBLIC-MOV".utf8),
            root.path + "/secret.jpg": Data(secret), media.path + "/.hidden.jpg": Data(secret),
        ]
        for (path, contents) in files {
            precondition(FileManager.default.createFile(atPath: path, contents: contents), "cannot write \(path)")
        }
        try? FileManager.default.createSymbolicLink(
            atPath: media.path + "/link.jpg", withDestinationPath: "../secret.jpg")
        let layer = AVCaptureVideoPreviewLayer(session: AVCaptureSession())
        server = try! WebPreviewServer(
            layer: layer, actions: actions,
            configuration: .init(host: "127.0.0.1", port: 0, token: token, mediaDirectory: media), log: { _ in })
        let listening = DispatchSemaphore(value: 0)
        let bound = Mutex<UInt16>(0)
        Task { [server] in
            try await server.run { url in
                bound.withLock { $0 = UInt16(url.port ?? 0) }
                listening.signal()
            }
        }
        listening.wait()
        port = bound.withLock { $0 }
    }
}

nonisolated(unsafe) var server: Server?
/// `FUZZ_SHOW_ANSWERS=1`: each answer's status line is printed (to see what a corpus reaches).
let showsAnswers = ProcessInfo.processInfo.environment["FUZZ_SHOW_ANSWERS"] == "1"

/// `%XX` replaced by its byte, as the server's URI and query decoding would.
func percentDecoded(_ bytes: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var index = 0
    func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
    while index < bytes.count {
        if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hex(bytes[index + 1]),
            let low = hex(bytes[index + 2])
        {
            out.append(high << 4 | low)
            index += 3
        } else {
            out.append(bytes[index])
            index += 1
        }
    }
    return out
}

/// Whether the first response in `bytes` is complete: its head, and the body its Content-Length announces (a
/// multipart stream counts once its head is there).
func isComplete(_ bytes: [UInt8]) -> Bool {
    guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return false }
    let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).lowercased()
    if head.contains("multipart/x-mixed-replace") { return true }
    for line in head.split(separator: "\r\n") where line.hasPrefix("content-length:") {
        let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        return bytes.count - end.upperBound >= length
    }
    return !head.contains("transfer-encoding: chunked") || bytes.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8))
}

/// Sends `request` on a fresh connection and returns what came back within the time limits.
func exchange(_ request: [UInt8], port: UInt16) -> [UInt8] {
    let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    precondition(socketFD >= 0, "socket: \(errno)")
    defer { close(socketFD) }
    // Reset on close: no TIME_WAIT left behind by thousands of connections.
    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
    setsockopt(socketFD, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    precondition(connected == 0, "the server stopped accepting connections (errno \(errno))")
    var sent = 0
    while sent < request.count {
        let count = request[sent...].withUnsafeBytes { send(socketFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if count <= 0 { break }
        sent += count
    }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    var halfClosed = false
    while !isComplete(answer) {
        var poller = pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0)
        if poll(&poller, 1, 100) <= 0 {
            // Nothing for 100 ms: an unfinished request waits for more; end it, then give up.
            if halfClosed { break }
            shutdown(socketFD, Int32(SHUT_WR))
            halfClosed = true
            continue
        }
        let count = buffer.withUnsafeMutableBytes { recv(socketFD, $0.baseAddress, $0.count, 0) }
        if count <= 0 { break }
        answer += buffer[..<count]
    }
    return answer
}

func serve(_ data: Data) {
    if server == nil { server = Server() }
    guard let server else { return }
    let request = Array(data)
    let actionsBefore = server.actions.calls.load(ordering: .relaxed)
    let answer = exchange(request, port: server.port)
    if showsAnswers { print(String(decoding: answer.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self)) }
    precondition(answer.firstRange(of: secret) == nil, "a file outside the media directory was served")
    if percentDecoded(request).firstRange(of: Array(token.utf8)) == nil {
        precondition(!answer.starts(with: Array("HTTP/1.1 2".utf8)), "answered 2xx without the token")
        precondition(
            server.actions.calls.load(ordering: .relaxed) == actionsBefore, "a camera action ran without the token")
    }
}

#if FUZZING
    import CFuzzDriver

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
        serve(Data(bytes: bytes, count: count))
        return 0
    }

    /// SwiftPM links an executable's `main` as `ServeRequestFuzzer_main`: it hands the command line to libFuzzer.
    @_cdecl("ServeRequestFuzzer_main")
    public func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        var count = argc
        var arguments = argv
        return LLVMFuzzerRunDriver(&count, &arguments) { data, size in
            guard let data else { return 0 }
            serve(Data(bytes: data, count: size))
            return 0
        }
    }
#else
    @main struct ServeRequestCorpus {
        static func main() { runCorpus(named: "serve", serve) }
    }
#endif
