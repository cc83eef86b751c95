// AVCaptureScreenInput on a headless sway of the test's own (scripts/wayland-session), through wlr-screencopy: the
// picture swaybg shows and the window foot draws are what ffmpeg decodes from the movie, a window moved with swaymsg
// moves in the frames, duplicate removal follows the compositor's damage, and the compositor exiting mid-recording
// leaves a finished file.

import Foundation
import OpenAVCapture
import Synchronization
import TestSupport
import Testing

/// Decodes a movie's video to RGB24 with ffmpeg: the frames, each `width × height × 3` bytes.
private func decodedFrames(_ url: URL, width: Int, height: Int) throws -> [[UInt8]] {
    let result = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-i", url.path, "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "rawvideo",
        "-pix_fmt", "rgb24", "-",
    ])
    try #require(result.status == 0, "ffmpeg could not decode the movie: \(result.error)")
    let frameSize = width * height * 3
    let bytes = [UInt8](result.output)
    return stride(from: 0, to: bytes.count - frameSize + 1, by: frameSize).map { Array(bytes[$0..<$0 + frameSize]) }
}

/// Whether the decoded pixel (`x`, `y`) is `colour`, within what H.264's 4:2:0 and rounding leave (well inside a
/// flat region, where chroma subsampling does not reach).
private func pixel(_ frame: [UInt8], width: Int, _ x: Int, _ y: Int, is colour: (Int, Int, Int)) -> Bool {
    let offset = (y * width + x) * 3
    return abs(Int(frame[offset]) - colour.0) < 24 && abs(Int(frame[offset + 1]) - colour.1) < 24
        && abs(Int(frame[offset + 2]) - colour.2) < 24
}

/// Keeps the latest frames a video data output delivers (their pixels copied, so the screen's buffers go back).
private final class WaylandFrameCollector: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate,
    @unchecked Sendable
{
    private let frames = Mutex<[(width: Int, height: Int, pixels: [UInt8])]>([])

    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        guard let image = sampleBuffer.imageBuffer else { return }
        CVPixelBufferLockBaseAddress(image, .readOnly)
        defer { CVPixelBufferUnlockBaseAddress(image, .readOnly) }
        let (width, height) = (CVPixelBufferGetWidth(image), CVPixelBufferGetHeight(image))
        let stride = CVPixelBufferGetBytesPerRow(image)
        let base = CVPixelBufferGetBaseAddress(image)!.assumingMemoryBound(to: UInt8.self)
        let pixels = [UInt8](UnsafeBufferPointer(start: base, count: stride * height))
        frames.withLock { $0.append((width, height, pixels)) }
    }

    var count: Int { frames.withLock { $0.count } }

    /// The last frame's BGRA pixel at (`x`, `y`) as (red, green, blue).
    func lastRGB(_ x: Int, _ y: Int) -> (Int, Int, Int)? {
        frames.withLock { frames in
            guard let last = frames.last else { return nil }
            let offset = y * last.pixels.count / last.height + x * 4
            return (Int(last.pixels[offset + 2]), Int(last.pixels[offset + 1]), Int(last.pixels[offset]))
        }
    }

    func waitFor(_ count: Int, timeout: TimeInterval = 10) -> Bool {
        waitUntil(timeout: timeout) { self.count >= count }
    }
}

/// The last frame of an 80x80 crop across the test picture's four quadrants shows their colours at its corners,
/// exactly (BGRA, no encoding between).
private func expectQuadrants(_ collector: WaylandFrameCollector, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(collector.lastRGB(5, 5).map { $0 == (255, 0, 0) } == true, sourceLocation: sourceLocation)
    #expect(collector.lastRGB(74, 5).map { $0 == (0, 255, 0) } == true, sourceLocation: sourceLocation)
    #expect(collector.lastRGB(5, 74).map { $0 == (0, 0, 255) } == true, sourceLocation: sourceLocation)
    #expect(collector.lastRGB(74, 74).map { $0 == (255, 255, 0) } == true, sourceLocation: sourceLocation)
}

@Suite("AVCaptureScreenInput on a headless sway (wlr-screencopy)", .serialized)
struct WaylandScreenCaptureTests {
    @Test("The compositor's output is the display; crops and scales size the format")
    func displays() throws {
        guard let wayland = WaylandTestSession.start(for: "WaylandScreenCaptureTests.displays") else { return }
        let displays = try AVCaptureScreenInput.displays()
        try #require(displays.count == 1)
        #expect(displays[0].name == "HEADLESS-1")
        #expect(displays[0].bounds == CGRect(x: 0, y: 0, width: 1280, height: 720))
        #expect(displays[0].isMain)
        #expect(CGMainDisplayID() == displays[0].displayID)
        let input = try #require(AVCaptureScreenInput(displayID: CGMainDisplayID()))
        #expect(input.ports.first?.formatDescription?.dimensions == CMVideoDimensions(width: 1280, height: 720))
        input.cropRect = CGRect(x: 100, y: 50, width: 641, height: 361)
        input.scaleFactor = 0.5
        #expect(input.ports.first?.formatDescription?.dimensions == CMVideoDimensions(width: 321, height: 181))
        _ = wayland
    }

    @Test("A crop across the four quadrants comes out in their colours, and follows a moved crop origin")
    func cropColours() throws {
        guard let wayland = WaylandTestSession.start(for: "WaylandScreenCaptureTests.cropColours") else { return }
        let input = try #require(AVCaptureScreenInput(displayID: CGMainDisplayID()))
        input.cropRect = CGRect(x: 600, y: 320, width: 80, height: 80)
        input.capturesCursor = false
        let collector = WaylandFrameCollector()
        let session = try waylandDataSession(input, collector)
        session.startRunning()
        defer { session.stopRunning() }
        try #require(collector.waitFor(3), "no frames from the compositor")
        // The crop's corners lie in the four quadrants: exactly the picture's colours (BGRA, no encoding between).
        expectQuadrants(collector)
        // A moved origin shows in a later frame without a restart: the window's inside, white (right of the
        // clock's text, which fills its left 150 pixels).
        input.cropRect = CGRect(x: 240, y: 120, width: 80, height: 80)
        let seen = waitUntil(timeout: 10) { collector.lastRGB(40, 40).map { $0 == (255, 255, 255) } ?? false }
        #expect(seen, "the window never appeared in the moved crop")
        _ = wayland
    }

    @Test("On a HiDPI output (scale 2) the display and the crop are in pixels")
    func scaledOutput() throws {
        guard let wayland = WaylandTestSession.start(scale: 2, for: "WaylandScreenCaptureTests.scaledOutput") else {
            return
        }
        let display = try #require(try AVCaptureScreenInput.displays().first)
        #expect(display.bounds == CGRect(x: 0, y: 0, width: 1280, height: 720))
        let input = try #require(AVCaptureScreenInput(displayID: display.displayID))
        input.cropRect = CGRect(x: 600, y: 320, width: 80, height: 80)
        input.capturesCursor = false
        let collector = WaylandFrameCollector()
        let session = try waylandDataSession(input, collector)
        session.startRunning()
        defer { session.stopRunning() }
        try #require(collector.waitFor(3), "no frames from the compositor")
        expectQuadrants(collector)
        // The window, at (100, 100) in layout units, covers pixels 200 to 600 across: a crop there is white
        // (right of the clock's text).
        input.cropRect = CGRect(x: 480, y: 260, width: 80, height: 80)
        let seen = waitUntil(timeout: 10) { collector.lastRGB(40, 40).map { $0 == (255, 255, 255) } ?? false }
        #expect(seen, "the window is not where a scale of 2 puts it")
        _ = wayland
    }

    @Test("A 2 s recording scaled by half shows the quadrants, and the window where swaymsg moved it")
    func recordingFollowsTheWindow() throws {
        guard MediaTool.available(for: "WaylandScreenCaptureTests.recording"),
            let wayland = WaylandTestSession.start(for: "WaylandScreenCaptureTests.recording")
        else { return }
        let input = try #require(AVCaptureScreenInput(displayID: CGMainDisplayID()))
        input.scaleFactor = 0.5
        input.minFrameDuration = CMTime(value: 1, timescale: 30)
        let output = AVCaptureMovieFileOutput()
        output.maxRecordedDuration = CMTime(value: 2, timescale: 1)
        let session = AVCaptureSession()
        session.addInput(input)
        try #require(session.canAddOutput(output))
        session.addOutput(output)
        session.startRunning()
        defer { session.stopRunning() }
        let url = try scratchURL("wayland-screen.mov", suite: "wayland-screen")
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        try #require(delegate.waitForStart(), "the recording never started")
        // The compositor's clock is real: half the recording passes before the window moves.
        try #require(waitUntil { output.recordedDuration.seconds >= 0.8 }, "0.8 s were never recorded")
        try wayland.swaymsg("[app_id=openav-marker] move position 800 450")
        try #require(delegate.waitForFinish(timeout: 30), "the recording never finished")

        let (width, height) = (640, 360)
        let video = try #require(try FFprobeReport(url).stream("video"))
        #expect(video["width"] as? Int == width)
        #expect(video["height"] as? Int == height)
        let frames = try decodedFrames(url, width: width, height: height)
        #expect(frames.count >= 2, "\(frames.count) frames")
        let first = try #require(frames.first)
        let last = try #require(frames.last)
        // Quadrant centres, away from both of the window's places.
        for (x, y) in [(480, 60), (160, 300), (560, 330)] {
            let colour = WaylandTestSession.backgroundColour(x: x * 2, y: y * 2)
            #expect(pixel(first, width: width, x, y, is: colour), "first frame at (\(x), \(y))")
            #expect(pixel(last, width: width, x, y, is: colour), "last frame at (\(x), \(y))")
        }
        // The window (white, 200x100 at 100,100, the clock's text in its left 150 pixels; half that scaled) at
        // first, red there at the end, and white at its new place (800,450).
        #expect(pixel(first, width: width, 140, 90, is: (255, 255, 255)), "the window in the first frame")
        #expect(pixel(last, width: width, 140, 90, is: (255, 0, 0)), "the window's old place in the last frame")
        #expect(pixel(last, width: width, 490, 265, is: (255, 255, 255)), "the window's new place in the last frame")
        #expect(pixel(first, width: width, 490, 265, is: (255, 255, 0)), "the new place before the move")
    }

    @Test("Duplicate removal delivers nothing while the screen is idle, and the change when it comes")
    func duplicateRemovalFollowsDamage() throws {
        guard let wayland = WaylandTestSession.start(for: "WaylandScreenCaptureTests.duplicates") else { return }
        // The window's clock redraws it five times a second: hidden, nothing on the output changes.
        try wayland.swaymsg("[app_id=openav-marker] move scratchpad")
        let input = try #require(AVCaptureScreenInput(displayID: CGMainDisplayID()))
        input.removesDuplicateFrames = true
        input.capturesCursor = false
        let collector = WaylandFrameCollector()
        let session = try waylandDataSession(input, collector)
        session.startRunning()
        defer { session.stopRunning() }
        try #require(collector.waitFor(1), "no first frame")
        // A settled screen: whatever the hiding damaged has been delivered once fifteen frame times have been
        // looked at (by the capture thread: a loaded machine cannot shorten them).
        try #require(waitForFrameTimes(15, of: input, session), "the capture thread stopped looking")
        let settled = collector.count
        // An idle screen for 15 frame times: no frame may come.
        try #require(waitForFrameTimes(15, of: input, session), "the capture thread stopped looking")
        #expect(collector.count == settled, "frames of an unchanged screen were delivered")
        try wayland.swaymsg("[app_id=openav-marker] scratchpad show")
        #expect(collector.waitFor(settled + 1), "the window's return brought no frame")
        // Without duplicate removal an unchanged screen repeats its last frame every frame time.
        try wayland.swaymsg("[app_id=openav-marker] move scratchpad")
        input.removesDuplicateFrames = false
        let before = collector.count
        #expect(collector.waitFor(before + 10), "a still screen should stream every frame time")
        #expect(collector.lastRGB(1000, 600)! == (255, 255, 0))
    }

    @Test("The compositor exiting mid-recording ends the recording with a readable file")
    func compositorExit() throws {
        guard MediaTool.available(for: "WaylandScreenCaptureTests.compositorExit"),
            let wayland = WaylandTestSession.start(for: "WaylandScreenCaptureTests.compositorExit")
        else { return }
        let input = try #require(AVCaptureScreenInput(displayID: CGMainDisplayID()))
        input.scaleFactor = 0.25
        let output = AVCaptureMovieFileOutput()
        let session = AVCaptureSession()
        session.addInput(input)
        session.addOutput(output)
        session.startRunning()
        defer { session.stopRunning() }
        let url = try scratchURL("wayland-exit.mov", suite: "wayland-screen")
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        try #require(delegate.waitForStart(), "the recording never started")
        // Some frames recorded first: the compositor runs on real time.
        try #require(waitUntil { output.recordedDuration.seconds >= 0.5 }, "0.5 s were never recorded")
        wayland.stopCompositor()
        try #require(delegate.waitForFinish(timeout: 30), "the recording did not end when the compositor did")
        #expect(delegate.avError != nil, "the recording ended without saying why")
        let video = try #require(try FFprobeReport(url).stream("video"))
        #expect(video["width"] as? Int == 320)
        let frames = try decodedFrames(url, width: 320, height: 180)
        #expect(frames.count >= 3, "\(frames.count) frames before the compositor went")
    }

    @Test("A compositor without wlr-screencopy (Weston) is an error that names the portal's packages")
    func noScreencopy() throws {
        guard let weston = WaylandTestSession.start(weston: true, for: "WaylandScreenCaptureTests.noScreencopy")
        else { return }
        #expect(CGMainDisplayID() == kCGNullDirectDisplay)
        do {
            _ = try AVCaptureScreenInput.displays()
            Issue.record("displays() on Weston should throw")
        } catch let error as AVError {
            #expect(error.code == .screenCaptureFailed)
            #expect(error.localizedDescription.contains("offers no wlr-screencopy"), "\(error.localizedDescription)")
            let advice = error.userInfo[NSLocalizedRecoverySuggestionErrorKey] as? String ?? ""
            #expect(advice.contains("xdg-desktop-portal-gnome"), "\(advice)")
        }
        _ = weston
    }

    @Test("A WAYLAND_DISPLAY with no compositor behind it is an error that says what to do")
    func noCompositor() throws {
        let previous = ProcessInfo.processInfo.environment["WAYLAND_DISPLAY"]
        defer {
            if let previous { setenv("WAYLAND_DISPLAY", previous, 1) } else { unsetenv("WAYLAND_DISPLAY") }
        }
        setenv("WAYLAND_DISPLAY", "/nonexistent/wayland-9", 1)
        #expect(CGMainDisplayID() == kCGNullDirectDisplay)
        do {
            _ = try AVCaptureScreenInput.displays()
            Issue.record("displays() with no compositor should throw")
        } catch let error as AVError {
            #expect(error.code == .screenCaptureFailed)
            #expect(error.localizedDescription.contains("/nonexistent/wayland-9"))
            let advice = error.userInfo[NSLocalizedRecoverySuggestionErrorKey] as? String ?? ""
            #expect(advice.contains("WAYLAND_DISPLAY"), "\(advice)")
        }
    }
}

/// A session with `input` and a BGRA video data output into `collector`.
private func waylandDataSession(
    _ input: AVCaptureScreenInput, _ collector: WaylandFrameCollector
) throws -> AVCaptureSession {
    let session = AVCaptureSession()
    let output = AVCaptureVideoDataOutput()
    output.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA]
    output.alwaysDiscardsLateVideoFrames = false
    output.setSampleBufferDelegate(collector, queue: DispatchQueue(label: "wayland-frames"))
    try #require(session.canAddInput(input))
    session.addInput(input)
    try #require(session.canAddOutput(output))
    session.addOutput(output)
    return session
}

@Suite(
    "avcapture --screen on a headless sway", .serialized,
    .enabled(
        if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct WaylandScreenCaptureToolTests {
    @Test("devices lists the output under Screens; record --screen --crop records it")
    func recordScreen() throws {
        guard MediaTool.available(for: "WaylandScreenCaptureToolTests.recordScreen"),
            let wayland = WaylandTestSession.start(for: "WaylandScreenCaptureToolTests.recordScreen")
        else { return }
        var environment = ProcessInfo.processInfo.environment
        environment["OPENAV_DEVICES"] = "all"
        environment["WAYLAND_DISPLAY"] = wayland.displayPath
        // An X server named beside the compositor is not used: Wayland's outputs are what the user sees.
        environment["DISPLAY"] = ":4242"
        let devices = try ToolResult.run(executable: toolPath!, ["devices"], environment: environment)
        #expect(devices.status == 0, "\(devices.error)")
        #expect(devices.outputText.contains("Screens (record --screen N):"))
        #expect(devices.outputText.contains("HEADLESS-1  1280x720 at +0+0"), "\(devices.outputText)")

        let url = try scratchURL("wayland-tool.mov", suite: "wayland-screen")
        let result = try ToolResult.run(
            executable: toolPath!,
            ["record", url.path, "--screen", "--audio", "none", "--crop", "640,0,320,240", "--duration", "1"],
            environment: environment)
        try #require(result.status == 0, "avcapture failed: \(result.error)")
        let frames = try decodedFrames(url, width: 320, height: 240)
        let first = try #require(frames.first)
        // The crop lies in the green quadrant.
        #expect(pixel(first, width: 320, 160, 120, is: (0, 255, 0)))
        #expect(pixel(first, width: 320, 4, 4, is: (0, 255, 0)))
    }
}
