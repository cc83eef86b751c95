// `avcapture preview` as a person uses it, on an Xvfb server of the test's own: the window shows the virtual
// camera, an xdotool click focuses where the layer converts it to, Space takes a photo (exiftool reads it) and
// Enter twice records a movie (ffprobe reads it), Escape quits cleanly. The tool prints one line per action.

import Foundation
import OpenAVCaptureTesting
import Synchronization
import TestSupport
import Testing

/// A running avcapture whose stdout lines are collected as they come.
final class RunningTool: @unchecked Sendable {
    private let process = Process()
    private let lines = Mutex<[String]>([])
    private let errors = Mutex(Data())
    /// Bytes after the last newline.
    private let pending = Mutex(Data())

    /// `extraEnvironment` is added to this process's environment (with the virtual devices and `display`).
    init(_ arguments: [String], in directory: URL, display: String, extraEnvironment: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: toolPath!)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var environment = ProcessInfo.processInfo.environment
        environment["OPENAV_DEVICES"] = "virtual"
        environment["DISPLAY"] = display
        environment.merge(extraEnvironment) { _, extra in extra }
        process.environment = environment
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = FileHandle.nullDevice
        // Weak: a handler call already on its way when the tool goes (deinit clears the handlers, but cannot stop
        // one already dispatched) must find nothing, not a freed object.
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            guard let self else { return }
            pending.withLock { pending in
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending = Data(pending[(newline + 1)...])
                    lines.withLock { $0.append(line) }
                }
            }
        }
        error.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            guard let self else { return }
            errors.withLock { $0.append(chunk) }
        }
        try process.run()
    }

    /// The `occurrence`th (1: the first) line starting with `prefix` (waiting up to `timeout`), or nil.
    func line(startingWith prefix: String, occurrence: Int = 1, timeout: TimeInterval = 20) -> String? {
        func found() -> String? {
            let matching = lines.withLock { $0.filter { $0.hasPrefix(prefix) } }
            return matching.count >= occurrence ? matching[occurrence - 1] : nil
        }
        _ = waitUntil(timeout: timeout) { found() != nil || !process.isRunning }
        return found()
    }

    /// Every whole line printed on standard output so far.
    var outputLines: [String] { lines.withLock { $0 } }

    /// Sends SIGINT, as Ctrl-C does.
    func interrupt() { if process.isRunning { process.interrupt() } }

    var standardError: String { String(decoding: errors.withLock { $0 }, as: UTF8.self) }

    /// Waits for the process to end (killing it after `timeout`); its exit status.
    func wait(timeout: TimeInterval = 20) -> Int32 {
        _ = waitUntil(timeout: timeout) { !process.isRunning }
        if process.isRunning { process.interrupt() }
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        process.killAndReap()
        (process.standardOutput as? Pipe)?.fileHandleForReading.readabilityHandler = nil
        (process.standardError as? Pipe)?.fileHandleForReading.readabilityHandler = nil
    }
}

@Suite(
    "avcapture preview", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct AVCapturePreviewToolTests {
    @Test("click focuses at the converted point, Space takes a photo, Enter records, Escape quits")
    func cameraAppInAWindow() throws {
        guard let xvfb = XvfbServer.start(width: 800, height: 480, for: "avcapture preview"),
            MediaTool.available([.ffprobe, .exiftool], for: "avcapture preview")
        else { return }
        let directory = try scratchURL("preview-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let tool = try RunningTool(
            ["preview", "--video", "back", "--audio", "virtual", "--preset", "640x480", "--size", "800x480"],
            in: directory, display: xvfb.displayName)
        let showing = tool.line(startingWith: "showing")
        try #require(showing != nil, "the window never showed a frame: \(tool.standardError)")

        // 640x480 fitted in 800x480: x 80 ..< 720. (240, 120) is a quarter across and a quarter down the picture.
        try xvfb.xdotool("mousemove", "240", "120")
        try xvfb.xdotool("click", "1")
        #expect(tool.line(startingWith: "focus at") == "focus at (0.2500, 0.2500)")

        try xvfb.xdotool("key", "space")
        let photoLine = try #require(tool.line(startingWith: "photo "), "no photo: \(tool.standardError)")
        let photo = URL(fileURLWithPath: String(photoLine.dropFirst("photo ".count)))
        #expect(photo.deletingLastPathComponent().standardizedFileURL.path == directory.standardizedFileURL.path)
        let exif = try ExifToolReport(photo)
        #expect(exif.number("File", "ImageWidth") == 640)

        try xvfb.xdotool("key", "Return")
        #expect(tool.line(startingWith: "recording") != nil)
        // The tool records in real time in a process of its own: two seconds of it must pass.
        Thread.sleep(forTimeInterval: 2)
        try xvfb.xdotool("key", "Return")
        let movieLine = try #require(tool.line(startingWith: "movie "), "no movie: \(tool.standardError)")
        let movie = URL(fileURLWithPath: String(movieLine.dropFirst("movie ".count)))
        let probe = try FFprobeReport(movie)
        #expect(probe.stream("video")?["width"] as? Int == 640)
        #expect(probe.stream("audio") != nil)
        #expect((FFprobeReport.number(probe.format["duration"]) ?? 0) > 1)

        try xvfb.xdotool("key", "Escape")
        #expect(tool.wait() == 0, "\(tool.standardError)")
    }
    @Test("double click exposes (its marker on the screen), R resets, F and T set flash and torch, + and - zoom")
    func keysAndDoubleClickInAWindow() throws {
        guard let xvfb = XvfbServer.start(width: 800, height: 480, for: "avcapture preview keys") else { return }
        guard FileManager.default.isExecutableFile(atPath: ScreenGrab.xwdPath) else {
            return print("Skipping avcapture preview keys: \(ScreenGrab.xwdPath) not installed (make test installs x11-apps)")
        }
        let directory = try scratchURL("preview-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let tool = try RunningTool(
            ["preview", "--video", "back", "--audio", "none", "--preset", "640x480", "--size", "800x480"],
            in: directory, display: xvfb.displayName)
        try #require(tool.line(startingWith: "showing") != nil, "the window never showed a frame: \(tool.standardError)")

        // (560, 360) is three quarters across and down the picture at x 80 ..< 720.
        try xvfb.xdotool("mousemove", "560", "360")
        try xvfb.xdotool("click", "--repeat", "2", "--delay", "80", "1")
        #expect(tool.line(startingWith: "expose at") == "expose at (0.7500, 0.7500)")
        // The exposure marker, an orange box 120 wide about the point, is on the screen for a second. A loaded
        // machine may take the screenshot after that second: then the double click is repeated (at most twice).
        func markerShown() throws -> Bool {
            let grab = try ScreenGrab.take(display: xvfb.displayName)
            return (500..<621).contains { x in
                (300..<421).contains { y in
                    let (r, g, b) = grab.pixel(x, y)
                    return r > 230 && (140...190).contains(g) && b < 40
                }
            }
        }
        var orange = try markerShown()
        for attempt in 2...3 where !orange {
            try xvfb.xdotool("click", "--repeat", "2", "--delay", "80", "1")
            _ = tool.line(startingWith: "expose at", occurrence: attempt)
            orange = try markerShown()
        }
        #expect(orange, "no orange exposure marker around the double click")

        try xvfb.xdotool("key", "r")
        #expect(tool.line(startingWith: "focus and exposure reset") != nil)
        try xvfb.xdotool("key", "f")
        #expect(tool.line(startingWith: "flash ") == "flash on")
        try xvfb.xdotool("key", "t")
        #expect(tool.line(startingWith: "torch ") == "torch on")
        try xvfb.xdotool("key", "plus")
        let zoomIn = try #require(tool.line(startingWith: "zoom to "), "\(tool.standardError)")
        let factor = try #require(Double(zoomIn.dropFirst("zoom to ".count).dropLast()))
        #expect(factor > 1, "\(zoomIn)")
        try xvfb.xdotool("key", "minus")
        #expect(tool.line(startingWith: "zoom to ", occurrence: 2) == "zoom to 1.00x")

        try xvfb.xdotool("key", "Escape")
        #expect(tool.wait() == 0, "\(tool.standardError)")
    }
}
