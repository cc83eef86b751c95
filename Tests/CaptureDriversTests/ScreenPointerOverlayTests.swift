import Testing

@testable import CaptureDrivers

/// The pointer drawn into BGRA frames, checked pixel by pixel against the premultiplied "over" rule.
@Suite struct ScreenPointerOverlayTests {
    /// A `width`×`height` BGRA frame of one grey, rows padded to `stride` bytes.
    private func frame(width: Int, height: Int, stride: Int, grey: UInt8) -> [UInt8] {
        var bytes = [UInt8](repeating: 0xEE, count: stride * height)
        for y in 0..<height {
            for x in 0..<width { for channel in 0..<3 { bytes[y * stride + x * 4 + channel] = grey } }
        }
        return bytes
    }

    @Test func cursorIsBlendedPremultipliedAtTheHotspot() {
        // 2x2 cursor: opaque red, transparent, half-transparent white (premultiplied 0x80808080), opaque blue.
        let cursor = ScreenCursorImage(
            width: 2, height: 2, hotspotX: 1, hotspotY: 1, pixels: [0xFFFF_0000, 0, 0x8080_8080, 0xFF00_00FF])
        var bytes = frame(width: 8, height: 8, stride: 40, grey: 100)
        bytes.withUnsafeMutableBytes { buffer in
            ScreenPointerOverlay.drawCursor(
                cursor, pointerX: 13, pointerY: 24, into: buffer.baseAddress!, width: 8, height: 8, bytesPerRow: 40,
                originX: 10, originY: 20)
        }
        func pixel(_ x: Int, _ y: Int) -> [UInt8] { Array(bytes[(y * 40 + x * 4)..<(y * 40 + x * 4 + 3)]) }
        // Pointer at (3, 4) in the frame, hotspot (1, 1): the image's top-left is at (2, 3).
        #expect(pixel(2, 3) == [0, 0, 255])  // red, as B G R
        #expect(pixel(3, 3) == [100, 100, 100])  // transparent
        // 0x80 + 100 × (255 − 128) / 255 = 128 + 49.8 → 178.
        #expect(pixel(2, 4) == [178, 178, 178])
        #expect(pixel(3, 4) == [255, 0, 0])  // blue
        #expect(pixel(4, 4) == [100, 100, 100])
        // Padding is never written.
        #expect(bytes[32] == 0xEE)
    }

    @Test func cursorOutsideTheFrameIsClipped() {
        let cursor = ScreenCursorImage(
            width: 3, height: 3, hotspotX: 0, hotspotY: 0, pixels: Array(repeating: 0xFFFF_FFFF, count: 9))
        var bytes = frame(width: 4, height: 4, stride: 16, grey: 0)
        bytes.withUnsafeMutableBytes { buffer in
            // Top-left two pixels off the left and top edges: only (0, 0) is covered.
            ScreenPointerOverlay.drawCursor(
                cursor, pointerX: -2, pointerY: -2, into: buffer.baseAddress!, width: 4, height: 4, bytesPerRow: 16,
                originX: 0, originY: 0)
            // Entirely beyond the right edge: nothing.
            ScreenPointerOverlay.drawCursor(
                cursor, pointerX: 9, pointerY: 1, into: buffer.baseAddress!, width: 4, height: 4, bytesPerRow: 16,
                originX: 0, originY: 0)
        }
        let white = (0..<16).filter { bytes[$0 * 4] == 255 }
        #expect(white == [0])
    }

    @Test func clickRingIsARingAroundThePointer() {
        let size = 64
        var bytes = frame(width: size, height: size, stride: size * 4, grey: 0)
        bytes.withUnsafeMutableBytes { buffer in
            ScreenPointerOverlay.drawClickRing(
                pointerX: 32, pointerY: 32, into: buffer.baseAddress!, width: size, height: size,
                bytesPerRow: size * 4, originX: 0, originY: 0)
        }
        func isRing(_ x: Int, _ y: Int) -> Bool {
            bytes[(y * size + x) * 4 + 2] == ScreenPointerOverlay.clickRingColor.red
        }
        let radius = ScreenPointerOverlay.clickRingRadius
        #expect(isRing(32 + radius - 1, 32))
        #expect(isRing(32, 32 - radius + 1))
        #expect(!isRing(32, 32))  // the centre stays clear
        #expect(!isRing(32 + radius + 1, 32))
    }

    @Test func scalingTakesThePixelUnderEachCentre() {
        // 4x2 source with distinct pixels, halved to 2x1.
        var source = [UInt32](0..<8)
        var destination = [UInt32](repeating: 99, count: 2)
        let columns = ScreenPointerOverlay.scaleColumns(sourceWidth: 4, width: 2)
        #expect(columns == [1, 3])
        source.withUnsafeMutableBytes { from in
            destination.withUnsafeMutableBytes { to in
                ScreenPointerOverlay.scale(
                    from: from.baseAddress!, height: 2, bytesPerRow: 16, into: to.baseAddress!, width: 2, height: 1,
                    bytesPerRow: 8, columns: columns)
            }
        }
        // Output row 0's centre is source row 1.
        #expect(destination == [5, 7])
    }
}
