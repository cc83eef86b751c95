/// The frame index as a block code in the top-left corner of every non-flash virtual camera frame.
///
/// Layout: a grid of 14 × 6 square cells of `cellSize(frameWidth:)` pixels (the larger of 8 and width / 80,
/// rounded down to even, so a cell covers whole chroma samples), from pixel (0, 0). A cell is black (Y 16) or
/// white (Y 235), chroma 128, drawn after the optics so exposure, zoom, white balance and focus never touch it.
///
///     column  0  1  2  …  12 13
///     row 0   W  B  W  …  W  B     clock: alternating, gives the cell width
///     row 1   B  d0 d1 …  d11 B    data, d0 … d47 row by row, 1 = white, most significant bit first:
///     row 2   W  d12…         B      the 32-bit index, then its CRC-16/CCITT-FALSE (big-endian bytes)
///     row 3   B  …            B
///     row 4   W  …        d47 B
///     row 5   B  W  B  …  W  B     guard: alternating from white in column 1, then black
///
/// Column 0 alternates from white too (the vertical clock) and column 13 is black. The reader finds the grid
/// from the two clocks, so it needs no size hint: it reads frames scaled by any factor down to cells of about 3
/// pixels (a 1920x1080 frame scaled to 320x240 keeps 4 × 5.3-pixel cells), and tolerates H.264 at crf 23 and
/// noise of ±6 levels. It reads only the unmirrored picture: a mirrored frame has no clock at its left edge and
/// reads as no code. 34 fixed cells and the CRC make garbage read as nil, not as a wrong index.
/// Stateless; safe from any thread.
package enum VirtualFrameIndexCode {
    /// Cells across.
    package static let columns = 14
    /// Cells down.
    package static let rows = 6
    /// Data cells: 32 index bits and 16 CRC bits.
    package static let dataBitCount = 48

    /// The cell size in pixels for a frame `frameWidth` pixels wide: `max(8, width / 80)` rounded down to even.
    package static func cellSize(frameWidth: Int) -> Int {
        max(8, frameWidth / 80 & ~1)
    }

    /// CRC-16/CCITT-FALSE (polynomial 0x1021, initial value 0xFFFF) of the index's four big-endian bytes.
    package static func checksum(_ index: UInt32) -> UInt16 {
        var crc: UInt16 = 0xFFFF
        for shift in stride(from: 24, through: 0, by: -8) {
            crc ^= UInt16(truncatingIfNeeded: index >> UInt32(shift)) << 8
            for _ in 0..<8 {
                crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
            }
        }
        return crc
    }

    /// The 48 data bits of `index`, bit 47 first: the index then its checksum.
    @inlinable
    package static func dataBits(_ index: UInt32) -> UInt64 {
        UInt64(index) << 16 | UInt64(checksum(index))
    }

    /// Whether a fixed cell (clock or guard) is white; nil for a data cell.
    @inlinable
    package static func fixedCellIsWhite(column: Int, row: Int) -> Bool? {
        if row == 0 || column == 0 { return (row + column) % 2 == 0 }
        if column == columns - 1 { return false }
        if row == rows - 1 { return column % 2 == 1 && column < columns - 2 }
        return nil
    }

    /// Whether cell (`column`, `row`) is white in the code of `index`.
    @inlinable
    package static func cellIsWhite(column: Int, row: Int, index: UInt32) -> Bool {
        if let fixed = fixedCellIsWhite(column: column, row: row) { return fixed }
        let bit = (row - 1) * (columns - 2) + (column - 1)
        return dataBits(index) >> UInt64(dataBitCount - 1 - bit) & 1 == 1
    }

    // MARK: Drawing

    /// Draws the code of `index` into an NV12 frame's planes (cells at luma level 16 or 235, chroma 128).
    package static func drawNV12(
        index: UInt32,
        frameWidth: Int,
        luma: UnsafeMutablePointer<UInt8>,
        lumaStride: Int,
        chroma: UnsafeMutablePointer<UInt8>,
        chromaStride: Int
    ) {
        let cell = cellSize(frameWidth: frameWidth)
        let bits = dataBits(index)
        for row in 0..<rows {
            for pixelRow in row * cell..<(row + 1) * cell {
                drawCellRow(row: row, bits: bits, cell: cell, into: luma + pixelRow * lumaStride, bytesPerPixel: 1)
            }
        }
        for chromaRow in 0..<rows * cell / 2 {
            (chroma + chromaRow * chromaStride).update(
                repeating: VirtualColorEncoding.neutralChroma, count: columns * cell)
        }
    }

    /// Draws the code of `index` into a YUYV (packed 4:2:2) frame.
    package static func drawYUYV(index: UInt32, frameWidth: Int, pixels: UnsafeMutablePointer<UInt8>, stride: Int) {
        let cell = cellSize(frameWidth: frameWidth)
        let bits = dataBits(index)
        for row in 0..<rows {
            for pixelRow in row * cell..<(row + 1) * cell {
                let line = pixels + pixelRow * stride
                line.update(repeating: VirtualColorEncoding.neutralChroma, count: 2 * columns * cell)
                drawCellRow(row: row, bits: bits, cell: cell, into: line, bytesPerPixel: 2)
            }
        }
    }

    @inline(__always)
    private static func drawCellRow(
        row: Int,
        bits: UInt64,
        cell: Int,
        into line: UnsafeMutablePointer<UInt8>,
        bytesPerPixel: Int
    ) {
        for column in 0..<columns {
            let white: Bool
            if let fixed = fixedCellIsWhite(column: column, row: row) {
                white = fixed
            } else {
                let bit = (row - 1) * (columns - 2) + (column - 1)
                white = bits >> UInt64(dataBitCount - 1 - bit) & 1 == 1
            }
            let level = white ? VirtualColorEncoding.videoWhite : VirtualColorEncoding.videoBlack
            var p = line + column * cell * bytesPerPixel
            if bytesPerPixel == 1 {
                p.update(repeating: level, count: cell)
            } else {
                for _ in 0..<cell {
                    p.pointee = level
                    p += bytesPerPixel
                }
            }
        }
    }

    // MARK: Reading

    /// The frame index in `luma`, or nil when it holds no valid code (a flash frame, a mirrored or damaged code,
    /// anything else). Works at any scale and in video or full range.
    package static func read(_ luma: VirtualLumaPlane) -> UInt32? {
        // Rough cell width from a row near the top, then the cell height from the vertical clock in the middle of
        // column 0, then the cell width again from the middle of row 0.
        guard luma.width >= 2 * columns, luma.height >= 2 * rows else { return nil }
        guard let roughWidth = clockPeriod(luma, transitions: columns - 1, horizontal: true, at: 1) else { return nil }
        guard let cellHeight = clockPeriod(luma, transitions: rows - 1, horizontal: false, at: Int(roughWidth / 2))
        else { return nil }
        guard let cellWidth = clockPeriod(luma, transitions: columns - 1, horizontal: true, at: Int(cellHeight / 2))
        else { return nil }
        guard Double(columns) * cellWidth <= Double(luma.width), Double(rows) * cellHeight <= Double(luma.height)
        else { return nil }

        // Levels from the clock cells, then every cell against their midpoint.
        var white = 0.0
        var whiteCount = 0.0
        var black = 0.0
        var blackCount = 0.0
        for column in 0..<columns {
            let level = cellLevel(luma, column: column, row: 0, cellWidth: cellWidth, cellHeight: cellHeight)
            if column % 2 == 0 { white += level; whiteCount += 1 } else { black += level; blackCount += 1 }
        }
        white /= whiteCount
        black /= blackCount
        guard white - black >= 48 else { return nil }
        let threshold = (white + black) / 2

        var bits: UInt64 = 0
        for row in 0..<rows {
            for column in 0..<columns {
                let level = cellLevel(luma, column: column, row: row, cellWidth: cellWidth, cellHeight: cellHeight)
                let isWhite = level > threshold
                if let fixed = fixedCellIsWhite(column: column, row: row) {
                    guard fixed == isWhite else { return nil }
                } else {
                    bits = bits << 1 | (isWhite ? 1 : 0)
                }
            }
        }
        let index = UInt32(truncatingIfNeeded: bits >> 16)
        guard UInt16(truncatingIfNeeded: bits) == checksum(index) else { return nil }
        return index
    }

    /// The mean level of the middle 40 % of a cell (at least one pixel).
    private static func cellLevel(
        _ luma: VirtualLumaPlane,
        column: Int,
        row: Int,
        cellWidth: Double,
        cellHeight: Double
    ) -> Double {
        let x0 = Int((Double(column) + 0.3) * cellWidth)
        let x1 = max(x0 + 1, Int(((Double(column) + 0.7) * cellWidth).rounded(.up)))
        let y0 = Int((Double(row) + 0.3) * cellHeight)
        let y1 = max(y0 + 1, Int(((Double(row) + 0.7) * cellHeight).rounded(.up)))
        var sum = 0
        for y in y0..<min(y1, luma.height) {
            for x in x0..<min(x1, luma.width) {
                sum += Int(luma[x, y])
            }
        }
        return Double(sum) / Double(max(1, (min(y1, luma.height) - y0) * (min(x1, luma.width) - x0)))
    }

    /// The period of an alternating clock that starts white at the plane's edge: along row `at` (horizontal) or
    /// column `at`, the first `transitions` crossings of mid-grey, fitted to `k · period` by least squares.
    /// Nil when the line does not start white, has too few crossings, or they are not evenly spaced.
    private static func clockPeriod(
        _ luma: VirtualLumaPlane,
        transitions: Int,
        horizontal: Bool,
        at line: Int
    ) -> Double? {
        let length = horizontal ? luma.width : luma.height
        guard line >= 0, line < (horizontal ? luma.height : luma.width) else { return nil }
        // 128 sits between black and white in both video (16/235) and full (0/255) range.
        let threshold = 128.0
        func level(_ i: Int) -> Double { Double(horizontal ? luma[i, line] : luma[line, i]) }
        guard level(0) > threshold else { return nil }
        var found = 0
        var sumKT = 0.0
        var sumKK = 0.0
        var positions = [Double]()
        positions.reserveCapacity(transitions)
        var previous = level(0)
        var i = 1
        while i < length && found < transitions {
            let current = level(i)
            if (previous > threshold) != (current > threshold) {
                // Pixel i − 1's centre is at i − 0.5; interpolate the crossing between the two centres.
                let t = Double(i) - 0.5 + (threshold - previous) / (current - previous)
                found += 1
                positions.append(t)
                sumKT += Double(found) * t
                sumKK += Double(found * found)
            }
            previous = current
            i += 1
        }
        guard found == transitions else { return nil }
        let period = sumKT / sumKK
        guard period >= 2 else { return nil }
        for (k, t) in positions.enumerated() where abs(t - Double(k + 1) * period) > 0.3 * period {
            return nil
        }
        return period
    }
}
