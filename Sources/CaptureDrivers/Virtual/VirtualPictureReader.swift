/// Measurements on a luma plane: what tests read back from virtual camera frames, ours or decoded from a movie.
///
/// Stateless; safe from any thread (each call reads only the plane it is given).
package enum VirtualPictureReader {
    /// The frame index written in the frame, or nil when there is no valid code (see `VirtualFrameIndexCode`:
    /// flash frames carry none; a damaged code reads nil, never a wrong index).
    package static func readFrameIndex(_ luma: VirtualLumaPlane) -> UInt32? {
        VirtualFrameIndexCode.read(luma)
    }

    /// Whether the frame is a flash frame: a mean level of 225 or more (video-range white is 235, full-range 255)
    /// and fewer than 0.2 % of pixels below 200. An overexposed ordinary frame fails the second test, as its
    /// frame-index code alone is over 0.5 % black pixels. Samples every second pixel of every second row.
    package static func isFlashFrame(_ luma: VirtualLumaPlane) -> Bool {
        var sum = 0
        var dark = 0
        var count = 0
        // While loops over a raw pointer, not `stride(from:to:by:)` and the buffer's subscript: tests run debug
        // builds, which call those generic functions unspecialized, through value witnesses, for every pixel: in the
        // kernel tests' VM (emulated CPU) those calls were about a tenth of a USB webcam recording test's samples.
        guard let base = luma.pixels.baseAddress else { return false }
        var y = 0
        while y < luma.height {
            let row = base + y * luma.stride
            var x = 0
            while x < luma.width {
                let level = Int(row[x])
                sum += level
                dark += level < 200 ? 1 : 0
                count += 1
                x += 2
            }
            y += 2
        }
        return Double(sum) >= 225 * Double(count) && Double(dark) < 0.002 * Double(count)
    }

    /// The mean level of the pixels in `rect` (clipped to the plane); nil when the clipped rectangle is empty.
    package static func measureMeanLuma(_ luma: VirtualLumaPlane, in rect: VirtualPixelRect) -> Double? {
        let columns = max(0, rect.x)..<min(luma.width, rect.x + rect.width)
        let rows = max(0, rect.y)..<min(luma.height, rect.y + rect.height)
        guard !columns.isEmpty, !rows.isEmpty else { return nil }
        var sum = 0
        for y in rows {
            for x in columns {
                sum += Int(luma[x, y])
            }
        }
        return Double(sum) / Double(columns.count * rows.count)
    }

    /// The linear light (0 ... 1) a luma level encodes: the level normalised to 0 ... 1 for its range, then the
    /// inverse BT.709 transfer. Exact for neutral colours, where Y' equals R', G' and B'.
    package static func linearBrightness(luma level: Double, range: VirtualLumaRange = .video) -> Double {
        let encoded = range == .video ? (level - 16) / 219 : level / 255
        return VirtualColorEncoding.linear(fromEncoded: encoded)
    }

    /// The linear light of the mean level in `rect`; nil when the rectangle is empty. Meant for uniform regions.
    package static func measureLinearBrightness(
        _ luma: VirtualLumaPlane,
        in rect: VirtualPixelRect,
        range: VirtualLumaRange = .video
    ) -> Double? {
        measureMeanLuma(luma, in: rect).map { linearBrightness(luma: $0, range: range) }
    }

    /// The moving object's width in pixels along `row`, searched in `columns`: the longest run brighter than the
    /// midpoint between the darkest and brightest level there, its ends interpolated to a fraction of a pixel.
    /// Nil when the row has no contrast. Give it the object's centre row and a span wider than the object
    /// (`VirtualFrameLayout.object(atSeconds:)`).
    package static func measureObjectSize(_ luma: VirtualLumaPlane, row: Int, columns: Range<Int>) -> Double? {
        let span = max(0, columns.lowerBound)..<min(luma.width, columns.upperBound)
        guard (0..<luma.height).contains(row), span.count >= 3 else { return nil }
        var low = 255
        var high = 0
        for x in span {
            low = min(low, Int(luma[x, row]))
            high = max(high, Int(luma[x, row]))
        }
        guard high - low >= 16 else { return nil }
        let threshold = Double(low + high) / 2
        func level(_ x: Int) -> Double { Double(luma[x, row]) }
        // The crossing between pixel centres x − ½ and x + ½.
        func crossing(_ x: Int) -> Double {
            Double(x) - 0.5 + (threshold - level(x - 1)) / (level(x) - level(x - 1))
        }
        var best = 0.0
        var runStart: Double?
        for x in span.dropFirst() {
            let wasAbove = level(x - 1) > threshold
            let isAbove = level(x) > threshold
            if !wasAbove && isAbove { runStart = crossing(x) }
            if wasAbove && !isAbove, let start = runStart {
                best = max(best, crossing(x) - start)
                runStart = nil
            }
        }
        return best > 0 ? best : nil
    }

    /// The focus target's sharpness in `rect`: the steepest horizontal step between neighbouring pixels, in levels
    /// per pixel, averaged over the rows. A sharp target steps black to white in about a pixel; defocus spreads
    /// each edge over more pixels and the steepest step falls.
    package static func measureFocusSharpness(_ luma: VirtualLumaPlane, in rect: VirtualPixelRect) -> Double {
        let columns = max(0, rect.x)..<min(luma.width, rect.x + rect.width)
        let rows = max(0, rect.y)..<min(luma.height, rect.y + rect.height)
        guard columns.count >= 2, !rows.isEmpty else { return 0 }
        var total = 0
        for y in rows {
            var steepest = 0
            for x in columns.dropFirst() {
                steepest = max(steepest, abs(Int(luma[x, y]) - Int(luma[x - 1, y])))
            }
            total += steepest
        }
        return Double(total) / Double(rows.count)
    }

    /// The mean Cb and Cr of an NV12 chroma plane (interleaved Cb, Cr at half resolution, rows `stride` bytes
    /// apart) over `rect`, given in *luma* pixels.
    package static func measureMeanChroma(
        _ chroma: UnsafeBufferPointer<UInt8>,
        stride: Int,
        in rect: VirtualPixelRect
    ) -> (cb: Double, cr: Double) {
        var cb = 0
        var cr = 0
        var count = 0
        for y in rect.y / 2..<(rect.y + rect.height) / 2 {
            for x in rect.x / 2..<(rect.x + rect.width) / 2 {
                cb += Int(chroma[y * stride + 2 * x])
                cr += Int(chroma[y * stride + 2 * x + 1])
                count += 1
            }
        }
        return count == 0 ? (cb: 128, cr: 128) : (cb: Double(cb) / Double(count), cr: Double(cr) / Double(count))
    }
}
