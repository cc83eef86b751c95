/// A printed card held in front of a virtual camera: a black-and-white picture (a QR code or barcode a test
/// made) on a white card, drawn over the scene at a place in the frame.
///
/// The card is placed in frame coordinates, not scene units: it stays where the test put it whatever the zoom, and it
/// is sharp whatever the lens position (held close, in the focus plane of no lens). It is not mirrored by the front
/// camera (like the frame-index code) and is absent from flash frames, which are white everywhere.
///
/// Value type; safe from any thread.
package struct VirtualCard: Sendable, Hashable {
    /// One byte per picture pixel, 1 dark and 0 light, `columns` per row.
    package var picture: [UInt8]
    package var columns: Int
    package var rows: Int
    /// The picture's place as fractions of the frame's width and height, origin at the top left of the frame as
    /// delivered (before any rotation or mirroring of a connection).
    package var x: Double
    package var y: Double
    package var width: Double
    package var height: Double
    /// The white border around the picture, as a fraction of the picture's width.
    package var border: Double

    package init(
        picture: [UInt8], columns: Int, rows: Int, x: Double, y: Double, width: Double, height: Double,
        border: Double = 0.1
    ) {
        precondition(columns > 0 && rows > 0 && picture.count == columns * rows, "a card's picture is columns x rows")
        self.picture = picture
        self.columns = columns
        self.rows = rows
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.border = border
    }

    /// The pixel rectangle of the picture in a `frameWidth` x `frameHeight` frame, and of the card with its border,
    /// both clipped to the frame.
    func pixelBounds(frameWidth: Int, frameHeight: Int) -> (picture: Bounds, card: Bounds) {
        let px0 = Int((x * Double(frameWidth)).rounded())
        let py0 = Int((y * Double(frameHeight)).rounded())
        let px1 = Int(((x + width) * Double(frameWidth)).rounded())
        let py1 = Int(((y + height) * Double(frameHeight)).rounded())
        let margin = Int((border * width * Double(frameWidth)).rounded())
        func clipped(_ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int) -> Bounds {
            Bounds(
                minX: max(0, x0), minY: max(0, y0), maxX: min(frameWidth, max(x0, x1)),
                maxY: min(frameHeight, max(y0, y1)))
        }
        return (
            clipped(px0, py0, px1, py1), clipped(px0 - margin, py0 - margin, px1 + margin, py1 + margin)
        )
    }

    struct Bounds {
        var minX: Int
        var minY: Int
        var maxX: Int
        var maxY: Int
    }

    /// Draws the card into an NV12 frame: video-range black or white luma, neutral chroma.
    func drawNV12(
        frameWidth: Int, frameHeight: Int, luma: UnsafeMutablePointer<UInt8>, lumaStride: Int,
        chroma: UnsafeMutablePointer<UInt8>, chromaStride: Int
    ) {
        let (inner, outer) = pixelBounds(frameWidth: frameWidth, frameHeight: frameHeight)
        for row in outer.minY..<outer.maxY {
            drawLumaRow(row, inner: inner, outer: outer, into: luma + row * lumaStride, step: 1)
        }
        for row in (outer.minY / 2)..<((outer.maxY + 1) / 2) where row < frameHeight / 2 {
            let line = chroma + row * chromaStride
            (line + (outer.minX & ~1)).update(
                repeating: VirtualColorEncoding.neutralChroma, count: min(frameWidth, (outer.maxX + 1) & ~1) - (outer.minX & ~1))
        }
    }

    /// Draws the card into a YUYV frame (Y0 Cb Y1 Cr): luma as in NV12, chroma neutral.
    func drawYUYV(frameWidth: Int, frameHeight: Int, pixels: UnsafeMutablePointer<UInt8>, rowBytes: Int) {
        let (inner, outer) = pixelBounds(frameWidth: frameWidth, frameHeight: frameHeight)
        for row in outer.minY..<outer.maxY {
            let line = pixels + row * rowBytes
            drawLumaRow(row, inner: inner, outer: outer, into: line, step: 2)
            for x in stride(from: outer.minX & ~1, to: min(frameWidth, (outer.maxX + 1) & ~1), by: 2) {
                line[2 * x + 1] = VirtualColorEncoding.neutralChroma
                line[2 * x + 3] = VirtualColorEncoding.neutralChroma
            }
        }
    }

    /// One row of luma: white card, and inside the picture's rectangle its pixels scaled nearest-neighbour.
    private func drawLumaRow(
        _ row: Int, inner: Bounds, outer: Bounds, into line: UnsafeMutablePointer<UInt8>, step: Int
    ) {
        let insidePicture = row >= inner.minY && row < inner.maxY && inner.maxX > inner.minX
        let pictureRow = insidePicture ? (row - inner.minY) * rows / (inner.maxY - inner.minY) : 0
        for x in outer.minX..<outer.maxX {
            var dark = false
            if insidePicture, x >= inner.minX, x < inner.maxX {
                let column = (x - inner.minX) * columns / (inner.maxX - inner.minX)
                dark = picture[pictureRow * columns + column] != 0
            }
            line[x * step] = dark ? VirtualColorEncoding.videoBlack : VirtualColorEncoding.videoWhite
        }
    }
}
