// A fleet on one machine: four `avcapture publish` processes (four virtual cameras, one per process, as four
// machines would each have theirs) publishing at once into real servers on loopback: two into nginx with Debian's
// RTMP module, two into GStreamer's gst-rtsp-server taking RECORD. Every stream is read back from its server: the
// RTMP ones live by ffmpeg, the RTSP ones from the files the server wrote by ffprobe and ffmpeg, each holding H.264
// and AAC and the virtual camera's frame indices in order.

import Foundation
import OpenAVCaptureTesting
import TestSupport
import Testing

@Suite(
    "A fleet of four cameras publishing into nginx-rtmp and gst-rtsp-server at once", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct PublishingFleetTests {
    @Test("Four cameras at once: two RTMP into nginx, two RTSP RECORD into gst-rtsp-server; every stream read back")
    func fourCamerasIntoTwoServers() throws {
        guard MediaTool.available(for: "PublishingFleetTests") else { return }
        guard RTMPServer.isInstalled, RTSPRecordServer.isInstalled else {
            return print(
                "Skipping PublishingFleetTests: nginx with libnginx-mod-rtmp, or gst-rtsp-server's GI bindings, is not"
                    + " installed (make test installs nginx-light, libnginx-mod-rtmp, gir1.2-gst-rtsp-server-1.0)")
        }
        let directory = try scratchURL("fleet-\(UUID().uuidString)", suite: "publishing-fleet-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let rtmp = try RTMPServer(port: freeLoopbackPort())
        try rtmp.start()
        defer { rtmp.kill() }
        let rtspMounts = [
            "/cam3": directory.appendingPathComponent("cam3.ts"),
            "/cam4": directory.appendingPathComponent("cam4.ts"),
        ]
        let rtsp = try RTSPRecordServer(port: freeLoopbackPort(), mounts: rtspMounts)
        defer { rtsp.kill() }

        let targets = [
            "rtmp://127.0.0.1:\(rtmp.port)/live/cam1", "rtmp://127.0.0.1:\(rtmp.port)/live/cam2",
            "rtsp://127.0.0.1:\(rtsp.port)/cam3", "rtsp://127.0.0.1:\(rtsp.port)/cam4",
        ]
        let publishers = try targets.map { target in
            try RunningTool(
                ["publish", target, "--preset", "320x240", "--duration", "12"], in: directory, display: "")
        }
        defer { for publisher in publishers { _ = publisher.wait(timeout: 1) } }

        // The RTMP streams are read live from nginx while the cameras publish, both at once.
        #expect(
            waitUntil(timeout: 20, every: 0.1) { rtsp.bytes(of: "/cam3") > 20_000 && rtsp.bytes(of: "/cam4") > 20_000 },
            "the RTSP server got nothing: \(publishers.map(\.standardError))")
        let pulled = ["cam1", "cam2"].map { directory.appendingPathComponent("\($0)-read-back.mkv") }
        let readers = zip(targets.prefix(2), pulled).map { target, file in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
            process.arguments = ["-nostdin", "-y", "-v", "error", "-i", target, "-t", "4", "-c", "copy", file.path]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            return process
        }
        for reader in readers { try reader.run() }
        #expect(readers.map { finish($0) } == [0, 0], "ffmpeg could not read the RTMP streams back from nginx")

        let statuses = publishers.map { $0.wait(timeout: 30) }
        #expect(statuses == [0, 0, 0, 0], "\(publishers.map(\.standardError))")
        for publisher in publishers {
            #expect(!publisher.standardError.contains("failed"), "\(publisher.standardError)")
        }
        rtsp.kill()

        let files = pulled + ["/cam3", "/cam4"].compactMap { rtspMounts[$0] }
        for (name, file) in zip(["cam1 (RTMP)", "cam2 (RTMP)", "cam3 (RTSP)", "cam4 (RTSP)"], files) {
            let codecs = try recordedCodecs(file)
            #expect(codecs.contains("h264,video") && codecs.contains("aac,audio"), "\(name): \(codecs)")
            let indices = try decodedFrameIndices(file)
            let read = indices.compactMap { $0 }
            print("fleet \(name): \(indices.count) frames, indices \(read.first ?? 0)…\(read.last ?? 0)")
            // Seconds of a 30 fps camera; a loaded machine may drop some at capture, never most.
            #expect(read.count >= 60, "\(name): \(indices.count) frames")
            #expect(zip(read, read.dropFirst()).allSatisfy { $0 < $1 }, "\(name): indices out of order: \(read)")
        }
    }
}
