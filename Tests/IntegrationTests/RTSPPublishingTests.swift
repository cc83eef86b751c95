// Publishing to a real RTSP server that takes RECORD: GStreamer's gst-rtsp-server in record mode (interleaved TCP)
// writes what `avcapture publish rtsp://…` sends into an MPEG-TS file that ffprobe reads; the server is killed
// mid-stream and a new one started, and the publisher reconnects (its Prometheus metrics say so) while its local recording,
// from the same encoder, loses no frame.

import Foundation
import Testing
import TestSupport

/// GStreamer's gst-rtsp-server in record mode (Debian's python3 GI bindings), taking ANNOUNCE/RECORD over
/// interleaved TCP at each mount it is given and writing the H.264 and AAC it is sent into that mount's MPEG-TS file,
/// which ffprobe reads. Arguments: the port, optionally `--digest USER PASSWORD` (then required), then `MOUNT=FILE`
/// pairs (`/live=/tmp/x.ts`).
/// (Not `ffmpeg -rtsp_flags listen`: copying what it receives, ffmpeg 5.1 fails on the packets before the first RTCP
/// sender report, which carry no timestamp.)
private let recordServerScript = #"""
    import sys, gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstRtsp", "1.0")
    gi.require_version("GstRtspServer", "1.0")
    from gi.repository import Gst, GstRtsp, GstRtspServer, GLib
    Gst.init(None)
    arguments = sys.argv[2:]
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(sys.argv[1])
    permissions = None
    if arguments[:1] == ["--digest"]:
        # Digest only: a publisher must answer the challenge with the user and password of its URL.
        auth = GstRtspServer.RTSPAuth()
        auth.set_supported_methods(GstRtsp.RTSPAuthMethod.DIGEST)
        token = GstRtspServer.RTSPToken()
        token.set_string("media.factory.role", "publisher")
        auth.add_digest(arguments[1], arguments[2], token)
        server.set_auth(auth)
        permissions = GstRtspServer.RTSPPermissions()
        permissions.add_permission_for_role("publisher", "media.factory.access", True)
        permissions.add_permission_for_role("publisher", "media.factory.construct", True)
        arguments = arguments[3:]
    for mount in arguments:
        name, path = mount.split("=", 1)
        factory = GstRtspServer.RTSPMediaFactory()
        factory.set_transport_mode(GstRtspServer.RTSPTransportMode.RECORD)
        factory.set_protocols(GstRtsp.RTSPLowerTrans.TCP)
        factory.set_launch(
            "( rtph264depay name=depay0 ! h264parse config-interval=-1 ! "
            "video/x-h264,stream-format=byte-stream,alignment=au ! queue ! mpegtsmux name=mux ! filesink location=%s "
            "rtpmp4gdepay name=depay1 ! aacparse ! queue ! mux. )" % path)
        if permissions is not None:
            factory.set_permissions(permissions)
        server.get_mount_points().add_factory(name, factory)
    server.attach(None)
    GLib.MainLoop().run()
    """#

/// gst-rtsp-server in record mode on 127.0.0.1:`port`, writing what each mount is sent into its file (MPEG-TS),
/// requiring `credentials` if given.
final class RTSPRecordServer {
    static let python = "/usr/bin/python3"
    /// Whether Debian's python3 has the GI bindings of gst-rtsp-server (gir1.2-gst-rtsp-server-1.0, python3-gi).
    static var isInstalled: Bool {
        guard FileManager.default.isExecutableFile(atPath: python),
            let result = try? ToolResult.run(
                executable: python, ["-c", "import gi; gi.require_version('GstRtspServer', '1.0')"])
        else { return false }
        return result.status == 0
    }

    let port: Int
    /// Mount path → the file its stream is written to.
    let mounts: [String: URL]
    private let process = Process()

    /// One mount, `/live`, writing `file`.
    convenience init(port: Int, file: URL, credentials: (user: String, password: String)? = nil) throws {
        try self.init(port: port, mounts: ["/live": file], credentials: credentials)
    }

    init(port: Int, mounts: [String: URL], credentials: (user: String, password: String)? = nil) throws {
        (self.port, self.mounts) = (port, mounts)
        let directory = try #require(mounts.values.first).deletingLastPathComponent()
        let script = directory.appendingPathComponent("rtsp-record-server.py")
        try recordServerScript.write(to: script, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments =
            [script.path, String(port)] + (credentials.map { ["--digest", $0.user, $0.password] } ?? [])
            + mounts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.path)" }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try #require(waitUntil(timeout: 10, every: 0.05) { Self.isListening(port) }, "no RTSP server on \(port)")
    }

    /// Whether a TCP socket listens on the port, as the kernel lists them (state 0A).
    static func isListening(_ port: Int) -> Bool {
        let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
        let local = ":" + String(format: "%04X", port) + " "
        return table.split(separator: "\n").dropFirst().contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && (fields[1] + " ").hasSuffix(local) && fields[3] == "0A"
        }
    }

    /// The bytes written for the first mount (the only one, for a server of one).
    var bytes: Int { bytes(of: mounts.keys.sorted()[0]) }

    /// The bytes written so far for `mount`.
    func bytes(of mount: String) -> Int {
        guard let file = mounts[mount] else { return 0 }
        return (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
    }

    /// Kills the server at once, as a crash would.
    func kill() {
        guard process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { kill() }
}

/// The codecs ffprobe reads in `file`, as "codec,type" strings.
func recordedCodecs(_ file: URL) throws -> [String] {
    try MediaTool.ffprobe.run([
        "-v", "error", "-show_entries", "stream=codec_name,codec_type", "-of", "csv=p=0", file.path,
    ]).outputText.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
}

@Suite(
    "Publishing to an RTSP server (ANNOUNCE/RECORD)", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct RTSPPublishingTests {
    @Test("publish rtsp://… to gst-rtsp-server (RECORD): read back; the server killed and restarted; it resumes")
    func publishThroughServerRestart() throws {
        guard MediaTool.available(for: "RTSPPublishingTests") else { return }
        guard RTSPRecordServer.isInstalled else {
            return print(
                "Skipping RTSPPublishingTests: gst-rtsp-server's GI bindings are not installed (make test installs"
                    + " gir1.2-gst-rtsp-server-1.0 and python3-gi)")
        }
        let directory = try scratchURL("rtsp-\(UUID().uuidString)", suite: "rtsp-publishing-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let port = freeLoopbackPort()
        var server = try RTSPRecordServer(port: port, file: directory.appendingPathComponent("first.ts"))
        let tool = try RunningTool(
            [
                "publish", "rtsp://127.0.0.1:\(port)/live", "--preset", "320x240", "--duration", "90", "--record",
                "local.mov", "--metrics", "127.0.0.1:0",
            ], in: directory, display: "")
        defer { _ = tool.wait(timeout: 1) }
        #expect(waitUntil(timeout: 20, every: 0.05) { server.bytes > 40_000 }, "nothing arrived: \(tool.standardError)")
        server.kill()
        server = try RTSPRecordServer(port: port, file: directory.appendingPathComponent("second.ts"))
        #expect(waitUntil(timeout: 30, every: 0.05) { server.bytes > 40_000 }, "no reconnection: \(tool.standardError)")

        // The publisher's own account, scraped while it runs: one reconnection, connected again.
        let address = tool.standardError.split(separator: "\n").first { $0.hasPrefix("Metrics at ") }
            .map { String($0.dropFirst("Metrics at ".count)) }
        let metrics = try curl([try #require(address, "\(tool.standardError)")]).outputText
        let publisher = "output=\"AVCapturePublishingOutput\""
        #expect(sample("avcapture_reconnects_total", publisher, in: metrics) == 1, "\(metrics)")
        #expect(sample("avcapture_connected", publisher, in: metrics) == 1, "\(metrics)")
        let disconnected = sample("avcapture_packets_dropped_total", publisher + ",reason=\"disconnected\"", in: metrics)
        #expect((disconnected ?? 0) > 0, "\(metrics)")

        tool.interrupt()
        #expect(tool.wait() == 0, "\(tool.standardError)")
        let printed = tool.outputLines.joined(separator: "\n")
        #expect(printed.contains("1 reconnection;") && printed.contains("stopped: interrupted"), "\(printed)")
        server.kill()
        for name in ["first.ts", "second.ts"] {
            let found = try recordedCodecs(directory.appendingPathComponent(name))
            #expect(found.contains("h264,video") && found.contains("aac,audio"), "\(name): \(found)")
        }
        let frames = try decodedFrameIndices(directory.appendingPathComponent("local.mov"))
        #expect(frames.count >= 60 && indexSteps(frames).isEmpty, "the local movie lost frames: \(indexSteps(frames))")
    }

    @Test("publish rtsp://user:password@… to a server requiring Digest: refused with a wrong password, and says why")
    func publishWithCredentials() throws {
        guard MediaTool.available(for: "RTSPPublishingTests"), RTSPRecordServer.isInstalled else { return }
        let directory = try scratchURL("rtsp-auth-\(UUID().uuidString)", suite: "rtsp-publishing-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let port = freeLoopbackPort()
        let server = try RTSPRecordServer(
            port: port, file: directory.appendingPathComponent("received.ts"), credentials: ("camera", "s3cret"))
        let refused = try RunningTool(
            ["publish", "rtsp://camera:wrong@127.0.0.1:\(port)/live", "--preset", "320x240", "--duration", "2"],
            in: directory, display: "")
        #expect(refused.wait() == 0, "\(refused.standardError)")
        #expect(server.bytes == 0)
        #expect(
            refused.standardError.contains("401") && refused.standardError.contains("check the user and password"),
            "\(refused.standardError)")
        let accepted = try RunningTool(
            ["publish", "rtsp://camera:s3cret@127.0.0.1:\(port)/live", "--preset", "320x240", "--duration", "3"],
            in: directory, display: "")
        #expect(accepted.wait() == 0, "\(accepted.standardError)")
        #expect(!accepted.standardError.contains("failed"), "\(accepted.standardError)")
        #expect(waitUntil(timeout: 10, every: 0.05) { server.bytes > 20_000 }, "nothing arrived")
        server.kill()
        let found = try recordedCodecs(directory.appendingPathComponent("received.ts"))
        #expect(found.contains("h264,video") && found.contains("aac,audio"), "\(found)")
    }
}
