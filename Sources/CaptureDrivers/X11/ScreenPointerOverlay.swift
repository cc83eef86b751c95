/// The pointer drawn into a screen frame: the cursor's image (what XFixes says the server shows) and, while a
/// button is held, a ring around the hot spot (`capturesMouseClicks`).
///
/// Pure functions over BGRA memory, so they are tested without an X server.
/// Value type; safe to use from any thread.
package struct ScreenCursorImage: Sendable, Equatable {
    package var width: Int
    package var height: Int
    /// Where the pointer's position is inside the image.
    package var hotspotX: Int
    package var hotspotY: Int
    /// Premultiplied ARGB, one 32-bit value per pixel, rows top to bottom (XFixes's layout).
    package var pixels: [UInt32]

    package init(width: Int, height: Int, hotspotX: Int, hotspotY: Int, pixels: [UInt32]) {
        precondition(pixels.count == width * height, "a cursor image needs width × height pixels")
        self.width = width
        self.height = height
        self.hotspotX = hotspotX
        self.hotspotY = hotspotY
        self.pixels = pixels
    }
}

/// Draws the pointer into BGRA frames.
package enum ScreenPointerOverlay {
    /// The ring drawn around the pointer while a button is down: outer radius and thickness in pixels, and its colour
    /// (opaque yellow, as macOS's click highlight).
    package static let clickRingRadius = 16
    package static let clickRingThickness = 4
    package static let clickRingColor: (blue: UInt8, green: UInt8, red: UInt8) = (0, 215, 255)

    /// Blends `cursor` over a BGRA frame whose top-left pixel is at (`originX`, `originY`) on the screen, with the
    /// pointer at (`pointerX`, `pointerY`) in screen coordinates. Pixels outside the frame are left out.
    package static func drawCursor(
        _ cursor: ScreenCursorImage, pointerX: Int, pointerY: Int, into base: UnsafeMutableRawPointer, width: Int,
        height: Int, bytesPerRow: Int, originX: Int, originY: Int
    ) {
        let left = pointerX - cursor.hotspotX - originX
        let top = pointerY - cursor.hotspotY - originY
        let (firstRow, endRow) = (max(0, -top), min(cursor.height, height - top))
        let (firstColumn, endColumn) = (max(0, -left), min(cursor.width, width - left))
        // A cursor wholly outside the frame has an empty (or inverted) span.
        guard firstRow < endRow, firstColumn < endColumn else { return }
        let (rows, columns) = (firstRow..<endRow, firstColumn..<endColumn)
        cursor.pixels.withUnsafeBufferPointer { source in
            for row in rows {
                let destination = (base + (top + row) * bytesPerRow).assumingMemoryBound(to: UInt8.self)
                for column in columns {
                    let argb = source[row * cursor.width + column]
                    let alpha = argb >> 24
                    guard alpha != 0 else { continue }
                    let pixel = destination + (left + column) * 4
                    // Premultiplied over: out = source + destination × (1 − α).
                    let keep = 255 - alpha
                    pixel[0] = UInt8(min(255, (argb & 0xFF) + (UInt32(pixel[0]) * keep + 127) / 255))
                    pixel[1] = UInt8(min(255, ((argb >> 8) & 0xFF) + (UInt32(pixel[1]) * keep + 127) / 255))
                    pixel[2] = UInt8(min(255, ((argb >> 16) & 0xFF) + (UInt32(pixel[2]) * keep + 127) / 255))
                }
            }
        }
    }

    /// Draws the click ring centred on the pointer (screen coordinates), clipped to the frame.
    package static func drawClickRing(
        pointerX: Int, pointerY: Int, into base: UnsafeMutableRawPointer, width: Int, height: Int, bytesPerRow: Int,
        originX: Int, originY: Int
    ) {
        let centerX = pointerX - originX
        let centerY = pointerY - originY
        let outer = clickRingRadius
        let inner = clickRingRadius - clickRingThickness
        let (outerSquared, innerSquared) = (outer * outer, inner * inner)
        for dy in -outer...outer {
            let y = centerY + dy
            guard y >= 0, y < height else { continue }
            let row = (base + y * bytesPerRow).assumingMemoryBound(to: UInt8.self)
            for dx in -outer...outer {
                let x = centerX + dx
                let distance = dx * dx + dy * dy
                guard x >= 0, x < width, distance <= outerSquared, distance > innerSquared else { continue }
                let pixel = row + x * 4
                pixel[0] = clickRingColor.blue
                pixel[1] = clickRingColor.green
                pixel[2] = clickRingColor.red
            }
        }
    }

    /// Nearest-neighbour scaling of a BGRA picture (`scaleFactor` other than 1): each output pixel is the source
    /// pixel under its centre.
    package static func scale(
        from source: UnsafeRawPointer, height sourceHeight: Int, bytesPerRow sourceStride: Int,
        into destination: UnsafeMutableRawPointer, width: Int, height: Int, bytesPerRow: Int, columns: [Int]
    ) {
        columns.withUnsafeBufferPointer { columns in
            for y in 0..<height {
                let sourceRow = min(sourceHeight - 1, (2 * y + 1) * sourceHeight / (2 * height))
                let from = (source + sourceRow * sourceStride).assumingMemoryBound(to: UInt32.self)
                let to = (destination + y * bytesPerRow).assumingMemoryBound(to: UInt32.self)
                for x in 0..<width { to[x] = from[columns[x]] }
            }
        }
    }

    /// The source column under each output column's centre, for `scale`.
    package static func scaleColumns(sourceWidth: Int, width: Int) -> [Int] {
        (0..<width).map { min(sourceWidth - 1, (2 * $0 + 1) * sourceWidth / (2 * width)) }
    }
}
