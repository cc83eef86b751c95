// `avcapture serve` over TLS, checked with curl against a self-signed certificate openssl makes for the test: the
// certificate verifies, plain HTTP and an unverified client get nothing, the token works as a bearer credential and
// as the cookie the first visit sets (Secure, HttpOnly), and the server refuses to listen beyond loopback in clear.

import Foundation
import Testing
import TestSupport

/// A self-signed certificate for 127.0.0.1 and localhost and its key, made by openssl in `directory`.
private func makeCertificate(in directory: URL, name: String = "server") throws -> (certificate: String, key: String) {
    let certificate = directory.appendingPathComponent("\(name).pem").path
    let key = directory.appendingPathComponent("\(name)-key.pem").path
    let result = try ToolResult.run(
        executable: "/usr/bin/openssl",
        [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost", "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", certificate,
        ])
    try #require(result.status == 0, "openssl failed: \(result.error)")
    return (certificate, key)
}

@Suite(
    "avcapture serve over TLS, checked with curl", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct ServeTLSTests {
    @Test("HTTPS with a self-signed certificate: curl verifies it; bearer and cookie carry the token, URLs need not")
    func httpsWithTokenAsBearerAndCookie() throws {
        let directory = try scratchURL("tls-\(UUID().uuidString)", suite: "serve-tls-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let (certificate, key) = try makeCertificate(in: directory)
        let server = try RunningServer([
            "--token", "s3cret", "--tls-cert", certificate, "--tls-key", key, "--audio", "none", "--preset", "320x240",
        ])
        defer { _ = server.stop() }
        let base = "https://127.0.0.1:\(server.port)"
        let listening = server.tool.line(startingWith: "listening on") ?? ""
        #expect(listening.hasPrefix("listening on https://127.0.0.1:"), "\(listening)")

        // The certificate verifies against itself as the only trusted authority; without it, curl refuses (60).
        let trusted = ["--cacert", certificate]
        #expect(try curl(["-o", "/dev/null", "\(base)/status"]).status == 60)
        // Plain HTTP to the TLS port gets no HTTP answer.
        let plain = try curl(["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(server.port)/status"])
        #expect(plain.outputText != "200" && plain.outputText != "401", "plain HTTP answered \(plain.outputText)")

        // No token, a wrong one: 401. The bearer credential: 200, with the camera's status.
        func code(_ extra: [String], _ path: String) throws -> String {
            try curl(trusted + ["-o", "/dev/null", "-w", "%{http_code}"] + extra + [base + path]).outputText
        }
        #expect(try code([], "/status") == "401")
        #expect(try code(["-H", "Authorization: Bearer wrong"], "/status") == "401")
        let status = try curl(trusted + ["-H", "Authorization: Bearer s3cret", "\(base)/status"])
        #expect(status.status == 0 && status.outputText.contains("\"camera\""), "\(status.outputText) \(status.error)")

        // The first visit's address carries the token once: it comes back as a Secure, HttpOnly cookie and a
        // redirect to an address without it; from then on the cookie alone opens every route.
        let jar = directory.appendingPathComponent("cookies.txt").path
        let first = try curl(trusted + ["-D", "-", "-o", "/dev/null", "-c", jar, "\(base)/?token=s3cret"])
        let headers = first.outputText.lowercased()
        #expect(headers.hasPrefix("http/1.1 303"), "\(first.outputText)")
        #expect(headers.contains("location: /\r\n"), "\(first.outputText)")
        let cookie = headers.split(separator: "\r\n").first { $0.hasPrefix("set-cookie: avcapture_token=s3cret") } ?? ""
        #expect(cookie.contains("; secure") && cookie.contains("; httponly") && cookie.contains("samesite=strict"),
            "\(first.outputText)")
        #expect(try code(["-b", jar], "/status") == "200")
        let page = try curl(trusted + ["-b", jar, "\(base)/"])
        #expect(page.outputText.contains("<html") && !page.outputText.contains("s3cret"), "the page carries the token")
        #expect(try code(["-b", jar, "-o", "/dev/null", "--max-time", "2"], "/stream") != "401")
    }

    @Test("refusals: beyond loopback in clear, a key that is not the certificate's, half of the pair; --insecure")
    func refusals() throws {
        let directory = try scratchURL("tls-refusals-\(UUID().uuidString)", suite: "serve-tls-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let (certificate, _) = try makeCertificate(in: directory)
        let (_, otherKey) = try makeCertificate(in: directory, name: "other")

        let clear = try avcapture(["serve", "--listen", "0.0.0.0:0", "--token", "t", "--audio", "none"], in: directory)
        #expect(clear.status == 64, "\(clear.error)")
        #expect(clear.error.contains("--tls-cert") && clear.error.contains("--insecure"), "\(clear.error)")

        let mismatched = try avcapture(
            ["serve", "--listen", "127.0.0.1:0", "--tls-cert", certificate, "--tls-key", otherKey, "--audio", "none"],
            in: directory)
        #expect(mismatched.status == 64 && mismatched.error.contains("does not go with"), "\(mismatched.error)")

        let half = try avcapture(["serve", "--tls-cert", certificate, "--audio", "none"], in: directory)
        #expect(half.status == 64 && half.error.contains("--tls-key"), "\(half.error)")

        // --insecure accepts the risk: it listens (on every address; the test talks to it on loopback only).
        let server = try RunningServer(["--token", "t", "--insecure", "--audio", "none", "--preset", "320x240"])
        #expect(get("/status", port: server.port, extra: "Authorization: Bearer t\r\n") == 200)
        #expect(server.stop() == 0)
    }
}
