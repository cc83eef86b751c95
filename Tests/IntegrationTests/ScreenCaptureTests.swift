// AVCaptureScreenInput on an Xvfb server of the test's own: what Xlib painted is what ffmpeg decodes from the movie,
// the cursor is where xdotool put it, and duplicate removal delivers frames only for changes.

import Foundation
import OpenAVCapture
import Synchronization
import TestSupport
import Testing

/// Decodes a movie's video to RGB24 with ffmpeg: the frames, each `width × height × 3` bytes.
private func decodedRGBFrames(_ url: URL, width: Int, height: Int) throws -> [[UInt8]] {
    let result = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-i", url.path, "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "rawvideo",
        "-pix_fmt", "rgb24", "-",
    ])
    try #require(result.status == 0, "ffmpeg could not decode the movie: \(result.error)")
    let frameSize = width * height * 3
    let bytes = [UInt8](result.output)
    return stride(from: 0, to: bytes.count - frameSize + 1, by: frameSize).map { Array(bytes[$0..<$0 + frameSize]) }
}

/// The BGRA pixel at (`x`, `y`) of a frame as (red, green, blue).
private func rgb(_ image: CVPixelBuffer, _ x: Int, _ y: Int) -> (Int, Int, Int) {
    CVPixelBufferLockBaseAddress(image, .readOnly)
    defer { CVPixelBufferUnlockBaseAddress(image, .readOnly) }
    let base = CVPixelBufferGetBaseAddress(image)!.assumingMemoryBound(to: UInt8.self)
    let pixel = base + y * CVPixelBufferGetBytesPerRow(image) + x * 4
    return (Int(pixel[2]), Int(pixel[1]), Int(pixel[0]))
}

/// Keeps the latest frames a video data output delivers (their pixels copied, so the screen's buffers go back).
private final class FrameCollector: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    private let frames = Mutex<[CVPixelBuffer]>([])

    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        guard let image = sampleBuffer.imageBuffer else { return }
        var copy: CVPixelBuffer?
        CVPixelBufferCreate(
            nil, CVPixelBufferGetWidth(image), CVPixelBufferGetHeight(image), kCVPixelFormatType_32BGRA, nil, &copy)
        guard let copy else { return }
        CVPixelBufferLockBaseAddress(image, .readOnly)
        CVPixelBufferLockBaseAddress(copy, [])
        let rows = CVPixelBufferGetHeight(image)
        let length = CVPixelBufferGetWidth(image) * 4
        for row in 0..<rows {
            memcpy(
                CVPixelBufferGetBaseAddress(copy)! + row * CVPixelBufferGetBytesPerRow(copy),
                CVPixelBufferGetBaseAddress(image)! + row * CVPixelBufferGetBytesPerRow(image), length)
        }
        CVPixelBufferUnlockBaseAddress(copy, [])
        CVPixelBufferUnlockBaseAddress(image, .readOnly)
        frames.withLock { $0.append(copy) }
    }

    var count: Int { frames.withLock { $0.count } }
    var last: CVPixelBuffer? { frames.withLock { $0.last } }

    func waitFor(_ count: Int, timeout: TimeInterval = 10) -> Bool {
        waitUntil(timeout: timeout) { self.count >= count }
    }
}

/// A session with `input` and a BGRA video data output into `collector`.
private func dataSession(_ input: AVCaptureScreenInput, _ collector: FrameCollector) throws -> AVCaptureSession {
    let session = AVCaptureSession()
    let output = AVCaptureVideoDataOutput()
    output.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA]
    output.alwaysDiscardsLateVideoFrames = false
    output.setSampleBufferDelegate(collector, queue: DispatchQueue(label: "screen-frames"))
    try #require(session.canAddInput(input))
    session.addInput(input)
    try #require(session.canAddOutput(output))
    session.addOutput(output)
    return session
}

/// Waits until the screen's capture thread has looked at the screen `count` more times (frame times it grabbed or
/// found unchanged) and whatever it delivered has reached `session`'s delegates: a still screen's silence checked
/// over frame times the capture really took, which a loaded machine cannot shorten, instead of over host time.
func waitForFrameTimes(_ count: Int, of input: AVCaptureScreenInput, _ session: AVCaptureSession) -> Bool {
    let target = input.framesConsidered + count
    let outputs = session.outputs
    return waitUntil(timeout: 30) { input.framesConsidered >= target }
        && waitUntil { !outputs.contains(where: \.hasWorkInFlight) }
}

@Suite("AVCaptureScreenInput on Xvfb", .serialized)
struct ScreenCaptureTests {
    @Test("Displays come from the X server; a display it lacks gives no input")
    func displays() throws {
        guard let server = XvfbServer.start(width: 1280, height: 720, for: "ScreenCaptureTests.displays") else {
            return
        }
        let displays = try AVCaptureScreenInput.displays()
        try #require(displays.count == 1)
        #expect(displays[0].bounds == CGRect(x: 0, y: 0, width: 1280, height: 720))
        #expect(displays[0].isMain)
        #expect(CGMainDisplayID() == displays[0].displayID)
        #expect(CGDisplayBounds(displays[0].displayID) == displays[0].bounds)
        #expect(AVCaptureScreenInput(displayID: displays[0].displayID + 1000) == nil)
        let input = try #require(AVCaptureScreenInput(displayID: CGMainDisplayID()))
        #expect(input.ports.first?.formatDescription?.dimensions == CMVideoDimensions(width: 1280, height: 720))
        input.cropRect = CGRect(x: 100, y: 50, width: 641, height: 361)
        input.scaleFactor = 0.5
        #expect(input.ports.first?.formatDescription?.dimensions == CMVideoDimensions(width: 321, height: 181))
        // A crop reaching past the display is kept inside it; an empty one is the whole display.
        input.scaleFactor = 1
        input.cropRect = CGRect(x: 1000, y: 600, width: 500, height: 500)
        #expect(input.ports.first?.formatDescription?.dimensions == CMVideoDimensions(width: 280, height: 120))
        input.cropRect = .zero
        #expect(input.ports.first?.formatDescription?.dimensions == CMVideoDimensions(width: 1280, height: 720))
        // Frame durations are clamped to 1/120 ... 1 s; .invalid restores 1/30 s.
        input.minFrameDuration = CMTime(value: 1, timescale: 1000)
        #expect(input.minFrameDuration == CMTime(value: 1, timescale: 120))
        input.minFrameDuration = .invalid
        #expect(input.minFrameDuration == CMTime(value: 1, timescale: 30))
        // One display is one device: a session takes it once.
        let session = AVCaptureSession()
        session.addInput(input)
        let second = try #require(AVCaptureScreenInput(displayID: CGMainDisplayID()))
        #expect(!session.canAddInput(second))
        _ = server
    }

    @Test("Without an X server the error says what to do")
    func noServer() throws {
        let previous = ProcessInfo.processInfo.environment["DISPLAY"]
        defer { if let previous { setenv("DISPLAY", previous, 1) } else { unsetenv("DISPLAY") } }
        unsetenv("DISPLAY")
        #expect(CGMainDisplayID() == kCGNullDirectDisplay)
        do {
            _ = try AVCaptureScreenInput.displays()
            Issue.record("displays() without DISPLAY should throw")
        } catch let error as AVError {
            #expect(error.code == .screenCaptureFailed)
            #expect((error.userInfo[NSLocalizedRecoverySuggestionErrorKey] as? String)?.contains("DISPLAY") == true)
        }
        setenv("DISPLAY", ":987", 1)
        do {
            _ = try AVCaptureScreenInput.displays()
            Issue.record("displays() with no server at :987 should throw")
        } catch let error as AVError {
            #expect(error.localizedDescription.contains(":987"))
            #expect((error.userInfo[NSLocalizedRecoverySuggestionErrorKey] as? String)?.contains("Xvfb") == true)
        }
    }

    @Test("A 2 s recording of a crop shows the painted frame indices, colours and nothing outside the crop")
    func recordedCropShowsThePaintedPattern() throws {
        guard MediaTool.available(for: "ScreenCaptureTests.recordedCrop"),
            let server = XvfbServer.start(for: "ScreenCaptureTests.recordedCrop")
        else { return }
        let painter = try X11Painter(server: server)
        let crop = (x: 320, y: 180, width: 640, height: 360)
        let code = ScreenIndexCode(x: crop.x + 40, y: crop.y + 40)
        // Green outside the crop, grey inside, a red and a blue patch, the index code on its black strip.
        @Sendable func picture(_ index: Int) -> [X11Painter.Rectangle] {
            [
                .init(x: crop.x, y: crop.y, width: crop.width, height: crop.height, color: 0x80_8080),
                .init(x: crop.x + 40, y: crop.y + 200, width: 120, height: 100, color: 0xFF_0000),
                .init(x: crop.x + 400, y: crop.y + 200, width: 120, height: 100, color: 0x00_00FF),
                code.strip,
            ] + code.rectangles(for: index)
        }
        painter.paint(background: 0x00_FF00, picture(0))
        try server.xdotool("mousemove", "5", "5")  // the pointer away from the crop

        let input = try #require(AVCaptureScreenInput(displayID: CGMainDisplayID()))
        input.cropRect = CGRect(x: crop.x, y: crop.y, width: crop.width, height: crop.height)
        input.minFrameDuration = CMTime(value: 1, timescale: 30)
        let output = AVCaptureMovieFileOutput()
        output.maxRecordedDuration = CMTime(value: 2, timescale: 1)
        let session = AVCaptureSession()
        session.addInput(input)
        try #require(session.canAddOutput(output))
        session.addOutput(output)
        session.startRunning()
        defer { session.stopRunning() }

        // The painter counts up while the recording runs, a new index every 50 ms of real time: the X server's
        // screen is what is captured, so the animation must really play.
        let painting = Atomic<Bool>(true)
        let painted = Atomic<Int>(0)
        Thread.detachNewThread {
            var index = 1
            while painting.load(ordering: .relaxed) && index < 1024 {
                painter.paint(background: 0x00_FF00, picture(index))
                painted.store(index, ordering: .relaxed)
                index += 1
                usleep(50_000)
            }
        }
        let url = try movieScratchURL("screen-crop.mov")
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        try #require(delegate.waitForFinish(timeout: 30), "the recording never finished")
        painting.store(false, ordering: .relaxed)

        let report = try FFprobeReport(url)
        let video = try #require(report.stream("video"))
        #expect(video["width"] as? Int == crop.width)
        #expect(video["height"] as? Int == crop.height)
        // Screen frames are stamped at their frame times, which jitter around the grid (a variable frame rate): the
        // decode keeps their times and the file's time base (ffmpeg's default, 1/30 s here, would give two frames
        // 29 ms apart one tick and call that an error of ours).
        let decode = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-i", url.path, "-fps_mode", "passthrough", "-enc_time_base", "-1", "-f", "null",
            "-",
        ])
        #expect(decode.status == 0 && decode.error.isEmpty, "ffmpeg: \(decode.error)")
        let frames = try decodedRGBFrames(url, width: crop.width, height: crop.height)
        try #require(frames.count > 10, "only \(frames.count) frames decoded")
        var indices: [Int] = []
        for frame in frames {
            func pixel(_ x: Int, _ y: Int) -> (Int, Int, Int) {
                let offset = (y * crop.width + x) * 3
                return (Int(frame[offset]), Int(frame[offset + 1]), Int(frame[offset + 2]))
            }
            let index = code.read(originX: crop.x, originY: crop.y) { x, y in
                let (r, g, b) = pixel(x, y)
                return (r + g + b) / 3
            }
            indices.append(try #require(index, "a frame shows no readable index (torn or misplaced)"))
            // The patches' colours, after H.264 4:2:0 and back, within a few code values.
            let red = pixel(100, 250)
            #expect(red.0 > 230 && red.1 < 30 && red.2 < 30, "red patch decoded as \(red)")
            let blue = pixel(460, 250)
            #expect(blue.0 < 30 && blue.1 < 30 && blue.2 > 230, "blue patch decoded as \(blue)")
            // Nothing of the green outside: the picture's edges are the crop's grey.
            for (x, y) in [(0, 0), (crop.width - 1, 0), (0, crop.height - 1), (crop.width - 1, crop.height - 1)] {
                let edge = pixel(x, y)
                #expect(abs(edge.0 - 128) < 12 && abs(edge.1 - 128) < 12 && abs(edge.2 - 128) < 12, "edge \(edge)")
            }
        }
        // The indices only go up, and the recording saw the painter count through many of them.
        #expect(zip(indices, indices.dropFirst()).allSatisfy { $0 <= $1 }, "indices out of order: \(indices)")
        #expect(Set(indices).count >= 10, "only \(Set(indices).count) distinct indices: \(indices)")
        #expect(indices.last! <= painted.load(ordering: .relaxed))
    }

    @Test("The cursor is drawn where xdotool put it, and not when capturesCursor is false; clicks draw a ring")
    func cursorAndClicks() throws {
        guard let server = XvfbServer.start(width: 800, height: 600, for: "ScreenCaptureTests.cursor") else { return }
        let painter = try X11Painter(server: server)
        painter.paint(background: 0x80_8080, [])
        try server.xdotool("mousemove", "300", "200")
        let input = try #require(AVCaptureScreenInput(displayID: CGMainDisplayID()))
        let collector = FrameCollector()
        let session = try dataSession(input, collector)
        session.startRunning()
        defer { session.stopRunning() }
        try #require(collector.waitFor(3))

        /// The pixels that are not the background's grey, as a bounding box.
        func marks(_ image: CVPixelBuffer) -> (minX: Int, minY: Int, maxX: Int, maxY: Int)? {
            var box: (Int, Int, Int, Int)?
            for y in 0..<CVPixelBufferGetHeight(image) {
                for x in 0..<CVPixelBufferGetWidth(image) {
                    let (r, g, b) = rgb(image, x, y)
                    guard r != 128 || g != 128 || b != 128 else { continue }
                    box = box.map { (min($0.0, x), min($0.1, y), max($0.2, x), max($0.3, y)) } ?? (x, y, x, y)
                }
            }
            return box.map { (minX: $0.0, minY: $0.1, maxX: $0.2, maxY: $0.3) }
        }
        let withCursor = try #require(collector.last)
        let box = try #require(marks(withCursor), "no cursor in the frame")
        // The cursor's image covers the pointer's position and is cursor-sized.
        #expect(box.minX <= 300 && box.maxX >= 300 && box.minY <= 200 && box.maxY >= 200, "cursor at \(box)")
        #expect(box.maxX - box.minX < 64 && box.maxY - box.minY < 64, "marks \(box) are larger than a cursor")

        // Moved: the marks follow.
        try server.xdotool("mousemove", "600", "450")
        let seen = collector.count
        try #require(collector.waitFor(seen + 3))
        let movedFrame = try #require(collector.last)
        let moved = try #require(marks(movedFrame))
        #expect(moved.minX <= 600 && moved.maxX >= 600 && moved.minY <= 450 && moved.maxY >= 450, "cursor at \(moved)")

        // A button held: a yellow ring around the pointer.
        input.capturesMouseClicks = true
        try server.xdotool("mousedown", "1")
        let beforeRing = collector.count
        try #require(collector.waitFor(beforeRing + 3))
        let ringFrame = try #require(collector.last)
        let ring = rgb(ringFrame, 600 - 14, 450)
        #expect(ring == (255, 215, 0), "the ring's pixel is \(ring)")
        try server.xdotool("mouseup", "1")

        // No cursor captured: the frame is the background alone.
        input.capturesCursor = false
        input.capturesMouseClicks = false
        let beforeHidden = collector.count
        try #require(collector.waitFor(beforeHidden + 3))
        let hidden = try #require(collector.last)
        #expect(marks(hidden) == nil)
    }

    @Test("scaleFactor 2 doubles the crop, as Apple's own example (320x240 at 2.0 gives 640x480); 0 is ignored")
    func scaledUp() throws {
        guard let server = XvfbServer.start(width: 800, height: 600, for: "ScreenCaptureTests.scaledUp") else { return }
        let painter = try X11Painter(server: server)
        painter.paint(
            background: 0xFF_FFFF,
            [
                .init(x: 100, y: 100, width: 160, height: 240, color: 0xFF_0000),
                .init(x: 260, y: 100, width: 160, height: 240, color: 0x00_00FF),
            ])
        let input = try #require(AVCaptureScreenInput(displayID: CGMainDisplayID()))
        input.cropRect = CGRect(x: 100, y: 100, width: 320, height: 240)
        input.scaleFactor = 2
        input.scaleFactor = 0
        #expect(input.scaleFactor == 2, "a factor that is not positive is ignored, as Apple documents no exception")
        input.capturesCursor = false
        let collector = FrameCollector()
        let session = try dataSession(input, collector)
        session.startRunning()
        defer { session.stopRunning() }
        try #require(collector.waitFor(2))
        let frame = try #require(collector.last)
        #expect(CVPixelBufferGetWidth(frame) == 640 && CVPixelBufferGetHeight(frame) == 480)
        #expect(rgb(frame, 4, 4) == (255, 0, 0))
        #expect(rgb(frame, 316, 476) == (255, 0, 0))
        #expect(rgb(frame, 324, 4) == (0, 0, 255))
        #expect(rgb(frame, 636, 476) == (0, 0, 255))
    }

    @Test("scaleFactor 0.5 delivers the crop at half size, and moving the crop's origin shows at once")
    func scaledCrop() throws {
        guard let server = XvfbServer.start(width: 800, height: 600, for: "ScreenCaptureTests.scaledCrop") else {
            return
        }
        let painter = try X11Painter(server: server)
        // The crop (200, 100, 400, 300): red left half, blue right half; white everywhere else.
        painter.paint(
            background: 0xFF_FFFF,
            [
                .init(x: 200, y: 100, width: 200, height: 300, color: 0xFF_0000),
                .init(x: 400, y: 100, width: 200, height: 300, color: 0x00_00FF),
            ])
        let input = try #require(AVCaptureScreenInput(displayID: CGMainDisplayID()))
        input.cropRect = CGRect(x: 200, y: 100, width: 400, height: 300)
        input.scaleFactor = 0.5
        input.capturesCursor = false
        let collector = FrameCollector()
        let session = try dataSession(input, collector)
        session.startRunning()
        defer { session.stopRunning() }
        try #require(collector.waitFor(2))
        let scaled = try #require(collector.last)
        #expect(CVPixelBufferGetWidth(scaled) == 200 && CVPixelBufferGetHeight(scaled) == 150)
        #expect(rgb(scaled, 2, 2) == (255, 0, 0))
        #expect(rgb(scaled, 98, 148) == (255, 0, 0))
        #expect(rgb(scaled, 101, 2) == (0, 0, 255))
        #expect(rgb(scaled, 197, 148) == (0, 0, 255))
        // The same size 200 pixels to the right: the blue half then white; no restart, the next frames show it.
        input.cropRect = CGRect(x: 400, y: 100, width: 400, height: 300)
        let before = collector.count
        try #require(collector.waitFor(before + 3))
        let moved = try #require(collector.last)
        #expect(CVPixelBufferGetWidth(moved) == 200)
        #expect(rgb(moved, 2, 2) == (0, 0, 255))
        #expect(rgb(moved, 150, 75) == (255, 255, 255))
    }

    @Test("removesDuplicateFrames: a still screen delivers its first frame, then one per change inside the crop")
    func duplicatesRemoved() throws {
        guard let server = XvfbServer.start(width: 800, height: 600, for: "ScreenCaptureTests.duplicates") else {
            return
        }
        let painter = try X11Painter(server: server)
        painter.paint(background: 0x40_4040, [])
        let input = try #require(AVCaptureScreenInput(displayID: CGMainDisplayID()))
        input.cropRect = CGRect(x: 0, y: 0, width: 400, height: 300)
        input.removesDuplicateFrames = true
        input.capturesCursor = false
        let collector = FrameCollector()
        let session = try dataSession(input, collector)
        session.startRunning()
        defer { session.stopRunning() }
        try #require(collector.waitFor(1))
        // Fifteen frame times of a still screen, each looked at by the capture thread: nothing more.
        try #require(waitForFrameTimes(15, of: input, session), "the capture thread stopped looking")
        #expect(collector.count == 1)
        // A change outside the crop: still nothing, for fifteen frame times.
        painter.draw([.init(x: 600, y: 400, width: 50, height: 50, color: 0xFF_FFFF)])
        try #require(waitForFrameTimes(15, of: input, session), "the capture thread stopped looking")
        #expect(collector.count == 1)
        // A change inside: one more frame showing it, then quiet again.
        painter.draw([.init(x: 100, y: 100, width: 50, height: 50, color: 0xFF_FFFF)])
        try #require(collector.waitFor(2))
        let changed = try #require(collector.last)
        #expect(rgb(changed, 120, 120) == (255, 255, 255))
        // Quiet again for fifteen frame times.
        try #require(waitForFrameTimes(15, of: input, session), "the capture thread stopped looking")
        #expect(collector.count == 2)
        // Without duplicate removal the same still screen streams every frame time.
        input.removesDuplicateFrames = false
        try #require(collector.waitFor(6))
    }
}

@Suite(
    "avcapture --screen on Xvfb", .serialized,
    .enabled(
        if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct ScreenCaptureToolTests {
    /// Runs avcapture with the real devices (screens are real) on the test's server, no microphone needed.
    private func avcapture(_ arguments: [String], server: XvfbServer) throws -> ToolResult {
        var environment = ProcessInfo.processInfo.environment
        environment["OPENAV_DEVICES"] = "all"
        environment["DISPLAY"] = server.displayName
        environment["WAYLAND_DISPLAY"] = nil  // Wayland's outputs would be chosen over the X server's.
        return try ToolResult.run(executable: toolPath!, arguments, environment: environment)
    }

    @Test("devices lists the screen; record --screen --crop --fps writes a movie of the crop at that rate")
    func recordScreen() throws {
        guard MediaTool.available(for: "ScreenCaptureToolTests.recordScreen"),
            let server = XvfbServer.start(width: 1280, height: 720, for: "ScreenCaptureToolTests.recordScreen")
        else { return }
        let painter = try X11Painter(server: server)
        painter.paint(background: 0x00_00FF, [.init(x: 100, y: 60, width: 320, height: 240, color: 0xFF_0000)])

        let devices = try avcapture(["devices"], server: server)
        #expect(devices.status == 0, "\(devices.error)")
        #expect(devices.outputText.contains("Screens (record --screen N):"))
        #expect(devices.outputText.contains("1280x720 at +0+0"), "\(devices.outputText)")

        let url = try scratchURL("screen-tool.mov", suite: "screen-tool")
        let result = try avcapture(
            [
                "record", url.path, "--screen", "--audio", "none", "--crop", "100,60,320,240", "--fps", "15",
                "--duration", "1",
            ],
            server: server)
        try #require(result.status == 0, "avcapture failed: \(result.error)")
        let video = try #require(try FFprobeReport(url).stream("video"))
        #expect(video["width"] as? Int == 320)
        #expect(video["height"] as? Int == 240)
        // The crop is the red rectangle exactly: its centre and corners decode red.
        let frames = try decodedRGBFrames(url, width: 320, height: 240)
        let first = try #require(frames.first)
        for (x, y) in [(160, 120), (2, 2), (317, 237)] {
            let offset = (y * 320 + x) * 3
            #expect(first[offset] > 230 && first[offset + 1] < 30 && first[offset + 2] < 30, "(\(x), \(y))")
        }
        #expect(frames.count >= 5, "\(frames.count) frames")
        // --fps 15 is a minimum frame duration: no two frames closer than the stream's pacing allows (a frame
        // grabbed late restarts the schedule, so a gap can shrink to 3/4 of 1/15 s, never more).
        let packets = try MediaTool.ffprobe.run([
            "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time", "-of", "csv=p=0", url.path,
        ])
        let times = packets.outputText.split(separator: "\n").compactMap { Double($0) }.sorted()
        let gaps = zip(times, times.dropFirst()).map { $1 - $0 }
        #expect(gaps.allSatisfy { $0 >= 0.75 / 15 - 0.001 }, "gaps \(gaps)")

        let missing = try avcapture(["record", url.path + "2.mov", "--screen", "3", "--audio", "none"], server: server)
        #expect(missing.status == 69)
        #expect(missing.error.contains("no screen 3"), "\(missing.error)")
    }
}
