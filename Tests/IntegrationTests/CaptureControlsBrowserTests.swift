// The session's controls in the web camera app, in a real headless Chromium (python3-selenium over WebDriver) and
// behind the server's token: the page lists the system zoom and exposure sliders from `GET /controls` as range
// inputs, a drag of the zoom slider's thumb posts its values (`POST /controls/N`), and the camera follows: the
// endpoint reads the device's zoom factor back, and a frame ffmpeg reads from `/stream` shows the colour bars where
// that factor puts them. Without the token the endpoints refuse.

import Foundation
import OpenAVCaptureTesting
import TestSupport
import Testing

/// The browser's side. Arguments: the first visit's address (with ?token=), the token. Prints one JSON object;
/// exits 3 when the browser cannot start.
private let controlsBrowserScript =
    browserPrelude + #"""
        url, token = sys.argv[1], sys.argv[2]
        base = url.split("?")[0]
        def controls():
            request = urllib.request.Request(base + "controls", headers={"Authorization": "Bearer " + token})
            with urllib.request.urlopen(request) as r:
                return json.load(r)["controls"]
        report = {}
        try:
            wait = WebDriverWait(driver, 20)
            driver.get(url)
            wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".capture-control input")) == 2)
            report["labels"] = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".capture-control")]
            zoom = driver.find_element(By.ID, "control-0")
            report["range"] = [float(zoom.get_attribute("min")), float(zoom.get_attribute("max"))]
            width = zoom.size["width"]
            # Press at the track's left end, drag right in small moves as a hand does, let go: about a fifteenth
            # of the way along (near 2x on the back camera's 1 ... 16).
            chain = ActionChains(driver).move_to_element_with_offset(zoom, -width / 2 + 1, 0).click_and_hold()
            for _ in range(4):
                chain = chain.move_by_offset(4, 0)
            chain.release().perform()
            value = lambda: float(driver.find_element(By.ID, "control-0").get_attribute("value"))
            wait.until(lambda d: value() > report["range"][0])
            # The page's last value reaches the device: the endpoint reads the camera's factor back.
            wait.until(lambda d: abs(controls()[0]["value"] - value()) < 1e-3)
            report["pageValue"] = value()
            report["controls"] = controls()
            wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#control-0 + .value").text == report["controls"][0]["text"])
            report["shownText"] = driver.find_element(By.CSS_SELECTOR, "#control-0 + .value").text
            print(json.dumps(report))
        finally:
            driver.quit()
        """#

@Suite(
    "the camera app's capture controls in Chromium", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct CaptureControlsBrowserTests {
    static let token = "controls-token"

    @Test("the zoom slider dragged on the page zooms the camera: the endpoint and the stream's pixels agree")
    func zoomSliderOnThePage() throws {
        if let missing = CameraAppBrowserTests.missing {
            return print("Skipping the capture controls in Chromium: \(missing)")
        }
        let server = try RunningServer([
            "--video", "back", "--preset", "640x480", "--audio", "none", "--token", Self.token,
        ])
        defer { _ = server.stop() }
        let base = "http://127.0.0.1:\(server.port)/"

        // Without the token the controls are refused, listed or set.
        let refused = try ToolResult.run(
            executable: "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", base + "controls"])
        #expect(String(decoding: refused.output, as: UTF8.self) == "401")
        let refusedPost = try ToolResult.run(
            executable: "/usr/bin/curl",
            ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-d", "{\"value\": 4}", base + "controls/0"])
        #expect(String(decoding: refusedPost.output, as: UTF8.self) == "401")

        let scratch = try scratchURL("browser-capture-controls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let script = scratch.appendingPathComponent("capture_controls.py")
        try controlsBrowserScript.write(to: script, atomically: true, encoding: .utf8)
        let result = try ToolResult.run(
            executable: CameraAppBrowserTests.python, [script.path, base + "?token=\(Self.token)", Self.token])
        if result.status == 3 { return print("Skipping the capture controls in Chromium: \(result.error)") }
        try #require(result.status == 0, "the browser script failed: \(result.error)\n\(server.tool.standardError)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: result.output) as? [String: Any], "no report: \(result.error)")

        // The page shows both system sliders, named, with their values; the zoom's range is the back camera's.
        let labels = try #require(report["labels"] as? [String])
        #expect(labels.count == 2 && labels[0].hasPrefix("Zoom") && labels[1].hasPrefix("Exposure"), "\(labels)")
        #expect(report["range"] as? [Double] == [1, 16])
        let controls = try #require(report["controls"] as? [[String: Any]])
        let zoom = try #require(controls.first?["value"] as? Double)
        let pageValue = try #require(report["pageValue"] as? Double)
        print("the page's zoom slider at \(pageValue), the camera's zoom factor read back \(zoom)")
        #expect(zoom > 1.1 && abs(zoom - pageValue) < 1e-3, "the device's zoom \(zoom), the page's \(pageValue)")
        #expect(report["shownText"] as? String == String(format: "%.1fx", zoom))
        #expect(controls[1]["value"] as? Double == 0 && controls[1]["enabled"] as? Bool == true)

        // The stream shows the zoom: a frame ffmpeg decodes has the bars where the device's factor puts them. Up to
        // three frames: the camera's once-a-second flash frame shows no bars.
        try #require(zoom < 2.6, "the drag went past the zoom at which the bars leave the top rows: \(zoom)")
        guard MediaTool.available([.ffmpeg, .ffprobe], for: "the capture controls' stream check") else { return }
        var mismatches: [String] = ["no frame read"]
        for attempt in 0..<3 where !mismatches.isEmpty {
            let picture = scratch.appendingPathComponent("stream-\(attempt).png")
            let read = try MediaTool.ffmpeg.run([
                "-nostdin", "-v", "error", "-rw_timeout", "10000000", "-headers",
                "Authorization: Bearer \(Self.token)\r\n", "-f", "mpjpeg", "-i", base + "stream", "-frames:v", "5",
                "-update", "1", "-y", picture.path,
            ])
            try #require(read.status == 0, "ffmpeg could not read the stream: \(read.error)")
            let grab = try ScreenGrab(png: picture)
            mismatches = ZoomedBars.mismatches(
                in: CameraRegion(grab: grab, x: 0, y: 0, width: grab.width, height: grab.height), zoom: zoom)
        }
        #expect(mismatches.isEmpty, "the stream at \(zoom)x: bars off at \(mismatches)")
        #expect(server.stop() == 0, "\(server.tool.standardError)")
    }
}
