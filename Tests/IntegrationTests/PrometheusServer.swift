// Debian's Prometheus server and promtool, driven by the metrics tests: a real scraper started on loopback with a
// configuration of the test's, asked through its HTTP API what it scraped.

import Foundation
import Testing
import TestSupport

/// A loopback TCP port free now (the kernel's pick for port 0, released at once for the server to take).
func freeLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 ? getsockname(fd, pointer, &length) : -1
        }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// curl (Debian's): `arguments` then the URL; the body and the status curl exited with.
func curl(_ arguments: [String]) throws -> ToolResult {
    try ToolResult.run(executable: "/usr/bin/curl", ["-sS", "--max-time", "10"] + arguments)
}

/// `promtool check metrics` on an exposition: its exit status and what it said (nothing when the text is clean).
func promtoolCheck(_ exposition: String) throws -> (status: Int32, said: String) {
    let file = try scratchURL("exposition-\(UUID().uuidString).txt", suite: "metrics-tests")
    try exposition.write(to: file, atomically: true, encoding: .utf8)
    let result = try ToolResult.run(
        executable: "/bin/sh", ["-c", "/usr/bin/promtool check metrics < '\(file.path)'"])
    return (result.status, result.outputText + result.error)
}

/// The value of the sample `name{labels}` in an exposition (labels as written, e.g.
/// `output="AVCaptureMovieFileOutput"`; a prefix of them matches).
func sample(_ name: String, _ labels: String = "", in exposition: String) -> Double? {
    let prefix = labels.isEmpty ? name + " " : name + "{" + labels
    for line in exposition.split(separator: "\n") where line.hasPrefix(prefix) {
        if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { return value }
    }
    return nil
}

/// Prometheus 2 (`/usr/bin/prometheus`) scraping what `scrapeConfigs` (YAML under `scrape_configs:`) names, every
/// second, storing in a scratch directory, its API on 127.0.0.1.
final class PrometheusServer {
    static let binary = "/usr/bin/prometheus"
    static let promtool = "/usr/bin/promtool"
    static var isInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: binary) && FileManager.default.isExecutableFile(atPath: promtool)
    }

    let port = freeLoopbackPort()
    private let process = Process()

    init(scrapeConfigs: String) throws {
        let directory = try scratchURL("prometheus-\(UUID().uuidString)", suite: "metrics-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let configuration = directory.appendingPathComponent("prometheus.yml")
        try """
            global:
              scrape_interval: 1s
              scrape_timeout: 1s
            scrape_configs:
            \(scrapeConfigs)
            """.write(to: configuration, atomically: true, encoding: .utf8)
        let check = try ToolResult.run(executable: Self.promtool, ["check", "config", configuration.path])
        try #require(check.status == 0, "promtool rejects the test's configuration: \(check.outputText) \(check.error)")
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = [
            "--config.file=\(configuration.path)",
            "--storage.tsdb.path=\(directory.appendingPathComponent("data").path)",
            "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try #require(
            waitUntil(timeout: 30, every: 0.2) { (try? curl(["-f", "http://127.0.0.1:\(port)/-/ready"]))?.status == 0 },
            "Prometheus never became ready on port \(port)")
    }

    /// The value of the first series an instant query returns, or nil (no series yet).
    func query(_ expression: String) -> Double? {
        guard
            let result = try? curl([
                "-G", "http://127.0.0.1:\(port)/api/v1/query", "--data-urlencode", "query=\(expression)",
            ]), result.status == 0,
            let document = try? JSONSerialization.jsonObject(with: result.output) as? [String: Any],
            let data = document["data"] as? [String: Any], let series = data["result"] as? [[String: Any]],
            let value = series.first?["value"] as? [Any], let text = value.last as? String
        else { return nil }
        return Double(text)
    }

    /// Waits (up to `timeout` seconds) for `expression` to have a value meeting `condition`; the value seen.
    func wait(
        for expression: String, timeout: TimeInterval = 30, _ condition: (Double) -> Bool
    ) -> Double? {
        var seen: Double?
        _ = waitUntil(timeout: timeout, every: 0.25) {
            seen = query(expression)
            return seen.map(condition) ?? false
        }
        return seen
    }

    func stop() {
        process.killAndReap()
    }

    deinit { stop() }
}
