// `avcapture serve` over TLS in a real headless Chromium (Debian's chromium, chromium-driver and python3-selenium)
// that trusts the test's self-signed certificate by its public key: the first visit's token becomes the cookie, the
// address loses it, and the preview and the status polling work with no token in any URL.

import Foundation
import Testing
import TestSupport

/// The browser's side. Arguments: the first visit's address (with ?token=), the certificate's SPKI hash, a profile
/// directory. Prints one JSON object; exit status 3 when the browser cannot start (the test then skips).
private let tlsBrowserScript = #"""
    import json, sys
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url, spki, profile = sys.argv[1], sys.argv[2], sys.argv[3]
    options = webdriver.ChromeOptions()
    # Trust exactly this certificate (Chromium honours the SPKI list only with a profile of the caller's own).
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=800,600", "--user-data-dir=" + profile,
                     "--ignore-certificate-errors-spki-list=" + spki]:
        options.add_argument(argument)
    try:
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    except Exception as error:
        print("the browser did not start: %s" % str(error).splitlines()[0], file=sys.stderr)
        sys.exit(3)
    try:
        wait = WebDriverWait(driver, 20)
        driver.get(url)
        preview = driver.find_element(By.ID, "preview")
        wait.until(lambda d: d.execute_script("return arguments[0].naturalWidth", preview) > 0)
        wait.until(lambda d: "fps" in d.find_element(By.ID, "stats").text)
        print(json.dumps({
            "url": driver.current_url,
            "natural": driver.execute_script("return [arguments[0].naturalWidth, arguments[0].naturalHeight]", preview),
            "scriptCookies": driver.execute_script("return document.cookie"),
            "cookies": driver.get_cookies(),
            "requested": driver.execute_script(
                "return performance.getEntriesByType('resource').map(e => e.name).concat([location.href])"),
        }))
    finally:
        driver.quit()
    """#

@Suite(
    "avcapture serve over TLS in Chromium", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct ServeTLSBrowserTests {
    @Test("Chromium trusting the certificate: the token becomes a Secure HttpOnly cookie, no URL carries it")
    func cookieInsteadOfTokenInURLs() throws {
        if let missing = CameraAppBrowserTests.missing { return print("Skipping serve over TLS in Chromium: \(missing)") }
        let directory = try scratchURL("tls-browser-\(UUID().uuidString)", suite: "serve-tls-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificate = directory.appendingPathComponent("server.pem").path
        let key = directory.appendingPathComponent("server-key.pem").path
        let made = try ToolResult.run(
            executable: "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext",
                "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", certificate,
            ])
        try #require(made.status == 0, "openssl failed: \(made.error)")
        // The base64 SHA-256 of the certificate's SubjectPublicKeyInfo, as Chromium's SPKI list takes it.
        let spki = try ToolResult.run(
            executable: "/bin/sh",
            [
                "-c", "openssl x509 -in '\(certificate)' -pubkey -noout | openssl pkey -pubin -outform der"
                    + " | openssl dgst -sha256 -binary | base64",
            ]
        ).outputText.trimmingCharacters(in: .whitespacesAndNewlines)
        try #require(!spki.isEmpty)

        let server = try RunningServer([
            "--token", "s3cret", "--tls-cert", certificate, "--tls-key", key, "--audio", "none", "--preset", "320x240",
        ])
        defer { _ = server.stop() }
        let script = directory.appendingPathComponent("tls_browser.py")
        try tlsBrowserScript.write(to: script, atomically: true, encoding: .utf8)
        let base = "https://127.0.0.1:\(server.port)/"
        let result = try ToolResult.run(
            executable: CameraAppBrowserTests.python,
            [script.path, base + "?token=s3cret", spki, directory.appendingPathComponent("profile").path])
        if result.status == 3 { return print("Skipping serve over TLS in Chromium: \(result.error)") }
        try #require(result.status == 0, "the browser script failed: \(result.error)\n\(server.tool.standardError)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: result.output) as? [String: Any], "no report: \(result.error)")

        #expect(report["url"] as? String == base, "the address still carries the token: \(report)")
        #expect(report["natural"] as? [Int] == [320, 240], "the preview did not play: \(report)")
        let requested = report["requested"] as? [String] ?? []
        #expect(!requested.isEmpty && !requested.contains { $0.contains("token") }, "\(requested)")
        #expect((report["scriptCookies"] as? String)?.contains("s3cret") == false, "scripts can read the token")
        let cookie = (report["cookies"] as? [[String: Any]])?.first { $0["name"] as? String == "avcapture_token" }
        #expect(cookie?["value"] as? String == "s3cret", "\(String(describing: cookie))")
        #expect(cookie?["secure"] as? Bool == true && cookie?["httpOnly"] as? Bool == true, "\(String(describing: cookie))")
        #expect(cookie?["sameSite"] as? String == "Strict", "\(String(describing: cookie))")
    }
}
