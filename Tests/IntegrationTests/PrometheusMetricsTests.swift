// Prometheus metrics of the long-running commands, checked by Debian's Prometheus tools: `promtool check metrics` on
// the exposition, and a real Prometheus server scraping `record --metrics` and `serve`'s /metrics (with its bearer
// token) that sees the counters move as frames are written and a viewer come and go.

import Foundation
import Testing
import TestSupport

/// The metrics URL a running avcapture printed on standard error ("Metrics at URL").
private func metricsURL(of tool: RunningTool) throws -> URL {
    var found: URL?
    _ = waitUntil(timeout: 30, every: 0.05) {
        found = tool.standardError.split(separator: "\n").first { $0.hasPrefix("Metrics at ") }
            .flatMap { URL(string: String($0.dropFirst("Metrics at ".count))) }
        return found != nil
    }
    return try #require(found, "no metrics address: \(tool.standardError)")
}

@Suite(
    "Prometheus metrics: promtool and a real Prometheus scraping record and serve", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct PrometheusMetricsTests {
    @Test("record --metrics: a clean exposition; Prometheus sees frames and bytes written grow, the file has them")
    func recordScrapedByPrometheus() throws {
        guard MediaTool.available(for: "PrometheusMetricsTests.record") else { return }
        guard PrometheusServer.isInstalled else {
            return print("Skipping PrometheusMetricsTests: prometheus is not installed (make test installs it)")
        }
        let directory = try scratchURL("record-\(UUID().uuidString)", suite: "metrics-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let tool = try RunningTool(
            ["record", "out.mov", "--preset", "320x240", "--duration", "60", "--metrics", "127.0.0.1:0"],
            in: directory, display: "")
        let url = try metricsURL(of: tool)

        // The exposition as any scraper gets it: every metric described, promtool finds nothing to say.
        var text = ""
        #expect(
            waitUntil(timeout: 20, every: 0.2) {
                text = (try? curl([url.absoluteString]))?.outputText ?? ""
                return (sample("avcapture_frames_written_total", "output=\"AVCaptureMovieFileOutput\"", in: text) ?? 0)
                    > 0
            }, "\(text)")
        let check = try promtoolCheck(text)
        #expect(check.status == 0 && check.said.isEmpty, "promtool: \(check.said)\n\(text)")
        for line in [
            "# TYPE avcapture_frames_captured_total counter", "# TYPE avcapture_encoder_queue_depth gauge",
            "avcapture_frames_dropped_total{output=\"AVCaptureMovieFileOutput\",reason=\"FrameWasLate\"}",
            "# HELP avcapture_disk_free_bytes",
        ] {
            #expect(text.contains(line), "\(line) missing from:\n\(text)")
        }
        #expect((sample("avcapture_disk_free_bytes", "path=", in: text) ?? 0) > 0, "\(text)")

        let prometheus = try PrometheusServer(
            scrapeConfigs: """
                  - job_name: record
                    static_configs:
                      - targets: ["\(url.host!):\(url.port!)"]
                """)
        defer { prometheus.stop() }
        let written = "avcapture_frames_written_total{job=\"record\"}"
        let first = try #require(prometheus.wait(for: written) { $0 > 0 }, "Prometheus never scraped a frame")
        let later = try #require(prometheus.wait(for: written) { $0 > first }, "the frame count did not move")
        #expect(later > first)
        #expect((prometheus.wait(for: "avcapture_bytes_written_total{job=\"record\"}") { $0 > 0 } ?? 0) > 0)
        #expect(prometheus.wait(for: "up{job=\"record\"}") { $0 == 1 } == 1)
        let captured = try #require(prometheus.query("avcapture_frames_captured_total{job=\"record\"}"))
        #expect(captured >= later, "captured \(captured) < written \(later)")

        tool.interrupt()
        #expect(tool.wait() == 0, "\(tool.standardError)")
        // The movie holds at least every frame Prometheus saw written (and those written after its last scrape).
        let frames = try decodedFrameIndices(directory.appendingPathComponent("out.mov"))
        #expect(Double(frames.count) >= later, "the movie has \(frames.count) frames, the metrics said \(later)")
    }

    @Test("publish --metrics (HLS): Prometheus sees the packets written and the bytes sent grow, connected")
    func publishScrapedByPrometheus() throws {
        guard MediaTool.available(for: "PrometheusMetricsTests.publish") else { return }
        guard PrometheusServer.isInstalled else {
            return print("Skipping PrometheusMetricsTests: prometheus is not installed (make test installs it)")
        }
        let directory = try scratchURL("publish-\(UUID().uuidString)", suite: "metrics-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let tool = try RunningTool(
            ["publish", "live.m3u8", "--preset", "320x240", "--duration", "60", "--metrics", "127.0.0.1:0"],
            in: directory, display: "")
        let url = try metricsURL(of: tool)
        let prometheus = try PrometheusServer(
            scrapeConfigs: """
                  - job_name: publish
                    static_configs:
                      - targets: ["\(url.host!):\(url.port!)"]
                """)
        defer { prometheus.stop() }
        let written = "avcapture_frames_written_total{job=\"publish\",output=\"AVCapturePublishingOutput\"}"
        let first = try #require(prometheus.wait(for: written) { $0 > 0 }, "Prometheus never scraped a packet")
        #expect(prometheus.wait(for: written) { $0 > first } != nil, "the packet count did not move")
        let sent = "avcapture_bytes_written_total{job=\"publish\"}"
        let bytes = try #require(prometheus.wait(for: sent) { $0 > 0 })
        #expect(prometheus.wait(for: sent) { $0 > bytes } != nil, "the bytes did not move")
        #expect(prometheus.wait(for: "avcapture_connected{job=\"publish\"}") { $0 == 1 } == 1)
        #expect(prometheus.query("avcapture_reconnects_total{job=\"publish\"}") == 0)
        tool.interrupt()
        #expect(tool.wait() == 0, "\(tool.standardError)")
        #expect(tool.outputLines.contains { $0.hasPrefix("Published to live.m3u8:") }, "\(tool.outputLines)")
    }

    @Test("serve: /metrics behind the token; Prometheus with the bearer token scrapes it, without it is refused")
    func serveScrapedWithBearerToken() throws {
        guard PrometheusServer.isInstalled else {
            return print("Skipping PrometheusMetricsTests: prometheus is not installed (make test installs it)")
        }
        let server = try RunningServer(["--token", "s3cret", "--audio", "none", "--preset", "320x240"])
        defer { _ = server.stop() }
        let target = "127.0.0.1:\(server.port)"
        let prometheus = try PrometheusServer(
            scrapeConfigs: """
                  - job_name: serve
                    authorization:
                      credentials: s3cret
                    static_configs:
                      - targets: ["\(target)"]
                  - job_name: stranger
                    static_configs:
                      - targets: ["\(target)"]
                """)
        defer { prometheus.stop() }
        #expect(prometheus.wait(for: "up{job=\"serve\"}") { $0 == 1 } == 1, "the bearer token was not taken")
        #expect(prometheus.wait(for: "up{job=\"stranger\"}") { $0 == 0 } == 0, "/metrics answered without the token")
        #expect(prometheus.wait(for: "avcapture_viewers{job=\"serve\"}") { $0 == 0 } == 0)
        let viewer = StreamingViewer(port: server.port, path: "/stream?token=s3cret")
        #expect(viewer.status == 200)
        #expect(prometheus.wait(for: "avcapture_viewers{job=\"serve\"}") { $0 == 1 } == 1, "the viewer was not counted")
        #expect((prometheus.wait(for: "avcapture_clients{job=\"serve\"}") { $0 >= 1 } ?? 0) >= 1)
        viewer.close()
        #expect(prometheus.wait(for: "avcapture_viewers{job=\"serve\"}") { $0 == 0 } == 0, "the viewer never left")
        let exposition = try curl(["-H", "Authorization: Bearer s3cret", "http://\(target)/metrics"]).outputText
        let check = try promtoolCheck(exposition)
        #expect(check.status == 0 && check.said.isEmpty, "promtool: \(check.said)\n\(exposition)")
    }

    @Test("--metrics on a port another program holds: a clear refusal (69) before anything is recorded")
    func portInUse() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        try #require(bound, "the test could not hold a port")
        let port = Int(UInt16(bigEndian: address.sin_port))
        let directory = try scratchURL("in-use-\(UUID().uuidString)", suite: "metrics-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let result = try avcapture(
            ["record", "out.mov", "--duration", "2", "--preset", "320x240", "--metrics", "127.0.0.1:\(port)"],
            in: directory)
        #expect(result.status == 69, "\(result.status): \(result.error)")
        #expect(result.error.contains("cannot serve metrics on 127.0.0.1:\(port)"), "\(result.error)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("out.mov").path))
    }
}
