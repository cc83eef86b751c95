// The SDL2 preview window on an Xvfb server of the test's own, driven through the seed's camera controller as the
// camera app drives it: screenshots taken by xwd show the virtual camera's live frame (its frame-index code read
// from the screen's pixels advances), black bars exactly where the layer's gravity puts them, the picture mirrored
// when the connection mirrors it; a click made by xdotool sets the camera's focus point of interest.

import CameraControllerExample
import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import OpenAVCaptureUI
import Synchronization
import TestSupport
import Testing

/// A preview window on its own thread showing the back camera (640x480) through a `CameraController`.
final class WindowUnderTest: @unchecked Sendable {
    let controller: CameraController
    let layer: AVCaptureVideoPreviewLayer
    let window: PreviewWindow
    private let finished = DispatchSemaphore(value: 0)
    private let failure = Mutex<String?>(nil)

    init(
        size: CGSize, gravity: AVLayerVideoGravity, mirrored: Bool = false, rotation: CGFloat = 0,
        drawing: PreviewWindow.Drawing = .automatic
    ) throws {
        controller = CameraController(mediaDirectory: FileManager.default.temporaryDirectory)
        try controller.setupSession(camera: VirtualDevices.back, microphone: nil, preset: .vga640x480)
        layer = AVCaptureVideoPreviewLayer(session: controller.captureSession)
        layer.videoGravity = gravity
        if mirrored, let connection = layer.connection {
            connection.automaticallyAdjustsVideoMirroring = false
            connection.isVideoMirrored = true
        }
        layer.connection?.videoRotationAngle = rotation
        window = PreviewWindow(
            layer: layer, title: "PreviewWindowTests", size: size, position: .zero, drawing: drawing)
        // What the camera app does with a click: focus where the layer says the click lands on the sensor.
        window.setEventHandler { [controller, layer] event in
            if case .click(let point, count: 1) = event {
                controller.focus(at: layer.captureDevicePointConverted(fromLayerPoint: point))
            }
        }
        let thread = Thread { [self] in
            do { try window.run() } catch { failure.withLock { $0 = "\(error)" } }
            finished.signal()
        }
        thread.start()
        controller.startSession()
    }

    /// Waits for the first frame on the screen; fails the test with the window's error when there is none.
    func waitUntilShowing() throws {
        let shown = window.waitForFirstFrame(timeout: 20)
        try #require(shown, "the window drew no frame: \(failure.withLock { $0 } ?? "no error")")
    }

    /// Waits until `count` more frames have been drawn than now (or 10 s pass).
    func waitForFrames(_ count: Int) -> Bool {
        let target = window.statistics.framesDrawn + count
        _ = waitUntil(timeout: 10, every: 0.005) { window.statistics.framesDrawn >= target }
        return window.statistics.framesDrawn >= target
    }

    func close() {
        window.stop()
        finished.wait()
        controller.stopSession()
    }
}

/// The frame index `read` finds in a screenshot of `display`, taking up to three: a screenshot can come between
/// two of the window's updates of the X server and show parts of two frames (tearing: no X11 window without a
/// compositor is free of it), which a person never notices and a code reader cannot read.
func frameIndexOnScreen(_ display: String, _ read: (ScreenGrab) -> UInt32?) throws -> UInt32? {
    for _ in 0..<3 {
        if let index = read(try ScreenGrab.take(display: display)) { return index }
    }
    return nil
}

/// Both ways a window draws: frames uploaded as they are (SDL's OpenGL renderer converts and scales them; on Xvfb
/// that is Mesa's llvmpipe), and frames converted and scaled by libswscale for SDL's software renderer.
enum PreviewDrawingPath {
    static let both: [PreviewWindow.Drawing] = [.gpu, .cpu]
}

@Suite(.serialized) struct PreviewWindowTests {
    /// 640x480 in an 800x480 window, aspect fit: the picture spans x 80 ..< 720, with black bars 80 wide each side.
    @Test(arguments: PreviewDrawingPath.both)
    func aspectFitShowsTheLiveFrameBetweenBarsAtTheSides(drawing: PreviewWindow.Drawing) throws {
        guard let xvfb = XvfbServer.start(width: 800, height: 480, for: "aspectFitShowsTheLiveFrameBetweenBarsAtTheSides")
        else { return }
        guard FileManager.default.isExecutableFile(atPath: ScreenGrab.xwdPath) else {
            print("Skipping: \(ScreenGrab.xwdPath) not installed (make test installs x11-apps)")
            return
        }
        let app = try WindowUnderTest(
            size: CGSize(width: 800, height: 480), gravity: .resizeAspect, drawing: drawing)
        defer { app.close() }
        try app.waitUntilShowing()
        #expect(app.layer.bounds == CGRect(x: 0, y: 0, width: 800, height: 480))

        let first = try ScreenGrab.take(display: xvfb.displayName)
        if let path = ProcessInfo.processInfo.environment["OPENAV_SCREENSHOT_DIR"] {
            try first.writePNG(to: URL(fileURLWithPath: path).appendingPathComponent("preview-window.png"))
        }
        #expect(first.brightest(x: 0..<80, y: 0..<480) == 0, "the left bar is not black")
        #expect(first.brightest(x: 720..<800, y: 0..<480) == 0, "the right bar is not black")
        // The picture begins exactly at the bars' edges: its first and last columns are lit somewhere.
        #expect(first.brightest(x: 80..<81, y: 0..<480) > 0 && first.brightest(x: 719..<720, y: 0..<480) > 0)
        let firstIndex = try frameIndexOnScreen(xvfb.displayName) {
            VirtualFrameReader.readFrameIndex(fromLuma: $0.luma(x: 80..<720, y: 0..<480), width: 640, height: 480)
        }
        let index = try #require(firstIndex, "no frame-index code on the screen")

        #expect(app.waitForFrames(5))
        let laterIndex = try frameIndexOnScreen(xvfb.displayName) {
            VirtualFrameReader.readFrameIndex(fromLuma: $0.luma(x: 80..<720, y: 0..<480), width: 640, height: 480)
        }
        #expect(try #require(laterIndex) > index, "the screen still shows frame \(index)")
        #expect(app.window.drawsOnCPU == (drawing == .cpu))
        print(
            "PreviewWindowTests: \(drawing), renderer \(app.window.rendererName), frames \(index) then "
                + "\(laterIndex ?? 0)")
    }

    /// 640x480 in a 640x600 window, aspect fit: bars 60 high above and below.
    @Test(arguments: PreviewDrawingPath.both)
    func aspectFitInATallWindowPutsTheBarsAboveAndBelow(drawing: PreviewWindow.Drawing) throws {
        guard let xvfb = XvfbServer.start(width: 640, height: 600, for: "aspectFitInATallWindowPutsTheBarsAboveAndBelow")
        else { return }
        guard FileManager.default.isExecutableFile(atPath: ScreenGrab.xwdPath) else { return }
        let app = try WindowUnderTest(
            size: CGSize(width: 640, height: 600), gravity: .resizeAspect, drawing: drawing)
        defer { app.close() }
        try app.waitUntilShowing()
        let grab = try ScreenGrab.take(display: xvfb.displayName)
        #expect(grab.brightest(x: 0..<640, y: 0..<60) == 0 && grab.brightest(x: 0..<640, y: 540..<600) == 0)
        #expect(grab.brightest(x: 0..<640, y: 60..<61) > 0 && grab.brightest(x: 0..<640, y: 539..<540) > 0)
        let shown = try frameIndexOnScreen(xvfb.displayName) {
            VirtualFrameReader.readFrameIndex(fromLuma: $0.luma(x: 0..<640, y: 60..<540), width: 640, height: 480)
        }
        #expect(shown != nil, "no frame-index code between the bars")
    }

    /// Fill: the picture covers the whole window (no bar anywhere), cropped top and bottom.
    @Test(arguments: PreviewDrawingPath.both)
    func aspectFillLeavesNoBars(drawing: PreviewWindow.Drawing) throws {
        guard let xvfb = XvfbServer.start(width: 800, height: 480, for: "aspectFillLeavesNoBars") else { return }
        guard FileManager.default.isExecutableFile(atPath: ScreenGrab.xwdPath) else { return }
        let app = try WindowUnderTest(
            size: CGSize(width: 800, height: 480), gravity: .resizeAspectFill, drawing: drawing)
        defer { app.close() }
        try app.waitUntilShowing()
        let grab = try ScreenGrab.take(display: xvfb.displayName)
        #expect(grab.brightest(x: 0..<1, y: 0..<480) > 0 && grab.brightest(x: 799..<800, y: 0..<480) > 0)
        #expect(grab.brightest(x: 0..<800, y: 0..<1) > 0 && grab.brightest(x: 0..<800, y: 479..<480) > 0)
    }

    /// A mirrored connection shows the picture flipped: the frame-index code reads only from the flipped screen.
    @Test(arguments: PreviewDrawingPath.both)
    func mirroringFlipsThePictureOnTheScreen(drawing: PreviewWindow.Drawing) throws {
        guard let xvfb = XvfbServer.start(width: 640, height: 480, for: "mirroringFlipsThePictureOnTheScreen") else {
            return
        }
        guard FileManager.default.isExecutableFile(atPath: ScreenGrab.xwdPath) else { return }
        let app = try WindowUnderTest(
            size: CGSize(width: 640, height: 480), gravity: .resizeAspect, mirrored: true, drawing: drawing)
        defer { app.close() }
        try app.waitUntilShowing()
        #expect(app.layer.connection?.isVideoMirrored == true)
        let grab = try ScreenGrab.take(display: xvfb.displayName)
        let asShown = VirtualFrameReader.readFrameIndex(
            fromLuma: grab.luma(x: 0..<640, y: 0..<480), width: 640, height: 480)
        let flippedBack = try frameIndexOnScreen(xvfb.displayName) {
            VirtualFrameReader.readFrameIndex(
                fromLuma: $0.luma(x: 0..<640, y: 0..<480, flippedHorizontally: true), width: 640, height: 480)
        }
        #expect(asShown == nil, "the code reads unflipped: the picture is not mirrored")
        #expect(flippedBack != nil, "the code does not read from the flipped screen")
    }

    /// A click at (240, 120) in the 800x480 aspect-fit window lands on the sensor at ((240 - 80) / 640, 120 / 480).
    @Test func aClickFocusesAtTheConvertedPoint() throws {
        guard let xvfb = XvfbServer.start(width: 800, height: 480, for: "aClickFocusesAtTheConvertedPoint") else {
            return
        }
        let app = try WindowUnderTest(size: CGSize(width: 800, height: 480), gravity: .resizeAspect)
        defer { app.close() }
        try app.waitUntilShowing()
        let camera = VirtualDevices.back
        try #require(camera.isFocusPointOfInterestSupported)
        try xvfb.xdotool("mousemove", "240", "120")
        try xvfb.xdotool("click", "1")
        let expected = CGPoint(x: 0.25, y: 0.25)
        _ = waitUntil(timeout: 10, every: 0.005) { camera.focusPointOfInterest == expected }
        #expect(camera.focusPointOfInterest == expected)
        // A one-shot autofocus: .autoFocus while it runs, .locked once it has settled (as Apple's).
        #expect([.autoFocus, .locked].contains(camera.focusMode))
        app.controller.resetFocusAndExposureModes()
        #expect(camera.focusPointOfInterest == CGPoint(x: 0.5, y: 0.5))
    }

    /// The connection turned 90° clockwise: the 640x480 picture stands 480 wide and 640 high, filling a 480x640
    /// window; its frame-index code reads once the screen is turned back, and not as it is shown.
    @Test(arguments: PreviewDrawingPath.both)
    func aTurnedConnectionShowsThePictureTurned(drawing: PreviewWindow.Drawing) throws {
        guard let xvfb = XvfbServer.start(width: 480, height: 640, for: "aTurnedConnectionShowsThePictureTurned")
        else { return }
        guard FileManager.default.isExecutableFile(atPath: ScreenGrab.xwdPath) else { return }
        let app = try WindowUnderTest(
            size: CGSize(width: 480, height: 640), gravity: .resizeAspect, rotation: 90, drawing: drawing)
        defer { app.close() }
        try app.waitUntilShowing()
        #expect(app.layer.connection?.videoRotationAngle == 90)
        let grab = try ScreenGrab.take(display: xvfb.displayName)
        let turnedBack = try frameIndexOnScreen(xvfb.displayName) {
            VirtualFrameReader.readFrameIndex(
                fromLuma: $0.luma(ofPictureTurnedBy: 90, at: (0, 0), width: 640, height: 480), width: 640, height: 480)
        }
        let turnedTheOtherWay = VirtualFrameReader.readFrameIndex(
            fromLuma: grab.luma(ofPictureTurnedBy: 270, at: (0, 0), width: 640, height: 480), width: 640, height: 480)
        #expect(turnedBack != nil, "the code does not read from the screen turned back by 90°")
        #expect(turnedTheOtherWay == nil, "the code reads from the screen turned the wrong way")
    }

    /// Resized from 800x480 to 640x600, the window keeps the layer's bounds equal to its size and redraws with
    /// the bars where aspect fit now puts them: 60 high above and below, none at the sides.
    @Test(arguments: PreviewDrawingPath.both)
    func aResizedWindowRedrawsWithTheNewBars(drawing: PreviewWindow.Drawing) throws {
        guard let xvfb = XvfbServer.start(width: 800, height: 600, for: "aResizedWindowRedrawsWithTheNewBars")
        else { return }
        guard FileManager.default.isExecutableFile(atPath: ScreenGrab.xwdPath) else { return }
        let app = try WindowUnderTest(
            size: CGSize(width: 800, height: 480), gravity: .resizeAspect, drawing: drawing)
        defer { app.close() }
        try app.waitUntilShowing()
        try xvfb.xdotool("search", "--name", "PreviewWindowTests", "windowsize", "640", "600")
        let resized = CGRect(x: 0, y: 0, width: 640, height: 600)
        _ = waitUntil(timeout: 10, every: 0.005) { app.layer.bounds == resized }
        #expect(app.layer.bounds == resized)
        #expect(app.waitForFrames(3))
        let grab = try ScreenGrab.take(display: xvfb.displayName)
        #expect(grab.brightest(x: 0..<640, y: 0..<60) == 0 && grab.brightest(x: 0..<640, y: 540..<600) == 0)
        #expect(grab.brightest(x: 0..<1, y: 60..<540) > 0 && grab.brightest(x: 639..<640, y: 60..<540) > 0)
        let shown = try frameIndexOnScreen(xvfb.displayName) {
            VirtualFrameReader.readFrameIndex(fromLuma: $0.luma(x: 0..<640, y: 60..<540), width: 640, height: 480)
        }
        #expect(shown != nil, "no frame-index code between the bars")
    }
}
