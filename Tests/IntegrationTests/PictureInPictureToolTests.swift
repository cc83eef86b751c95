// `avcapture preview` and `avcapture serve` with two cameras: the virtual back camera fills the picture and the
// front camera is shown over it, picture in picture, from one multi-camera session. What a person sees is read by
// outside tools: the window through an Xvfb screenshot (xwd), the page's MJPEG stream through ffmpeg, and each
// camera's region is checked for that camera's picture: the colour bars in order, and the frame-index code in the
// corner where that camera's preview puts it (the front camera's preview is mirrored, as Apple mirrors it).

import Foundation
import OpenAVCaptureTesting
import TestSupport
import Testing

/// What a region of a screenshot or a decoded picture shows of a virtual camera's frame.
struct CameraRegion: CustomStringConvertible {
    let grab: ScreenGrab
    let x: Int, y: Int, width: Int, height: Int

    /// The colour at a point given as a share of the region's width and height, named by which channels are lit
    /// (the virtual cameras' bars are 75 % primaries and their mixes, the background an 18 % grey).
    func colour(_ u: Double, _ v: Double) -> String {
        let (r, g, b) = grab.pixel(x + Int(u * Double(width)), y + Int(v * Double(height)))
        let lit = [r, g, b].map { $0 > 110 }
        if [r, g, b].allSatisfy({ $0 < 60 }) { return "black" }
        switch (lit[0], lit[1], lit[2]) {
        case (true, true, true): return "white"
        case (true, true, false): return "yellow"
        case (false, true, true): return "cyan"
        case (false, true, false): return "green"
        case (true, false, true): return "magenta"
        case (true, false, false): return "red"
        case (false, false, true): return "blue"
        default: return "grey"
        }
    }

    /// The bars, left to right, sampled in the middle of each seventh of the width, below the code.
    var bars: [String] { (0..<7).map { colour((Double($0) + 0.5) / 7, 0.24) } }

    /// Pixels close to black in a box of the top corner (the frame-index code is black and white cells there).
    func blackPixels(right: Bool) -> Int {
        let columns =
            right
            ? Int(Double(width) * 0.86)..<Int(Double(width) * 0.99)
            : Int(Double(width) * 0.01)..<Int(Double(width) * 0.14)
        let rows = Int(Double(height) * 0.01)..<Int(Double(height) * 0.11)
        return columns.reduce(0) { count, column in
            count
                + rows.filter { row in
                    let (r, g, b) = grab.pixel(x + column, y + row)
                    return max(r, g, b) < 60
                }.count
        }
    }

    var description: String { "\(width)x\(height) at \(x),\(y): bars \(bars)" }
}

/// The bars as the back camera sees them, and as a mirrored preview of the front camera shows them.
let barsInOrder = ["white", "yellow", "cyan", "green", "magenta", "red", "blue"]

@Suite(
    "avcapture preview and serve: picture in picture", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct PictureInPictureToolTests {
    /// The documented layout: an inset a quarter of the width, its camera's aspect ratio, in the bottom-right
    /// corner with a margin of 2 % of the width (whole pixels, rounded half away from zero).
    static func insetRect(width: Int, height: Int, aspect: Double) -> (x: Int, y: Int, width: Int, height: Int) {
        let margin = Int((Double(width) * 0.02).rounded())
        let insetWidth = Int((Double(width) * 0.25).rounded())
        let insetHeight = Int((Double(insetWidth) / aspect).rounded())
        return (width - margin - insetWidth, height - margin - insetHeight, insetWidth, insetHeight)
    }

    /// The back camera fills `main`, the front camera's mirrored preview is in `inset`.
    static func expectBothCameras(in grab: ScreenGrab, main: CameraRegion, inset: CameraRegion) {
        #expect(main.bars == barsInOrder, "the back camera's region: \(main)")
        #expect(main.blackPixels(right: false) > 0, "no frame-index code top left in \(main)")
        #expect(main.blackPixels(right: true) == 0, "black top right in \(main)")
        // Under the inset the back camera shows 18 % grey: bars there are the front camera's.
        #expect(inset.bars == barsInOrder, "the front camera's region: \(inset)")
        #expect(inset.blackPixels(right: true) > 0, "no mirrored frame-index code top right in \(inset)")
        #expect(inset.blackPixels(right: false) == 0, "black top left in \(inset): not the mirrored front camera")
    }

    @Test("preview --video back --video front: the front camera inset bottom right in the window")
    func previewWindow() throws {
        guard let xvfb = XvfbServer.start(width: 800, height: 450, for: "avcapture preview picture in picture") else {
            return
        }
        guard FileManager.default.isExecutableFile(atPath: ScreenGrab.xwdPath) else {
            return print(
                "Skipping picture in picture: \(ScreenGrab.xwdPath) not installed (make test installs x11-apps)")
        }
        let directory = try scratchURL("pip-preview-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let tool = try RunningTool(
            [
                "preview", "--video", "back", "--video", "front", "--audio", "none", "--preset", "1280x720",
                "--size", "800x450",
            ], in: directory, display: xvfb.displayName)
        let showing = try #require(tool.line(startingWith: "showing"), "no frame shown: \(tool.standardError)")
        let expected = Self.insetRect(width: 800, height: 450, aspect: 16.0 / 9)
        #expect(
            showing.hasSuffix(
                "insets: Virtual Front Camera at \(expected.x),\(expected.y) \(expected.width)x\(expected.height)"),
            "\(showing)")
        // The inset's first frame may reach the screen after the main one's: look again until it has (the tool
        // draws on the host clock in a process of its own).
        var grab = try ScreenGrab.take(display: xvfb.displayName)
        _ = waitUntil(timeout: 10) {
            grab = (try? ScreenGrab.take(display: xvfb.displayName)) ?? grab
            return CameraRegion(
                grab: grab, x: expected.x, y: expected.y, width: expected.width, height: expected.height
            ).bars == barsInOrder
        }
        Self.expectBothCameras(
            in: grab, main: CameraRegion(grab: grab, x: 0, y: 0, width: 800, height: 450),
            inset: CameraRegion(
                grab: grab, x: expected.x, y: expected.y, width: expected.width, height: expected.height))
        try xvfb.xdotool("key", "Escape")
        #expect(tool.wait() == 0, "\(tool.standardError)")
    }

    @Test("serve --video back --video front: ffmpeg reads both cameras in the MJPEG stream's pictures")
    func serveStream() throws {
        guard MediaTool.available([.ffmpeg, .ffprobe], for: "serve picture in picture") else { return }
        let server = try RunningServer(["--video", "back", "--video", "front", "--audio", "none"])
        defer { _ = server.stop() }
        #expect(server.tool.outputLines.first?.hasSuffix("; insets: Virtual Front Camera") == true)
        // The tenth picture: the front camera's first frames may reach the stream after the back camera's (on a
        // loaded machine later than that: seen all white where the inset goes), so look again, as the preview
        // test does, until the inset has come; what is checked is the picture then.
        let picture = server.directory.appendingPathComponent("stream.png")
        let expected = Self.insetRect(width: 1280, height: 720, aspect: 16.0 / 9)
        var latest: ScreenGrab?
        for _ in 0..<5 {
            let read = try MediaTool.ffmpeg.run([
                "-nostdin", "-v", "error", "-rw_timeout", "10000000", "-f", "mpjpeg", "-i",
                "http://127.0.0.1:\(server.port)/stream", "-frames:v", "10", "-update", "1", "-y", picture.path,
            ])
            try #require(read.status == 0, "ffmpeg could not read the stream: \(read.error)")
            let taken = try ScreenGrab(png: picture)
            latest = taken
            let inset = CameraRegion(
                grab: taken, x: expected.x, y: expected.y, width: expected.width, height: expected.height)
            if inset.bars == barsInOrder { break }
        }
        let grab = try #require(latest)
        #expect(grab.width == 1280 && grab.height == 720)
        Self.expectBothCameras(
            in: grab, main: CameraRegion(grab: grab, x: 0, y: 0, width: 1280, height: 720),
            inset: CameraRegion(
                grab: grab, x: expected.x, y: expected.y, width: expected.width, height: expected.height))
        #expect(server.stop() == 0, "\(server.tool.standardError)")
    }
}
