// A screenshot of an X server taken by an outside tool (xwd, from Debian's x11-apps) and read as RGB, so what a
// window showed is checked by something other than the code that drew it.

import Foundation
import TestSupport

/// The root window of an X display as RGB pixels.
struct ScreenGrab {
    static let xwdPath = "/usr/bin/xwd"

    let width: Int
    let height: Int
    /// `width * height * 3` bytes, rows top to bottom.
    let rgb: [UInt8]

    /// Runs `xwd -root` on `display` and decodes its XWD file (a 24- or 32-bit TrueColor image).
    static func take(display: String) throws -> ScreenGrab {
        let result = try ToolResult.run(
            executable: xwdPath, ["-root", "-silent", "-display", display], environment: ProcessInfo.processInfo.environment)
        guard result.status == 0 else { throw MediaToolFailure(description: "xwd failed: \(result.error)") }
        return try ScreenGrab(xwd: [UInt8](result.output))
    }

    /// Decodes a PNG (a browser's screenshot) to RGB with ffmpeg.
    init(png url: URL) throws {
        let probe = try MediaTool.ffprobe.run([
            "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height", "-of", "csv=p=0", url.path,
        ])
        let size = String(decoding: probe.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            .split(separator: ",").compactMap { Int($0) }
        guard size.count == 2 else { throw MediaToolFailure(description: "ffprobe cannot read \(url.path)") }
        let decoded = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-i", url.path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-",
        ])
        guard decoded.status == 0, decoded.output.count == size[0] * size[1] * 3 else {
            throw MediaToolFailure(description: "ffmpeg cannot decode \(url.path): \(decoded.error)")
        }
        (width, height, rgb) = (size[0], size[1], [UInt8](decoded.output))
    }

    /// Decodes an XWD file: a header of big-endian 32-bit fields, the window name, the colour map, then pixels.
    init(xwd bytes: [UInt8]) throws {
        func field(_ index: Int) -> Int {
            let offset = index * 4
            return Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8
                | Int(bytes[offset + 3])
        }
        guard bytes.count >= 100 else { throw MediaToolFailure(description: "xwd wrote \(bytes.count) bytes") }
        let headerSize = field(0)
        let (width, height) = (field(4), field(5))
        let byteOrder = field(7)
        let bitsPerPixel = field(11)
        let bytesPerLine = field(12)
        let (redMask, greenMask, blueMask) = (field(14), field(15), field(16))
        let colourCount = field(19)
        let start = headerSize + colourCount * 12
        // Pixels are 4 bytes (depth 24 in 32 bits), or 3 packed in padded lines (Xvfb answers so at times: seen in
        // an 800x600 screen whose window had been resized).
        let bytesPerPixel = bitsPerPixel / 8
        guard [24, 32].contains(bitsPerPixel), bytesPerLine >= width * bytesPerPixel,
            start + bytesPerLine * height <= bytes.count
        else {
            throw MediaToolFailure(
                description: "xwd wrote a \(width)x\(height) image of \(bitsPerPixel) bits per pixel, "
                    + "\(bytesPerLine) bytes a line, in \(bytes.count) bytes; expected 24 or 32 bits per pixel and "
                    + "\(start + bytesPerLine * height) bytes")
        }
        func shift(_ mask: Int) -> Int { mask.trailingZeroBitCount }
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let offset = start + y * bytesPerLine + x * bytesPerPixel
                var pixel = 0
                for byte in 0..<bytesPerPixel {
                    let value = Int(bytes[offset + byte])
                    pixel |= byteOrder == 0 ? value << (8 * byte) : value << (8 * (bytesPerPixel - 1 - byte))
                }
                let target = (y * width + x) * 3
                rgb[target] = UInt8((pixel & redMask) >> shift(redMask))
                rgb[target + 1] = UInt8((pixel & greenMask) >> shift(greenMask))
                rgb[target + 2] = UInt8((pixel & blueMask) >> shift(blueMask))
            }
        }
        (self.width, self.height, self.rgb) = (width, height, rgb)
    }

    /// The (red, green, blue) at a pixel.
    func pixel(_ x: Int, _ y: Int) -> (Int, Int, Int) {
        let offset = (y * width + x) * 3
        return (Int(rgb[offset]), Int(rgb[offset + 1]), Int(rgb[offset + 2]))
    }

    /// The brightest channel anywhere in a rectangle of pixels: 0 means all black.
    func brightest(x: Range<Int>, y: Range<Int>) -> Int {
        var brightest = 0
        for row in y { for column in x { let (r, g, b) = pixel(column, row); brightest = max(brightest, r, g, b) } }
        return brightest
    }

    /// Video-range luma (BT.601: black 16, white 235) of a rectangle, optionally flipped left to right, as the
    /// virtual camera's frame reader takes it.
    func luma(x: Range<Int>, y: Range<Int>, flippedHorizontally: Bool = false) -> [UInt8] {
        var plane: [UInt8] = []
        plane.reserveCapacity(x.count * y.count)
        for row in y {
            for index in 0..<x.count {
                let column = flippedHorizontally ? x.upperBound - 1 - index : x.lowerBound + index
                let (r, g, b) = pixel(column, row)
                let value = 16 + (65.738 * Double(r) + 129.057 * Double(g) + 25.064 * Double(b)) / 256
                plane.append(UInt8(max(0, min(255, value.rounded()))))
            }
        }
        return plane
    }

    /// The luma of a picture shown turned clockwise by `degrees` (90, 180 or 270) in the rectangle at `origin`,
    /// turned back: `width` x `height` is the picture's own size, before the turn.
    func luma(ofPictureTurnedBy degrees: Int, at origin: (x: Int, y: Int), width: Int, height: Int) -> [UInt8] {
        var plane: [UInt8] = []
        plane.reserveCapacity(width * height)
        for v in 0..<height {
            for u in 0..<width {
                // Where the picture's (u, v) lands after the clockwise turn, in the shown rectangle.
                let (x, y) =
                    switch degrees {
                    case 90: (height - 1 - v, u)
                    case 180: (width - 1 - u, height - 1 - v)
                    case 270: (v, width - 1 - u)
                    default: (u, v)
                    }
                let (r, g, b) = pixel(origin.x + x, origin.y + y)
                let value = 16 + (65.738 * Double(r) + 129.057 * Double(g) + 25.064 * Double(b)) / 256
                plane.append(UInt8(max(0, min(255, value.rounded()))))
            }
        }
        return plane
    }

    /// Writes the screenshot as a PNG (through ffmpeg), for the README or a failing test's evidence.
    func writePNG(to url: URL) throws {
        let raw = FileManager.default.temporaryDirectory.appendingPathComponent("grab-\(UUID().uuidString).rgb")
        try Data(rgb).write(to: raw)
        defer { try? FileManager.default.removeItem(at: raw) }
        let result = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", "\(width)x\(height)", "-i",
            raw.path, url.path,
        ])
        guard result.status == 0 else { throw MediaToolFailure(description: "ffmpeg: \(result.error)") }
    }
}
