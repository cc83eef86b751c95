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

/// Video-range BT.709 Y'CbCr of a colour at 10 bits (Y 64–940, CbCr 64–960), rounded.
func videoRangeBT709TenBit(_ colour: RGB) -> (y: UInt16, cb: UInt16, cr: UInt16) {
    let r = Double(colour.red) / 255
    let g = Double(colour.green) / 255
    let b = Double(colour.blue) / 255
    let y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    func word(_ value: Double) -> UInt16 { UInt16(min(max(value.rounded(), 0), 1023)) }
    return (word(64 + 876 * y), word(512 + 896 * (b - y) / 1.8556), word(512 + 896 * (r - y) / 1.5748))
}

/// A P010 ('x420') video-range buffer of vertical BT.709 bars: 10-bit samples in the high bits of little-endian
/// 16-bit words, as V4L2's P010 lays them out.
func makeP010Bars(_ colours: [RGB], width: Int, height: Int) throws -> CVPixelBuffer {
    let buffer = try makeBuffer(kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange, width: width, height: height)
    let barWidth = width / colours.count
    func put(_ value: UInt16, _ row: UnsafeMutableRawBufferPointer, word index: Int) {
        let shifted = value << 6
        row[2 * index] = UInt8(shifted & 0xFF)
        row[2 * index + 1] = UInt8(shifted >> 8)
    }
    buffer.withLockedPlanes { planes in
        for y in 0..<planes[0].height {
            let row = planes[0].row(y)
            for x in 0..<width { put(videoRangeBT709TenBit(colours[min(x / barWidth, colours.count - 1)]).y, row, word: x) }
        }
        for y in 0..<planes[1].height {
            let row = planes[1].row(y)
            for x in 0..<planes[1].width {
                let sample = videoRangeBT709TenBit(colours[min(2 * x / barWidth, colours.count - 1)])
                put(sample.cb, row, word: 2 * x)
                put(sample.cr, row, word: 2 * x + 1)
            }
        }
    }
    return buffer
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
