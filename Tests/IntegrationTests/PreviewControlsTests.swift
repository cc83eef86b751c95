// The session's controls in the SDL2 preview window on an Xvfb server of the test's own: the camera controller puts
// the system zoom and exposure sliders in the session (as an iOS 18 app does), the window draws them over the
// picture, xdotool drags the zoom slider's thumb and presses the arrow keys as a person would, and the camera follows:
// its videoZoomFactor and exposureTargetBias read back through the API, the thumb's place read from a screenshot
// (xwd), and the picture's colour bars, read from the screenshot's pixels, are where the zoom factor puts them.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import OpenAVCaptureUI
import TestSupport
import Testing

/// Where the virtual camera's colour bars are in a zoomed picture: the bars fill the top third of the scene, seven
/// of them across; a zoom by `factor` about the centre shows the scene's `0.5 + (u - 0.5) / factor` at `u`.
enum ZoomedBars {
    /// The bar expected at `u` (0 ... 1 across the picture) in a picture zoomed by `factor`, or nil when `u` falls
    /// within a sixth of a bar of an edge (a sample there could read either bar, or their blend).
    static func colour(at u: Double, zoom factor: Double) -> String? {
        let scene = 0.5 + (u - 0.5) / factor
        let bar = scene * 7
        let within = bar - bar.rounded(.down)
        guard (0.17...0.83).contains(within), (0..<7).contains(Int(bar)) else { return nil }
        return barsInOrder[Int(bar)]
    }

    /// Where to sample across the picture: clear of the frame-index code in the top corners.
    static let samples: [Double] = stride(from: 0.2, through: 0.8, by: 0.04).map { $0 }

    /// Rows to sample: near the top, which shows bars up to a zoom of about 2.7 (the scene's top third).
    static let row = 0.05

    /// The samples of `region` that do not show what a zoom by `factor` puts there (empty: it matches).
    static func mismatches(in region: CameraRegion, zoom factor: Double) -> [String] {
        samples.compactMap { u in
            guard let expected = colour(at: u, zoom: factor) else { return nil }
            let seen = region.colour(u, row)
            return seen == expected ? nil : String(format: "%.2f: %@ for %@", u, seen, expected)
        }
    }
}

@Suite(.serialized) struct PreviewControlsTests {
    /// The white run along a row of the screenshot within `x`: the thumb's centre (the track is grey and yellow,
    /// the panel behind it dark), or nil without one.
    static func thumbCentre(in grab: ScreenGrab, y: Int, x: Range<Int>) -> Double? {
        let white = x.filter { column in
            let (r, g, b) = grab.pixel(column, y)
            return r > 235 && g > 235 && b > 235
        }
        guard let first = white.first, let last = white.last, last - first < 16 else { return nil }
        return Double(first + last) / 2
    }

    @Test("the zoom and exposure sliders are drawn at their values; a drag zooms the camera, the arrows move exposure")
    func slidersInTheWindow() throws {
        guard let xvfb = XvfbServer.start(width: 800, height: 480, for: "PreviewControlsTests") else { return }
        guard FileManager.default.isExecutableFile(atPath: ScreenGrab.xwdPath) else {
            return print(
                "Skipping PreviewControlsTests: \(ScreenGrab.xwdPath) not installed (make test installs x11-apps)")
        }
        let camera = VirtualDevices.back
        defer {
            try? camera.lockForConfiguration()
            camera.videoZoomFactor = 1
            camera.setExposureTargetBias(0, completionHandler: nil)
            camera.unlockForConfiguration()
        }
        let app = try WindowUnderTest(size: CGSize(width: 800, height: 480), gravity: .resizeAspect)
        defer { app.close() }
        app.controller.addSystemControls()
        let controls = app.controller.captureSession.controls
        try #require(controls.count == 2, "the controller added \(controls.count) controls")
        #expect(controls[0] is AVCaptureSystemZoomSlider && controls[1] is AVCaptureSystemExposureBiasSlider)
        try app.waitUntilShowing()
        #expect(controls.allSatisfy { $0.appearance?.isEnabled == true }, "the controller is the controls delegate")

        // 640x480 fitted in 800x480: the picture spans x 80 ..< 720. Two rows of 44 above a margin of 20 at the
        // bottom: the zoom track's centre line at y 401, the exposure track's at 445; both tracks x 100 ... 420.
        let track = (left: 100.0, width: 320.0)
        let zoomRange = (camera.minAvailableVideoZoomFactor, camera.maxAvailableVideoZoomFactor)
        let grab = try ScreenGrab.take(display: xvfb.displayName)
        if let path = ProcessInfo.processInfo.environment["OPENAV_SCREENSHOT_DIR"] {
            try grab.writePNG(to: URL(fileURLWithPath: path).appendingPathComponent("preview-controls.png"))
        }
        let zoomThumb = Self.thumbCentre(in: grab, y: 401, x: 92..<428)
        #expect(
            zoomThumb.map { abs($0 - track.left) <= 1.5 } == true,
            "the zoom thumb at \(String(describing: zoomThumb)), 1x")
        let biasThumb = Self.thumbCentre(in: grab, y: 445, x: 92..<428)
        #expect(
            biasThumb.map { abs($0 - (track.left + track.width / 2)) <= 1.5 } == true,
            "the exposure thumb at \(String(describing: biasThumb)), 0 EV")
        let picture = { (grab: ScreenGrab) in CameraRegion(grab: grab, x: 80, y: 0, width: 640, height: 480) }
        // The bars at 1x. Polled: the camera's once-a-second flash frame, all white, may be what is on the screen.
        var unzoomed = ZoomedBars.mismatches(in: picture(grab), zoom: 1)
        _ = waitUntil(timeout: 10) {
            guard let grab = try? ScreenGrab.take(display: xvfb.displayName) else { return false }
            unzoomed = ZoomedBars.mismatches(in: picture(grab), zoom: 1)
            return unzoomed.isEmpty
        }
        #expect(unzoomed.isEmpty, "the bars at 1x off at \(unzoomed)")

        // Drag the zoom thumb 21 pixels right, in steps as a hand moves: about 2x on the back camera's 1 ... 16.
        try xvfb.xdotool("mousemove", "100", "401")
        try xvfb.xdotool("mousedown", "1")
        for x in [106, 112, 118, 121] { try xvfb.xdotool("mousemove", "\(x)", "401") }
        try xvfb.xdotool("mouseup", "1")
        let expectedZoom = zoomRange.0 + (zoomRange.1 - zoomRange.0) * 21 / track.width
        let moved = waitUntil(timeout: 10) { abs(camera.videoZoomFactor - expectedZoom) < 0.05 }
        #expect(moved, "the camera's zoom is \(camera.videoZoomFactor), expected \(expectedZoom)")
        let zoom = Double(camera.videoZoomFactor)

        // The thumb is drawn at the new value, and the picture shows the zoom (the camera's next frames): the bars
        // where a zoom by the device's factor puts them. Polled: the zoom reaches the screen a few frames later.
        var last = (thumb: Double?.none, mismatches: [String]())
        let shown = waitUntil(timeout: 10) {
            guard let grab = try? ScreenGrab.take(display: xvfb.displayName) else { return false }
            last = (
                Self.thumbCentre(in: grab, y: 401, x: 92..<428), ZoomedBars.mismatches(in: picture(grab), zoom: zoom)
            )
            return last.mismatches.isEmpty && last.thumb.map { abs($0 - 121) <= 1.5 } == true
        }
        #expect(shown, "at \(zoom)x the thumb at \(String(describing: last.thumb)), bars off: \(last.mismatches)")

        // Down chooses the exposure slider; Right moves it a twentieth of its range, Left twice as far back.
        let biasStep = (camera.maxExposureTargetBias - camera.minExposureTargetBias) / 20
        try xvfb.xdotool("key", "Down")
        try xvfb.xdotool("key", "Right")
        #expect(
            waitUntil(timeout: 10) { abs(camera.exposureTargetBias - biasStep) < 0.001 }, "\(camera.exposureTargetBias)"
        )
        try xvfb.xdotool("key", "Left")
        try xvfb.xdotool("key", "Left")
        #expect(
            waitUntil(timeout: 10) { abs(camera.exposureTargetBias + biasStep) < 0.001 }, "\(camera.exposureTargetBias)"
        )
        // The zoom was left where the drag put it.
        #expect(camera.videoZoomFactor == CGFloat(zoom))
    }
}
