// Live publishing (beyond Apple) against real servers started on loopback by the tests: an HLS playlist read back
// by ffprobe and ffmpeg, nginx with Debian's RTMP module and srt-live-transmit, each killed and restarted
// mid-stream while the local recording, written from the same encoder, goes on without a gap.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing
import TestSupport

/// A loopback port for a server of this test process (pid-derived, so parallel runs on one machine do not meet).
private func testPort(_ offset: Int) -> Int { 20_000 + Int(getpid() % 4000) * 4 + offset }

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
private func accepts(_ port: Int) -> Bool {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}


/// nginx with libnginx-mod-rtmp, in the foreground, serving application `live` on 127.0.0.1:`port`.
final class RTMPServer {
    static let nginx = "/usr/sbin/nginx"
    static let module = "/usr/lib/nginx/modules/ngx_rtmp_module.so"
    static var isInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: nginx) && FileManager.default.fileExists(atPath: module)
    }

    let port: Int
    let directory: URL
    private var process: Process?

    init(port: Int) throws {
        self.port = port
        directory = try scratchURL("nginx-\(port)", suite: "publishing-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let configuration = """
            load_module \(Self.module);
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(directory.path)/nginx.pid;
            error_log \(directory.path)/error.log;
            events { worker_connections 64; }
            rtmp { server { listen 127.0.0.1:\(port); application live { live on; record off; } } }
            """
        try configuration.write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
    }

    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.nginx)
        process.arguments = ["-p", directory.path, "-c", directory.appendingPathComponent("nginx.conf").path, "-e",
                             directory.appendingPathComponent("error.log").path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        try #require(waitUntil(timeout: 10, every: 0.05) { accepts(port) }, "nginx never listened on \(port)")
    }

    /// Kills the server at once, as a crash would.
    func kill() {
        guard let process, process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { kill() }
}

/// The codecs ffprobe reads from `url` (a live stream or a playlist), as "codec:type" strings.
private func probedCodecs(_ url: String) throws -> [String] {
    let result = try MediaTool.ffprobe.run([
        "-v", "error", "-rw_timeout", "8000000", "-show_entries", "stream=codec_name,codec_type", "-of", "csv=p=0", url,
    ])
    return result.outputText.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
}

@Suite("Live publishing: HLS and RTMP to real servers on loopback, through the API", .serialized)
struct PublishingTests {
    @Test("HLS: a rolling playlist of CMAF segments ffprobe and ffmpeg read, the local movie from the same encoder")
    func hlsPlaylist() throws {
        guard MediaTool.available(for: "PublishingTests.hlsPlaylist") else { return }
        let directory = try scratchURL("hls", suite: "publishing-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let playlist = directory.appendingPathComponent("live.m3u8")
        let local = directory.appendingPathComponent("local.mov")
        let output = AVCapturePublishingOutput(url: playlist.path)
        output.segmentDuration = 1
        output.playlistSize = 3
        output.recordingURL = local
        let session = try makeSession(
            preset: .qvga320x240, devices: [VirtualDevices.back, VirtualDevices.microphone], outputs: [output])
        session.startRunning()
        #expect(waitUntil(timeout: 15, every: 0.05) { output.statistics.packetsSent >= 400 }, "\(output.statistics)")
        output.stopPublishing()
        session.stopRunning()
        let statistics = output.statistics
        #expect(statistics.totalDroppedPackets == 0, "\(statistics.droppedPackets)")
        #expect(output.recordingError == nil, "\(String(describing: output.recordingError))")
        let text = try String(contentsOf: playlist, encoding: .utf8)
        #expect(text.contains("#EXT-X-ENDLIST") && text.contains("#EXT-X-MAP:URI=\"live-init.mp4\""), "\(text)")
        #expect(text.components(separatedBy: "#EXTINF").count - 1 == 3, "\(text)")
        #expect(!text.contains("live-0.m4s"), "the oldest segment is still listed: \(text)")
        let codecs = try probedCodecs(playlist.path)
        #expect(codecs.contains("h264,video") && codecs.contains("aac,audio"), "\(codecs)")
        #expect(try ffmpegDecodeErrors(playlist).isEmpty)
        // The local movie: every frame the encoder made, none missing.
        let frames = try decodedFrameIndices(local)
        #expect(frames.count >= 100, "\(frames.count) frames")
        #expect(indexSteps(frames).isEmpty, "the local movie's frame indices jump: \(indexSteps(frames))")
    }

    @Test("RTMP to nginx: read back by ffprobe, the server killed and restarted, publishing resumes; the file has no gap")
    func rtmpServerRestart() throws {
        guard MediaTool.available(for: "PublishingTests.rtmpServerRestart") else { return }
        guard RTMPServer.isInstalled else {
            print("Skipping PublishingTests.rtmpServerRestart: nginx or libnginx-mod-rtmp is not installed (make test installs them)")
            return
        }
        let server = try RTMPServer(port: testPort(0))
        try server.start()
        let stream = "rtmp://127.0.0.1:\(server.port)/live/test"
        let local = server.directory.appendingPathComponent("local.mov")
        let output = AVCapturePublishingOutput(url: stream)
        output.recordingURL = local
        let session = try makeSession(
            preset: .qvga320x240, devices: [VirtualDevices.back, VirtualDevices.microphone], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        #expect(waitUntil(timeout: 15, every: 0.05) { output.statistics.packetsSent >= 60 }, "\(output.statistics)")
        let before = try probedCodecs(stream)
        #expect(before.contains("h264,video") && before.contains("aac,audio"), "before the restart: \(before)")

        server.kill()
        #expect(waitUntil(timeout: 15, every: 0.05) { !output.statistics.isConnected }, "the output never noticed the server was gone")
        #expect(waitUntil(timeout: 15, every: 0.05) { output.statistics.droppedPackets["disconnected", default: 0] > 0 })
        try server.start()
        #expect(waitUntil(timeout: 20, every: 0.05) { output.statistics.reconnections >= 1 }, "no reconnection: \(output.statistics)")
        let sentAfter = output.statistics.packetsSent
        #expect(waitUntil(timeout: 15, every: 0.05) { output.statistics.packetsSent >= sentAfter + 60 }, "\(output.statistics)")
        let after = try probedCodecs(stream)
        #expect(after.contains("h264,video") && after.contains("aac,audio"), "after the restart: \(after)")
        output.stopPublishing()
        session.stopRunning()

        #expect(output.recordingError == nil, "\(String(describing: output.recordingError))")
        let frames = try decodedFrameIndices(local)
        #expect(indexSteps(frames).isEmpty, "the local movie lost frames while the server was away")
    }
}

@Suite(
    "Live publishing through avcapture publish", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct PublishingToolTests {
    @Test("publish DIR/live.m3u8 --duration 3 --segment-duration 1 --record local.mov: a playlist and a movie")
    func hls() throws {
        guard MediaTool.available(for: "PublishingToolTests.hls") else { return }
        let directory = try scratchURL("hls-cli", suite: "publishing-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let result = try avcapture(
            [
                "publish", "live.m3u8", "--preset", "320x240", "--duration", "3", "--segment-duration", "1",
                "--record", "local.mov",
            ], in: directory)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.outputText.contains("Published to live.m3u8:") && result.outputText.contains("stopped: reached --duration"),
                "\(result.outputText)")
        let codecs = try probedCodecs(directory.appendingPathComponent("live.m3u8").path)
        #expect(codecs.contains("h264,video") && codecs.contains("aac,audio"), "\(codecs)")
        let frames = try decodedFrameIndices(directory.appendingPathComponent("local.mov"))
        #expect(frames.count >= 60 && indexSteps(frames).isEmpty, "\(frames.count) frames")
        try expectGStreamerReadsBack(directory.appendingPathComponent("live.m3u8"), width: 320, height: 240)
    }

    /// GStreamer's HLS demuxer reads the playlist and its fMP4 segments (filesrc → hlsdemux → qtdemux → avdec_h264):
    /// as many pictures as ffprobe counts in the playlist, each with the virtual camera's frame index, in order.
    private func expectGStreamerReadsBack(_ playlist: URL, width: Int, height: Int) throws {
        let launch = "/usr/bin/gst-launch-1.0"
        guard FileManager.default.isExecutableFile(atPath: launch) else {
            return print("Skipping the GStreamer read-back: \(launch) not installed (make test installs gstreamer1.0-tools)")
        }
        let raw = playlist.deletingLastPathComponent().appendingPathComponent("gstreamer.gray")
        let result = try ToolResult.run(
            executable: launch,
            [
                "-q", "filesrc", "location=\(playlist.path)", "!", "hlsdemux", "!", "qtdemux", "!", "h264parse", "!",
                "avdec_h264", "!", "videoconvert", "!", "video/x-raw,format=GRAY8", "!", "filesink",
                "location=\(raw.path)",
            ])
        try #require(result.status == 0, "gst-launch-1.0 failed: \(result.error)")
        let pictures = try Data(contentsOf: raw)
        let frameSize = width * height
        #expect(pictures.count % frameSize == 0, "\(pictures.count) bytes are not whole \(width)x\(height) pictures")
        let counted = try MediaTool.ffprobe.run([
            "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames",
            "-of", "csv=p=0", playlist.path,
        ]).outputText.split(whereSeparator: \.isNewline).first.flatMap { Int($0) }  // the count comes twice
        #expect(
            pictures.count / frameSize == counted, "GStreamer \(pictures.count / frameSize), ffprobe \(counted ?? -1)")
        let indices = stride(from: 0, to: pictures.count - frameSize + 1, by: frameSize).map { start in
            VirtualFrameReader.readFrameIndex(
                fromLuma: [UInt8](pictures[start..<start + frameSize]), width: width, height: height)
        }
        // The camera flashes once a second (a white picture, no code): at most that many pictures without one.
        let read = indices.compactMap { $0 }
        #expect(
            indices.count - read.count <= indices.count / 30 + 1,
            "\(indices.count - read.count) of \(indices.count) pictures without a readable frame index")
        #expect(zip(read, read.dropFirst()).allSatisfy { $0 < $1 }, "frame indices out of order: \(read)")
    }

    @Test("publish srt://…?mode=caller to srt-live-transmit: read back, the listener killed and restarted, publishing resumes")
    func srtListenerRestart() throws {
        guard MediaTool.available(for: "PublishingToolTests.srtListenerRestart") else { return }
        let transmit = "/usr/bin/srt-live-transmit"
        guard FileManager.default.isExecutableFile(atPath: transmit) else {
            print("Skipping PublishingToolTests.srtListenerRestart: srt-live-transmit (srt-tools) is not installed (make test installs it)")
            return
        }
        let port = testPort(1)
        let directory = try scratchURL("srt", suite: "publishing-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        /// A listener that writes what it receives into `name`.
        func listen(into name: String) throws -> Process {
            let file = directory.appendingPathComponent(name)
            try #require(FileManager.default.createFile(atPath: file.path, contents: nil))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: transmit)
            process.arguments = ["-q", "srt://127.0.0.1:\(port)?mode=listener", "file://con"]
            process.standardOutput = try FileHandle(forWritingTo: file)
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        func stop(_ process: Process) {
            guard process.isRunning else { return }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        /// Whether a UDP socket is bound to the port, as the kernel lists them (SRT runs over UDP).
        func listening() -> Bool {
            let table = (try? String(contentsOfFile: "/proc/net/udp", encoding: .utf8)) ?? ""
            let local = ":" + String(format: "%04X", port) + " "
            return table.split(separator: "\n").dropFirst().contains { $0.contains(local) }
        }
        var listener = try listen(into: "first.ts")
        defer { stop(listener) }
        try #require(waitUntil(timeout: 10, listening), "srt-live-transmit never bound port \(port)")
        let publisher = Process()
        publisher.executableURL = URL(fileURLWithPath: toolPath!)
        publisher.arguments = [
            "publish", "srt://127.0.0.1:\(port)?mode=caller", "--preset", "320x240", "--duration", "16",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["OPENAV_DEVICES"] = "virtual"
        publisher.environment = environment
        let printed = Pipe()
        publisher.standardOutput = printed
        publisher.standardError = FileHandle.nullDevice
        try publisher.run()
        defer { publisher.killAndReap() }
        let first = directory.appendingPathComponent("first.ts")
        #expect(waitUntil(timeout: 15, every: 0.05) { ((try? FileManager.default.attributesOfItem(atPath: first.path)[.size] as? Int) ?? 0) > 60_000 })
        stop(listener)
        // Restarted at once: the publisher's connection is gone with the process that held it, and the new
        // listener knows nothing of it, so the publisher must notice and reconnect however soon it comes back.
        listener = try listen(into: "second.ts")
        let output = String(decoding: printed.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        publisher.waitUntilExit()
        #expect(publisher.terminationStatus == 0, "\(output)")
        #expect(output.contains("1 reconnection;") && output.contains("disconnected"), "\(output)")
        stop(listener)
        for name in ["first.ts", "second.ts"] {
            let codecs = try probedCodecs(directory.appendingPathComponent(name).path)
            #expect(codecs.contains("h264,video") && codecs.contains("aac,audio"), "\(name): \(codecs)")
        }
    }
}
