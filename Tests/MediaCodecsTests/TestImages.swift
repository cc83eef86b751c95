// Test images: colour bars written as BT.709 Y'CbCr or BGRA, and readers for the pixels converters produce.

import OpenCoreVideo
import Testing

/// An 8-bit R'G'B' colour.
struct RGB: Equatable, CustomStringConvertible {
    var red: UInt8
    var green: UInt8
    var blue: UInt8

    var description: String { "(\(red), \(green), \(blue))" }

    /// The largest difference of one component.
    func distance(to other: RGB) -> Int {
        max(
            abs(Int(red) - Int(other.red)), abs(Int(green) - Int(other.green)), abs(Int(blue) - Int(other.blue)))
    }

    /// The colour at `level` (0…1) of full scale in each component that is on: bars are 100% or 75% bars.
    static func bar(red: Bool, green: Bool, blue: Bool, level: Double) -> RGB {
        let value = UInt8((255 * level).rounded())
        return RGB(red: red ? value : 0, green: green ? value : 0, blue: blue ? value : 0)
    }

    /// The eight bars of a colour-bar chart, left to right: white, yellow, cyan, green, magenta, red, blue, black.
    static func colourBars(level: Double) -> [RGB] {
        [
            bar(red: true, green: true, blue: true, level: level),
            bar(red: true, green: true, blue: false, level: level),
            bar(red: false, green: true, blue: true, level: level),
            bar(red: false, green: true, blue: false, level: level),
            bar(red: true, green: false, blue: true, level: level),
            bar(red: true, green: false, blue: false, level: level),
            bar(red: false, green: false, blue: true, level: level),
            RGB(red: 0, green: 0, blue: 0),
        ]
    }
}

/// Video-range BT.709 Y'CbCr of a colour, rounded: what a camera writes.
func videoRangeBT709(_ colour: RGB) -> (y: UInt8, cb: UInt8, cr: UInt8) {
    let r = Double(colour.red) / 255
    let g = Double(colour.green) / 255
    let b = Double(colour.blue) / 255
    let y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    func byte(_ value: Double) -> UInt8 { UInt8(min(max(value.rounded(), 0), 255)) }
    return (byte(16 + 219 * y), byte(128 + 224 * (b - y) / 1.8556), byte(128 + 224 * (r - y) / 1.5748))
}

/// A new buffer, or a failed expectation.
func makeBuffer(_ pixelFormat: OSType, width: Int, height: Int) throws -> CVPixelBuffer {
    var buffer: CVPixelBuffer?
    let status = CVPixelBufferCreate(nil, width, height, pixelFormat, nil, &buffer)
    try #require(status == kCVReturnSuccess)
    return try #require(buffer)
}

/// An NV12 video-range buffer of vertical bars, equally wide, in BT.709: `colours[i]` fills bar `i`.
func makeNV12Bars(_ colours: [RGB], width: Int, height: Int) throws -> CVPixelBuffer {
    let buffer = try makeBuffer(kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, width: width, height: height)
    let barWidth = width / colours.count
    buffer.withLockedPlanes { planes in
        let luma = planes[0]
        let chroma = planes[1]
        for y in 0..<luma.height {
            let row = luma.row(y)
            for x in 0..<width { row[x] = videoRangeBT709(colours[min(x / barWidth, colours.count - 1)]).y }
        }
        for y in 0..<chroma.height {
            let row = chroma.row(y)
            for x in 0..<chroma.width {
                let sample = videoRangeBT709(colours[min(2 * x / barWidth, colours.count - 1)])
                row[2 * x] = sample.cb
                row[2 * x + 1] = sample.cr
            }
        }
    }
    return buffer
}

/// A BGRA buffer whose pixel (x, y) is `colour(x, y)`.
func makeBGRA(width: Int, height: Int, _ colour: (Int, Int) -> RGB) throws -> CVPixelBuffer {
    let buffer = try makeBuffer(kCVPixelFormatType_32BGRA, width: width, height: height)
    buffer.withLockedPlanes { planes in
        for y in 0..<height {
            let row = planes[0].row(y)
            for x in 0..<width {
                let c = colour(x, y)
                row[4 * x] = c.blue
                row[4 * x + 1] = c.green
                row[4 * x + 2] = c.red
                row[4 * x + 3] = 255
            }
        }
    }
    return buffer
}

/// The colour of BGRA pixel (x, y), and its alpha.
func bgraPixel(_ buffer: CVPixelBuffer, x: Int, y: Int) -> (colour: RGB, alpha: UInt8) {
    buffer.withLockedPlanes(.readOnly) { planes in
        let row = planes[0].row(y)
        return (RGB(red: row[4 * x + 2], green: row[4 * x + 1], blue: row[4 * x]), row[4 * x + 3])
    }
}
