// JFIFPlanes: a camera's NV12 frame rewritten as the three planes a JPEG file holds (full-range BT.601 Y'CbCr).

import Foundation
import OpenCoreVideo

/// The Y', Cb and Cr planes of a baseline JPEG (JFIF: full range, BT.601 matrix, 4:2:0), filled from a camera's
/// bi-planar 4:2:0 frame in one pass.
///
/// Why a pass of our own: TurboJPEG compresses planar Y'CbCr as it is given, and JPEG's Y'CbCr is full-range
/// BT.601, while cameras deliver video-range (Y 16–235) BT.709 NV12. Handing their planes over unchanged would
/// lift black to grey and shift hues. libswscale changes the range between two Y'CbCr formats but not the matrix,
/// and going through RGB costs TurboJPEG a colour conversion and a downsampling pass at 12 MP (measured in
/// `Benchmarks/StillBenchmarks`). Here each output sample is a sum of table lookups in 16.16 fixed point:
///
///     Y'₆₀₁ = lumaTable[Y] + yFromCb[Cb] + yFromCr[Cr]        (Cb, Cr of the pixel's 2x2 block)
///     Cb₆₀₁ = cbFromCb[Cb] + cbFromCr[Cr],  Cr₆₀₁ = crFromCb[Cb] + crFromCr[Cr]
///
/// which is the exact linear map from the source's Y'CbCr through R'G'B' to JFIF's (the transfer function is
/// the same on both sides, so only the matrices and ranges differ). A full-range BT.601 source ('420f' with
/// `.itu601`) skips the arithmetic: its luma plane is used in place and only the chroma is de-interleaved.
///
/// Threading: thread-bound, like the encoder that owns it; its planes are reused by the next frame.
final class JFIFPlanes {
    private(set) var width = 0
    private(set) var height = 0
    private var luma: UnsafeMutablePointer<UInt8>?
    private var cb: UnsafeMutablePointer<UInt8>?
    private var cr: UnsafeMutablePointer<UInt8>?
    private var capacity = (luma: 0, chroma: 0)
    private var tables: ConversionTables?

    deinit {
        luma?.deallocate()
        cb?.deallocate()
        cr?.deallocate()
    }

    /// The chroma planes' width and height for the current size (rounded up, as 4:2:0 JPEG expects).
    var chromaWidth: Int { (width + 1) / 2 }
    var chromaHeight: Int { (height + 1) / 2 }

    /// Fills the planes from `source` (NV12, '420v' or '420f', encoded with `matrix`) and calls `body` with the
    /// three plane pointers and their strides. The source must be locked by the caller.
    func withPlanes<Result>(
        from source: CVPixelBuffer.LockedPlanes, fullRange: Bool, matrix: YCbCrMatrix,
        _ body: (_ planes: [UnsafePointer<UInt8>], _ strides: [Int32]) throws -> Result
    ) rethrows -> Result {
        let sourceLuma = source[0]
        let sourceChroma = source[1]
        reserve(width: sourceLuma.width, height: sourceLuma.height)
        // In place only at even sizes: TurboJPEG reads the luma plane padded to whole 2x2 blocks (see `reserve`),
        // which at an odd size is past the end of the camera's plane.
        let passLuma = fullRange && matrix == .itu601 && width % 2 == 0 && height % 2 == 0
        let lumaIn = sourceLuma.baseAddress.assumingMemoryBound(to: UInt8.self)
        let chromaIn = sourceChroma.baseAddress.assumingMemoryBound(to: UInt8.self)
        if passLuma {
            deinterleave(chromaIn, stride: sourceChroma.bytesPerRow)
            return try body(
                [UnsafePointer(lumaIn), UnsafePointer(cb!), UnsafePointer(cr!)],
                [Int32(sourceLuma.bytesPerRow), Int32(chromaWidth), Int32(chromaWidth)])
        }
        let key = ConversionTables.Key(fullRange: fullRange, matrix: matrix)
        if tables?.key != key { tables = ConversionTables(key) }
        convert(
            luma: lumaIn, lumaStride: sourceLuma.bytesPerRow, chroma: chromaIn, chromaStride: sourceChroma.bytesPerRow,
            tables: tables!)
        if height % 2 == 1 {
            // The padding row TurboJPEG reads below an odd height repeats the last row, as JPEG's edge extension.
            (luma! + width * height).update(from: luma! + width * (height - 1), count: width)
        }
        return try body(
            [UnsafePointer(luma!), UnsafePointer(cb!), UnsafePointer(cr!)],
            [Int32(width), Int32(chromaWidth), Int32(chromaWidth)])
    }

    /// Makes room for a `width` x `height` picture. TurboJPEG (`tjCompressFromYUVPlanes`) reads 4:2:0 luma padded
    /// to whole 2x2 blocks: at an odd height one more row, and at an odd width each row one byte longer (the last
    /// row's extra byte past the plane). The luma plane has room for both, so an odd-sized still is never read past
    /// its end.
    private func reserve(width: Int, height: Int) {
        self.width = width
        self.height = height
        let paddedWidth = (width + 1) / 2 * 2
        let paddedHeight = (height + 1) / 2 * 2
        let lumaBytes = width * paddedHeight + (paddedWidth - width)
        let chromaBytes = chromaWidth * chromaHeight
        if capacity.luma < lumaBytes {
            luma?.deallocate()
            luma = .allocate(capacity: lumaBytes)
            capacity.luma = lumaBytes
        }
        if capacity.chroma < chromaBytes {
            cb?.deallocate()
            cr?.deallocate()
            cb = .allocate(capacity: chromaBytes)
            cr = .allocate(capacity: chromaBytes)
            capacity.chroma = chromaBytes
        }
    }

    /// Splits interleaved CbCr into the two chroma planes, unchanged.
    private func deinterleave(_ chroma: UnsafePointer<UInt8>, stride: Int) {
        splitChroma(
            chroma, stride: stride, columns: chromaWidth, rows: chromaHeight, cb: cb!, cbStride: chromaWidth, cr: cr!,
            crStride: chromaWidth)
    }

    /// The fixed-point pass: every 2x2 block's chroma once, then its four lumas. Bands of block rows run on every
    /// core (`concurrentPerform`): the pass is a large part of a 12 MP still's encoding time on one core.
    private func convert(
        luma lumaIn: UnsafePointer<UInt8>, lumaStride: Int, chroma chromaIn: UnsafePointer<UInt8>, chromaStride: Int,
        tables: ConversionTables
    ) {
        let blockRows = chromaHeight
        // Small pictures are not worth a thread hop.
        let bands = blockRows >= 256 ? max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8)) : 1
        tables.withPointers { t in
            let job = ConversionJob(
                lumaIn: lumaIn, lumaStride: lumaStride, chromaIn: chromaIn, chromaStride: chromaStride, lumaOut: luma!,
                cbOut: cb!, crOut: cr!, width: width, height: height, columns: chromaWidth, tables: t)
            DispatchQueue.concurrentPerform(iterations: bands) { band in
                job.run(blockRows: (blockRows * band / bands)..<(blockRows * (band + 1) / bands))
            }
        }
    }
}

/// One conversion's planes and tables, shared by the bands. `@unchecked Sendable`: each band reads the shared
/// input and tables and writes only its own rows of the output, and `concurrentPerform` returns after all bands.
private struct ConversionJob: @unchecked Sendable {
    let lumaIn: UnsafePointer<UInt8>
    let lumaStride: Int
    let chromaIn: UnsafePointer<UInt8>
    let chromaStride: Int
    let lumaOut: UnsafeMutablePointer<UInt8>
    let cbOut: UnsafeMutablePointer<UInt8>
    let crOut: UnsafeMutablePointer<UInt8>
    let width: Int
    let height: Int
    let columns: Int
    let tables: ConversionTables.Pointers

    func run(blockRows: Range<Int>) {
        let t = tables
        for blockRow in blockRows {
            let chromaRow = chromaIn + blockRow * chromaStride
            let top = 2 * blockRow
            let rows = min(2, height - top)
            for blockColumn in 0..<columns {
                let inCb = Int(chromaRow[2 * blockColumn])
                let inCr = Int(chromaRow[2 * blockColumn + 1])
                let index = blockRow * columns + blockColumn
                cbOut[index] = clampedByte(t.cbFromCb[inCb] &+ t.cbFromCr[inCr])
                crOut[index] = clampedByte(t.crFromCb[inCb] &+ t.crFromCr[inCr])
                let lumaOffset = t.yFromCb[inCb] &+ t.yFromCr[inCr]
                let left = 2 * blockColumn
                let pixels = min(2, width - left)
                for dy in 0..<rows {
                    let input = lumaIn + (top + dy) * lumaStride + left
                    let output = lumaOut + (top + dy) * width + left
                    output[0] = clampedByte(t.luma[Int(input[0])] &+ lumaOffset)
                    if pixels == 2 { output[1] = clampedByte(t.luma[Int(input[1])] &+ lumaOffset) }
                }
            }
        }
    }
}

/// Splits an NV12 chroma plane (CbCr pairs, `columns` pairs a row) into separate Cb and Cr planes.
func splitChroma(
    _ chroma: UnsafePointer<UInt8>, stride: Int, columns: Int, rows: Int, cb: UnsafeMutablePointer<UInt8>,
    cbStride: Int, cr: UnsafeMutablePointer<UInt8>, crStride: Int
) {
    for row in 0..<rows {
        let input = chroma + row * stride
        let outCb = cb + row * cbStride
        let outCr = cr + row * crStride
        for column in 0..<columns {
            outCb[column] = input[2 * column]
            outCr[column] = input[2 * column + 1]
        }
    }
}

/// A 16.16 fixed-point value rounded and clamped to a byte.
@inline(__always)
private func clampedByte(_ fixed: Int32) -> UInt8 {
    let value = (fixed &+ 0x8000) >> 16
    return UInt8(truncatingIfNeeded: value < 0 ? 0 : (value > 255 ? 255 : value))
}

/// The lookup tables of one source encoding (range and matrix) to JFIF.
private struct ConversionTables {
    struct Key: Equatable {
        var fullRange: Bool
        var matrix: YCbCrMatrix
    }

    struct Pointers {
        let luma: UnsafePointer<Int32>
        let yFromCb: UnsafePointer<Int32>
        let yFromCr: UnsafePointer<Int32>
        let cbFromCb: UnsafePointer<Int32>
        let cbFromCr: UnsafePointer<Int32>
        let crFromCb: UnsafePointer<Int32>
        let crFromCr: UnsafePointer<Int32>
    }

    let key: Key
    /// Seven tables of 256 entries, in the order of `Pointers`.
    private let storage: [Int32]

    init(_ key: Key) {
        self.key = key
        let (sourceKr, sourceKb) = key.matrix == .itu709 ? (0.2126, 0.0722) : (0.299, 0.114)
        let (kr, kb) = (0.299, 0.114)
        // Normalized source values: y in 0...1, pb and pr in -0.5...0.5.
        func y(_ code: Int) -> Double { key.fullRange ? Double(code) / 255 : (Double(code) - 16) / 219 }
        func p(_ code: Int) -> Double { key.fullRange ? (Double(code) - 128) / 255 : (Double(code) - 128) / 224 }
        // R'G'B' from the source's y, pb, pr: linear in each, so split by term.
        let sourceKg = 1 - sourceKr - sourceKb
        let rFromPr = 2 * (1 - sourceKr)
        let bFromPb = 2 * (1 - sourceKb)
        let gFromPb = -bFromPb * sourceKb / sourceKg
        let gFromPr = -rFromPr * sourceKr / sourceKg
        let kg = 1 - kr - kb
        // JFIF's y from R'G'B', and pb, pr from B' − y and R' − y.
        func jfif(r: Double, g: Double, b: Double) -> (y: Double, cb: Double, cr: Double) {
            let luma = kr * r + kg * g + kb * b
            return (luma, (b - luma) / (2 * (1 - kb)), (r - luma) / (2 * (1 - kr)))
        }
        let fromY = jfif(r: 1, g: 1, b: 1)  // a pure luma term stays luma: (1, 0, 0)
        let fromPb = jfif(r: 0, g: gFromPb, b: bFromPb)
        let fromPr = jfif(r: rFromPr, g: gFromPr, b: 0)
        func fixed(_ value: Double) -> Int32 { Int32((value * 65536).rounded()) }
        var tables = [Int32](repeating: 0, count: 7 * 256)
        for code in 0..<256 {
            tables[code] = fixed(255 * fromY.y * y(code))
            tables[256 + code] = fixed(255 * fromPb.y * p(code))
            tables[512 + code] = fixed(255 * fromPr.y * p(code))
            // The chroma tables carry JFIF's 128 offset in the Cb (first) term of each sum.
            tables[768 + code] = fixed(128 + 255 * fromPb.cb * p(code))
            tables[1024 + code] = fixed(255 * fromPr.cb * p(code))
            tables[1280 + code] = fixed(128 + 255 * fromPb.cr * p(code))
            tables[1536 + code] = fixed(255 * fromPr.cr * p(code))
        }
        storage = tables
    }

    func withPointers<Result>(_ body: (Pointers) -> Result) -> Result {
        storage.withUnsafeBufferPointer { all in
            let base = all.baseAddress!
            return body(
                Pointers(
                    luma: base, yFromCb: base + 256, yFromCr: base + 512, cbFromCb: base + 768, cbFromCr: base + 1024,
                    crFromCb: base + 1280, crFromCr: base + 1536))
        }
    }
}
