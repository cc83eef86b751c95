// The camera app in a real headless Chromium (Debian's chromium and chromium-driver, driven by python3-selenium
// over WebDriver): the page's preview advances in screenshots (the frame-index code read from their pixels), a tap
// focuses the camera where the layer's conversion puts it, the Photo button makes a JPEG that exiftool reads, and
// Record, two seconds on the page's own timer, then Stop, makes a movie that ffprobe reads.

import Foundation
import OpenAVCaptureTesting
import TestSupport
import Testing

/// What every browser script starts with: the imports, and a headless Chromium with a 1000x800 window at one device
/// pixel per CSS pixel as `driver`, or exit status 3 (the test then skips, saying why) when it cannot start.
let browserPrelude = #"""
    import json, sys, time, urllib.request
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1000,800", "--force-device-scale-factor=1"]:
        options.add_argument(argument)
    try:
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    except Exception as error:
        print("the browser did not start: %s" % str(error).splitlines()[0], file=sys.stderr)
        sys.exit(3)

    """#

/// The browser's side, written to a file and run with Debian's python3 (where python3-selenium is installed).
/// Arguments: the page's address, a directory for screenshots. Prints one JSON object.
private let browserScript =
    browserPrelude + #"""
        url, shots = sys.argv[1], sys.argv[2]
        try:
            wait = WebDriverWait(driver, 20)
            driver.get(url)
            preview = driver.find_element(By.ID, "preview")
            wait.until(lambda d: d.execute_script("return arguments[0].naturalWidth", preview) > 0)
            wait.until(lambda d: "fps" in d.find_element(By.ID, "stats").text)
            rect = driver.execute_script("const b = arguments[0].getBoundingClientRect(); return [b.left, b.top, b.width, b.height]", preview)
            natural = driver.execute_script("return [arguments[0].naturalWidth, arguments[0].naturalHeight]", preview)
            # Each moment in three screenshots a tenth of a second apart: the camera's once-a-second flash frame carries no
            # frame-index code, and one screenshot in thirty catches it.
            for moment in ["first", "second"]:
                for take in range(3):
                    driver.save_screenshot(shots + "/%s-%d.png" % (moment, take))
                    time.sleep(0.1)
                time.sleep(0.5)  # about 15 frames apart at 30 fps: the second moment shows a later frame

            # Tap a quarter across and a quarter down the picture (aspect fit: centred, bars at the sides).
            scale = min(rect[2] / natural[0], rect[3] / natural[1])
            shown = (natural[0] * scale, natural[1] * scale)
            tap = (int(round((rect[2] - shown[0]) / 2 + shown[0] * 0.25)), int(round((rect[3] - shown[1]) / 2 + shown[1] * 0.25)))
            ActionChains(driver).move_to_element_with_offset(preview, tap[0] - rect[2] / 2, tap[1] - rect[3] / 2).click().perform()
            def status():
                with urllib.request.urlopen(url.split("?")[0] + "status" + ("?" + url.split("?")[1] if "?" in url else "")) as r:
                    return json.load(r)
            wait.until(lambda d: status()["focusPoint"] != [0.5, 0.5])
            focus = status()["focusPoint"]
            driver.save_screenshot(shots + "/page.png")

            driver.find_element(By.ID, "photo").click()
            wait.until(lambda d: any(n.endswith(".jpg") for n in status()["files"]))
            driver.find_element(By.ID, "record").click()
            wait.until(lambda d: d.find_element(By.ID, "timer").text >= "00:02")
            driver.find_element(By.ID, "record").click()
            wait.until(lambda d: any(n.endswith(".mov") for n in status()["files"]))
            WebDriverWait(driver, 10).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#gallery a.file")) >= 2)
            links = [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "#gallery a.file")]
            print(json.dumps({"rect": rect, "natural": natural, "tap": tap, "focus": focus, "files": status()["files"],
                              "links": links}))
        finally:
            driver.quit()
        """#

/// The browser's side of the controls test: double tap, reset, flash, torch, zoom and camera switch, each clicked
/// or chosen on the page as a person would, each awaited in the server's status (read from the devices). Arguments:
/// the page's address. Prints one JSON object; exits 3 when the browser cannot start.
private let controlsScript =
    browserPrelude + #"""
        url = sys.argv[1]
        def status():
            with urllib.request.urlopen(url + "status") as r:
                return json.load(r)
        report = {}
        try:
            wait = WebDriverWait(driver, 20)
            driver.get(url)
            preview = driver.find_element(By.ID, "preview")
            wait.until(lambda d: d.execute_script("return arguments[0].naturalWidth", preview) > 0)
            wait.until(lambda d: "cameras" in d.find_element(By.ID, "camera").text)
            report["cameraShown"] = driver.find_element(By.ID, "camera").text
            report["before"] = status()

            # Double tap three quarters across and down the picture: exposure there, and an exposure marker on the page.
            rect = driver.execute_script("const b = arguments[0].getBoundingClientRect(); return [b.width, b.height]", preview)
            natural = driver.execute_script("return [arguments[0].naturalWidth, arguments[0].naturalHeight]", preview)
            scale = min(rect[0] / natural[0], rect[1] / natural[1])
            shown = (natural[0] * scale, natural[1] * scale)
            tap = ((rect[0] - shown[0]) / 2 + shown[0] * 0.75, (rect[1] - shown[1]) / 2 + shown[1] * 0.75)
            ActionChains(driver).move_to_element_with_offset(preview, tap[0] - rect[0] / 2, tap[1] - rect[1] / 2).double_click().perform()
            report["exposeMarkers"] = len(driver.find_elements(By.CSS_SELECTOR, ".marker.expose"))
            wait.until(lambda d: status()["exposurePoint"] != [0.5, 0.5])
            report["exposed"] = status()["exposurePoint"]

            driver.find_element(By.ID, "reset").click()
            wait.until(lambda d: status()["exposurePoint"] == [0.5, 0.5])
            report["reset"] = status()

            if status()["hasFlash"]:
                Select(driver.find_element(By.ID, "flash")).select_by_visible_text("on")
                wait.until(lambda d: status()["flashMode"] == "on")
            if status()["hasTorch"]:
                Select(driver.find_element(By.ID, "torch")).select_by_visible_text("on")
                wait.until(lambda d: status()["torchMode"] == "on")
            report["lights"] = status()

            # The zoom slider moved to the middle (what dragging it ends with: its value set and a change event).
            driver.execute_script("const z = arguments[0]; z.value = 0.5; z.dispatchEvent(new Event('change'))",
                                  driver.find_element(By.ID, "zoom"))
            wait.until(lambda d: abs(status()["zoomValue"] - 0.5) < 0.01)
            report["zoomed"] = status()["zoomValue"]

            first = status()["camera"]
            wait.until(lambda d: d.find_element(By.ID, "switch").is_enabled())
            driver.find_element(By.ID, "switch").click()
            wait.until(lambda d: status()["camera"] != first)
            report["switchedTo"] = status()["camera"]
            wait.until(lambda d: report["switchedTo"] in d.find_element(By.ID, "camera").text)
            report["cameraShownAfter"] = driver.find_element(By.ID, "camera").text
            print(json.dumps(report))
        finally:
            driver.quit()
        """#

/// The browser's side of the hot-plug test: the camera line of the page, sampled every 100 ms for `seconds`, as
/// the page's own polling shows it. Arguments: the page's address, seconds. Prints a JSON list of the distinct
/// texts in the order they appeared; exits 3 when the browser cannot start.
private let hotPlugScript =
    browserPrelude + #"""
        url, seconds = sys.argv[1], float(sys.argv[2])
        try:
            driver.get(url)
            WebDriverWait(driver, 20).until(lambda d: "cameras" in d.find_element(By.ID, "camera").text)
            seen = []
            end = time.time() + seconds
            while time.time() < end:
                text = driver.find_element(By.ID, "camera").text
                if not seen or seen[-1] != text:
                    seen.append(text)
                time.sleep(0.1)
            print(json.dumps(seen))
        finally:
            driver.quit()
        """#

@Suite(
    "the camera app in Chromium", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct CameraAppBrowserTests {
    static let python = "/usr/bin/python3"

    /// Why the browser test cannot run here, or nil when it can.
    static var missing: String? {
        for path in ["/usr/bin/chromium", "/usr/bin/chromedriver", python]
        where !FileManager.default.isExecutableFile(atPath: path) {
            return "\(path) not installed (make test installs chromium, chromium-driver and python3-selenium)"
        }
        if !FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/selenium") {
            return "python3-selenium not installed (make test installs it)"
        }
        return MediaTool.available([.ffprobe, .exiftool, .ffmpeg], for: "the camera app in Chromium")
            ? nil : "ffprobe, ffmpeg or exiftool missing"
    }

    @Test("the page previews, taps to focus, takes a photo and records 2 s")
    func cameraAppInTheBrowser() throws {
        if let missing = Self.missing { return print("Skipping the camera app in Chromium: \(missing)") }
        let server = try RunningServer(["--preset", "1280x720", "--audio", "virtual"])
        defer { _ = server.stop() }
        let shots = try scratchURL("browser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: shots, withIntermediateDirectories: true)
        let script = shots.appendingPathComponent("camera_app.py")
        try browserScript.write(to: script, atomically: true, encoding: .utf8)
        let result = try ToolResult.run(
            executable: Self.python, [script.path, "http://127.0.0.1:\(server.port)/", shots.path])
        if result.status == 3 { return print("Skipping the camera app in Chromium: \(result.error)") }
        try #require(result.status == 0, "the browser script failed: \(result.error)\n\(server.tool.standardError)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: result.output) as? [String: Any], "no report: \(result.error)")

        // The preview advances: the frame-index code, read from the screenshots' pixels where the picture is.
        let rect = try #require(report["rect"] as? [Double])
        let natural = try #require(report["natural"] as? [Int])
        #expect(natural == [1280, 720])
        let scale = min(rect[2] / 1280, rect[3] / 720)
        let shown = (x: Int((rect[0] + (rect[2] - 1280 * scale) / 2).rounded()), y: Int(rect[1].rounded()))
        let size = (width: Int((1280 * scale).rounded()), height: Int((720 * scale).rounded()))
        /// The frame index of the first of a moment's three screenshots that shows one (not the flash frame).
        func frameIndex(_ moment: String) throws -> UInt32? {
            for take in 0..<3 {
                let grab = try ScreenGrab(png: shots.appendingPathComponent("\(moment)-\(take).png"))
                if let index = VirtualFrameReader.readFrameIndex(
                    fromLuma: grab.luma(x: shown.x..<shown.x + size.width, y: shown.y..<shown.y + size.height),
                    width: size.width, height: size.height)
                {
                    return index
                }
            }
            return nil
        }
        let first = try #require(try frameIndex("first"), "no frame-index code in the browser's screenshots")
        let second = try #require(try frameIndex("second"), "no frame-index code in the later screenshots")
        #expect(second > first, "the page still shows frame \(first)")
        if let path = ProcessInfo.processInfo.environment["OPENAV_SCREENSHOT_DIR"] {
            try? FileManager.default.removeItem(atPath: path + "/camera-app.png")
            try FileManager.default.copyItem(
                atPath: shots.appendingPathComponent("page.png").path, toPath: path + "/camera-app.png")
        }

        // The tap: a quarter across and down the picture, within a CSS pixel's rounding.
        let focus = try #require(report["focus"] as? [Double])
        let pixel = 1 / min(Double(size.width), Double(size.height))
        #expect(abs(focus[0] - 0.25) <= 2 * pixel && abs(focus[1] - 0.25) <= 2 * pixel, "focused at \(focus)")

        // The photo and the movie, read by outside tools.
        let files = try #require(report["files"] as? [String])
        let photo = try #require(files.first { $0.hasSuffix(".jpg") })
        let movie = try #require(files.first { $0.hasSuffix(".mov") })
        let exif = try ExifToolReport(server.directory.appendingPathComponent(photo))
        #expect(exif.number("File", "ImageWidth") != nil, "\(exif.warnings)")
        let probe = try FFprobeReport(server.directory.appendingPathComponent(movie))
        #expect(probe.stream("video")?["width"] as? Int == 1280)
        #expect((FFprobeReport.number(probe.format["duration"]) ?? 0) >= 1.5)
        // The gallery links download through the server.
        let links = try #require(report["links"] as? [String])
        #expect(links.contains { $0.contains("media/\(photo)") })
    }
    @Test("double tap exposes, Reset resets, flash, torch, zoom and camera switch follow the page's controls")
    func cameraAppControls() throws {
        if let missing = Self.missing { return print("Skipping the camera app's controls in Chromium: \(missing)") }
        let server = try RunningServer(["--preset", "640x480", "--audio", "none"])
        defer { _ = server.stop() }
        let scratch = try scratchURL("browser-controls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let script = scratch.appendingPathComponent("controls.py")
        try controlsScript.write(to: script, atomically: true, encoding: .utf8)
        let result = try ToolResult.run(executable: Self.python, [script.path, "http://127.0.0.1:\(server.port)/"])
        if result.status == 3 { return print("Skipping the camera app's controls in Chromium: \(result.error)") }
        try #require(result.status == 0, "the browser script failed: \(result.error)\n\(server.tool.standardError)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: result.output) as? [String: Any], "no report: \(result.error)")

        // The page names the camera and how many there are (the virtual ones: back, front and external).
        let before = try #require(report["before"] as? [String: Any])
        let cameras = try #require(before["cameras"] as? [String])
        #expect(cameras.count >= 2)
        #expect(
            report["cameraShown"] as? String == "\(before["camera"] ?? "") (\(cameras.count) cameras)",
            "\(report["cameraShown"] ?? "")")
        // The double tap: exposure at three quarters across and down, within a CSS pixel's rounding at 640x480
        // shown in the page; the page drew an exposure marker where it was tapped.
        let exposed = try #require(report["exposed"] as? [Double])
        #expect(abs(exposed[0] - 0.75) <= 0.01 && abs(exposed[1] - 0.75) <= 0.01, "exposed at \(exposed)")
        #expect((report["exposeMarkers"] as? Int ?? 0) >= 1, "no exposure marker after the double tap")
        // Reset: both points back to the centre.
        let reset = try #require(report["reset"] as? [String: Any])
        #expect(reset["focusPoint"] as? [Double] == [0.5, 0.5])
        // Flash and torch: the back camera has both (as the virtual one does), and each took the page's choice.
        let lights = try #require(report["lights"] as? [String: Any])
        #expect(lights["hasFlash"] as? Bool == true && lights["flashMode"] as? String == "on")
        #expect(lights["hasTorch"] as? Bool == true && lights["torchMode"] as? String == "on")
        // Zoom ramped to the slider's middle.
        #expect(abs((report["zoomed"] as? Double ?? 0) - 0.5) < 0.01)
        // The switch: the other camera, named on the page.
        let switched = try #require(report["switchedTo"] as? String)
        #expect(switched != before["camera"] as? String)
        #expect((report["cameraShownAfter"] as? String)?.hasPrefix(switched) == true)
    }
    @Test("a camera unplugged and plugged back in is reflected live on the page")
    func hotPlugReflectedLive() throws {
        if let missing = Self.missing { return print("Skipping the camera app's hot-plug in Chromium: \(missing)") }
        // The back camera, the one shown, goes away 10 s after its stream started (time for the browser to start
        // under load) for 4 s: the virtual devices' planned unplug, for a process the test cannot reach otherwise.
        let server = try RunningServer(
            ["--preset", "640x480", "--audio", "none"],
            environment: ["OPENAV_VIRTUAL_UNPLUG": "virtual:back-camera:10:4"])
        defer { _ = server.stop() }
        let scratch = try scratchURL("browser-hotplug-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let script = scratch.appendingPathComponent("hotplug.py")
        try hotPlugScript.write(to: script, atomically: true, encoding: .utf8)
        let result = try ToolResult.run(
            executable: Self.python, [script.path, "http://127.0.0.1:\(server.port)/", "20"])
        if result.status == 3 { return print("Skipping the camera app's hot-plug in Chromium: \(result.error)") }
        try #require(result.status == 0, "the browser script failed: \(result.error)\n\(server.tool.standardError)")
        let seen = try #require(try JSONSerialization.jsonObject(with: result.output) as? [String], "no report")
        print("the page's camera line: \(seen)")
        // How many cameras the page says, in the order the page said it: all, one fewer while unplugged, all again.
        let counts = seen.compactMap { text -> Int? in
            guard let open = text.lastIndex(of: "("), let space = text[open...].firstIndex(of: " ") else { return nil }
            return Int(text[text.index(after: open)..<space])
        }
        let distinct = counts.reduce(into: [Int]()) { if $0.last != $1 { $0.append($1) } }
        try #require(distinct.count >= 3, "the page did not follow the unplug and replug: \(seen)")
        #expect(distinct[1] == distinct[0] - 1 && distinct[2] == distinct[0], "\(seen)")
    }
}
