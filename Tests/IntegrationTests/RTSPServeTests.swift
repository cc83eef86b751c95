// `avcapture serve --rtsp` (AVCaptureRTSPServer) read by real RTSP clients on loopback: FFmpeg over TCP
// (interleaved) and over UDP and GStreamer's rtspsrc, at the same time; the frames they decode carry the virtual
// camera's frame indices, in order, and the flash frames meet the virtual microphone's beeps within a frame. Digest
// credentials are refused when missing or wrong and taken when right; a client that stops reading is dropped while
// another goes on; malformed requests get a 4xx and leave the stream alone.

import Foundation
import OpenAVCaptureTesting
import TestSupport
import Testing

/// A running `avcapture serve --rtsp 127.0.0.1:0`, its RTSP address read from the "serving RTSP on" line.
final class RunningRTSPServer {
    let server: RunningServer
    let url: String
    var port: Int { URL(string: url)?.port ?? 0 }

    init(_ extra: [String] = [], environment: [String: String] = [:]) throws {
        server = try RunningServer(
            ["--rtsp", "127.0.0.1:0", "--preset", "320x240"] + extra, display: "", environment: environment)
        let line = try #require(server.tool.line(startingWith: "serving RTSP on"), "\(server.tool.standardError)")
        url = String(line.dropFirst("serving RTSP on ".count))
    }

    /// With credentials in the URL, as NVRs take them.
    func url(user: String, password: String) -> String {
        url.replacingOccurrences(of: "rtsp://", with: "rtsp://\(user):\(password)@")
    }

    var log: String { server.tool.standardError }

    func stop() -> Int32 { server.stop() }
}

/// `ffmpeg` pulling `seconds` of the stream into a Matroska file (`-c copy`: the packets as the server sent them).
func pullWithFFmpeg(_ url: String, transport: String, seconds: Int, into file: URL) -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
    process.arguments = [
        "-nostdin", "-y", "-v", "error", "-rtsp_transport", transport, "-i", url, "-t", String(seconds), "-map", "0",
        "-c", "copy", file.path,
    ]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    return process
}

/// GStreamer's rtspsrc (UDP first, as it prefers) depayloading both tracks into Matroska (each pad links to the
/// depayloader its caps fit) and ending by itself: `identity eos-after` ends each track after `seconds` of buffers
/// (30 pictures a second, 46.875 AAC frames), so the file is finished without a signal.
func pullWithGStreamer(_ url: String, seconds: Int, into file: URL) -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
    process.arguments =
        ["rtspsrc", "location=\(url)", "latency=300", "name=src", "src.", "!", "rtph264depay", "!", "h264parse"]
        + ["!", "identity", "eos-after=\(seconds * 30)", "!", "matroskamux", "name=mux", "!", "filesink"]
        + ["location=\(file.path)", "src.", "!", "rtpmp4gdepay", "!", "aacparse", "!", "identity"]
        + ["eos-after=\(seconds * 47)", "!", "mux."]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    return process
}

/// Waits for a client to end by itself, killing it after `timeout` seconds; its exit status (-1 when killed).
func finish(_ process: Process, timeout: TimeInterval = 30) -> Int32 {
    if !waitUntil(timeout: timeout, every: 0.1, { !process.isRunning }) {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return -1
    }
    process.waitUntilExit()
    return process.terminationStatus
}

/// What a pulled file holds: its codecs, the frame indices of its decoded pictures, and its A/V offsets.
struct PulledStream {
    let codecs: [String]
    let indices: [UInt32]
    let frameCount: Int
    /// Beep − flash for every flash frame, seconds.
    let offsets: [Double]

    init(_ url: URL) throws {
        let probe = try FFprobeReport(url)
        codecs = probe.streams.compactMap { $0["codec_name"] as? String }
        let decoded = try decodedFrameIndices(url)
        indices = decoded.compactMap { $0 }
        frameCount = decoded.count
        let flashes = try AVSyncTests.flashTimes(url).flashes
        let (beeps, soundEnd) = try Self.beepTimes(url)
        // A flash the sound does not reach has no beep to meet (seen: GStreamer's file ending its sound before its
        // last flash, which then met the beep a second before): only flashes a tenth of a second inside it count.
        offsets = flashes.filter { $0 + 0.1 <= soundEnd }.compactMap { flash in
            beeps.min { abs($0 - flash) < abs($1 - flash) }.map { $0 - flash }
        }
    }

    /// The onset of every beep, seconds on the file's timeline, and where the sound ends. The sound is placed by its timestamps
    /// (`aresample=async=1`, from time 0 with `-copyts`), so a packet a client left out (a jitter buffer drops what
    /// comes too late) is silence of its length, not a shift of everything after it.
    static func beepTimes(_ url: URL) throws -> (onsets: [Double], end: Double) {
        let decoded = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-copyts", "-i", url.path, "-map", "0:a:0", "-af",
            "aresample=async=1:first_pts=0", "-ac", "1", "-ar", "48000", "-f", "f32le", "-",
        ])
        guard decoded.status == 0 else {
            throw MediaToolFailure(
                description: "ffmpeg could not decode \(url.lastPathComponent)'s sound: \(decoded.error)")
        }
        let samples = decoded.output.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        return (VirtualAudioReader.findBeeps(samples: samples, sampleRate: 48_000), Double(samples.count) / 48_000)
    }

    /// Whether the indices only go up.
    var inOrder: Bool { zip(indices, indices.dropFirst()).allSatisfy { $0 < $1 } }
}

@Suite(
    "avcapture serve --rtsp: real RTSP clients", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct RTSPServeTests {
    /// One frame of the virtual camera (30 fps): the A/V offset a client may show.
    static let frame = 1.0 / 30

    @Test("ffprobe reads H.264 and AAC with the parameter sets from the SDP, over TCP")
    func ffprobeOverTCP() throws {
        guard MediaTool.available(for: "RTSPServeTests") else { return }
        let server = try RunningRTSPServer()
        defer { _ = server.stop() }
        let probe = try MediaTool.ffprobe.run([
            "-v", "error", "-rtsp_transport", "tcp", "-show_streams", "-of", "json", server.url,
        ])
        #expect(probe.status == 0, "\(probe.error)")
        let text = probe.outputText
        #expect(text.contains("\"codec_name\": \"h264\"") && text.contains("\"codec_name\": \"aac\""), "\(text)")
        #expect(text.contains("\"width\": 320") && text.contains("\"height\": 240"), "\(text)")
    }

    @Test("FFmpeg over TCP, FFmpeg over UDP and GStreamer's rtspsrc at once: frames in order, A/V in sync")
    func threeClientsAtOnce() throws {
        guard MediaTool.available(for: "RTSPServeTests"),
            FileManager.default.fileExists(atPath: "/usr/bin/gst-launch-1.0")
        else { return }
        let server = try RunningRTSPServer()
        defer { _ = server.stop() }
        let directory = try scratchURL("rtsp-clients-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let files = ["tcp", "udp", "gst"].map { directory.appendingPathComponent("\($0).mkv") }
        let tcp = pullWithFFmpeg(server.url, transport: "tcp", seconds: 5, into: files[0])
        let udp = pullWithFFmpeg(server.url, transport: "udp", seconds: 5, into: files[1])
        let gst = pullWithGStreamer(server.url, seconds: 5, into: files[2])
        for process in [tcp, udp, gst] { try process.run() }
        let statuses = [tcp, udp, gst].map { finish($0) }
        #expect(statuses == [0, 0, 0], "server log: \(server.log)")

        for (name, file) in zip(["ffmpeg tcp", "ffmpeg udp", "gstreamer"], files) {
            let pulled = try PulledStream(file)
            let range = "\(pulled.indices.first ?? 0)…\(pulled.indices.last ?? 0)"
            print(
                "RTSP \(name): \(pulled.frameCount) frames, indices \(range),"
                    + " A/V offsets ms \(pulled.offsets.map { String(format: "%.1f", $0 * 1000) })")
            #expect(pulled.codecs.sorted() == ["aac", "h264"], "\(name): \(pulled.codecs)")
            #expect(pulled.inOrder, "\(name): indices out of order: \(pulled.indices)")
            // Seconds of stream at 30 fps; a loaded machine may drop some at capture, never most.
            #expect(pulled.frameCount >= 60, "\(name): \(pulled.frameCount) frames")
            #expect(!pulled.offsets.isEmpty, "\(name): no flash frame met a beep")
            // Every client holds every offset within a frame from the first flash: a client starts live at a key
            // frame, so no burst of old packets skews its timing, and only once both tracks have sent, so its
            // RTP-Info and first sender reports time both (RTPStreamFanout).
            #expect(
                !pulled.offsets.isEmpty && pulled.offsets.allSatisfy { abs($0) <= Self.frame },
                "\(name): A/V offsets \(pulled.offsets)")
        }
        #expect(server.stop() == 0)
    }

    @Test("Digest: refused without credentials or with a wrong password, served with the right ones")
    func digestAuthentication() throws {
        guard MediaTool.available(for: "RTSPServeTests") else { return }
        let server = try RunningRTSPServer(
            ["--rtsp-user", "nvr"], environment: ["AVCAPTURE_RTSP_PASSWORD": "pa55word"])
        defer { _ = server.stop() }
        func probe(_ url: String) throws -> ToolResult {
            try MediaTool.ffprobe.run(["-v", "error", "-rtsp_transport", "tcp", "-show_streams", "-of", "json", url])
        }
        let anonymous = try probe(server.url)
        #expect(anonymous.status != 0)
        #expect(anonymous.error.contains("401"), "\(anonymous.error)")
        let wrong = try probe(server.url(user: "nvr", password: "guess"))
        #expect(wrong.status != 0)
        #expect(wrong.error.contains("401"), "\(wrong.error)")
        let right = try probe(server.url(user: "nvr", password: "pa55word"))
        #expect(right.status == 0, "\(right.error)")
        #expect(right.outputText.contains("\"codec_name\": \"h264\""))
        #expect(server.log.contains("wrong credentials"), "\(server.log)")
    }

    @Test("A client that stops reading is dropped; another client's frames go on meanwhile")
    func stalledClient() throws {
        guard MediaTool.available(for: "RTSPServeTests") else { return }
        // The smallest queue, so the stalled client's kernel buffers and its queue fill within seconds.
        let server = try RunningRTSPServer(["--rtsp-client-queue", "65536"])
        defer { _ = server.stop() }
        let stalled = try RawRTSPClient(port: server.port)
        try stalled.play(server.url)
        // It reads nothing more from here on.
        let file = try scratchURL("rtsp-beside-stalled-\(UUID().uuidString).mkv")
        let pull = pullWithFFmpeg(server.url, transport: "tcp", seconds: 6, into: file)
        try pull.run()
        #expect(finish(pull) == 0)
        let pulled = try PulledStream(file)
        #expect(pulled.inOrder)
        #expect(pulled.frameCount >= 100, "\(pulled.frameCount) frames beside a stalled client")
        #expect(waitUntil(timeout: 60, every: 0.2) { server.log.contains("RTSP: dropped") }, "\(server.log)")
        withExtendedLifetime(stalled) {}
    }

    @Test("Malformed requests get a 4xx naming the fault and a closed connection; the stream goes on")
    func malformedRequests() throws {
        guard MediaTool.available(for: "RTSPServeTests") else { return }
        let server = try RunningRTSPServer()
        defer { _ = server.stop() }
        let before = try MediaTool.ffprobe.run(["-v", "error", "-rtsp_transport", "tcp", "-show_streams", server.url])
        #expect(before.status == 0, "\(before.error)")
        for (request, status) in [
            ("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400), ("OPTIONS * RTSP/2.0\r\nCSeq: 1\r\n\r\n", 505),
            ("DESCRIBE rtsp://127.0.0.1/other RTSP/1.0\r\nCSeq: 2\r\n\r\n", 404),
            ("PLAY \(server.url) RTSP/1.0\r\nCSeq: 3\r\nSession: nope\r\n\r\n", 454),
            ("SETUP \(server.url)/streamid=0 RTSP/1.0\r\nCSeq: 4\r\nTransport: RTP/AVP;multicast\r\n\r\n", 461),
        ] {
            let client = try RawRTSPClient(port: server.port)
            let answer = try client.exchange(request)
            #expect(answer.status == status, "\(request.debugDescription): \(answer.text)")
        }
        let probe = try MediaTool.ffprobe.run(["-v", "error", "-rtsp_transport", "tcp", "-show_streams", server.url])
        #expect(probe.status == 0, "after the bad requests: \(probe.error)")
    }

    @Test("More clients than --rtsp-max-clients are refused with 453 and a log line; the one playing goes on")
    func tooManyClients() throws {
        let server = try RunningRTSPServer(["--rtsp-max-clients", "1"])
        defer { _ = server.stop() }
        let first = try RawRTSPClient(port: server.port)
        try first.play(server.url)
        let second = try RawRTSPClient(port: server.port)
        #expect(throws: RawRTSPClient.Failure.self) { try second.play(server.url) }
        #expect(second.lastStatus == 453)
        // The log line comes through the tool's standard error, read on another thread.
        #expect(waitUntil(timeout: 10) { server.log.contains("1 are playing already") }, "\(server.log)")
        #expect(first.receivesMedia(), "the playing client's stream stopped")
    }

    @Test("Beyond loopback without credentials, or on a port in use, serve refuses to start and says why")
    func refusals() throws {
        let directory = try scratchURL("rtsp-refusals")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let open = try avcapture(["serve", "--listen", "127.0.0.1:0", "--rtsp", "0.0.0.0:0"], in: directory)
        #expect(open.status != 0)
        #expect(open.error.contains("user and password"), "\(open.error)")
        let server = try RunningRTSPServer()
        defer { _ = server.stop() }
        let busy = try avcapture(
            ["serve", "--listen", "127.0.0.1:0", "--rtsp", "127.0.0.1:\(server.port)"], in: directory)
        #expect(busy.status != 0)
        #expect(busy.error.contains("cannot serve RTSP"), "\(busy.error)")
    }
}
