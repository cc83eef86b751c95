import CPipeWire

/// The cursor a screen-cast node sends beside its frames (SPA_META_Cursor, the ScreenCast portal's cursor mode
/// metadata): where it is, and its image when that changed.
///
/// Value type; safe to use from any thread.
package struct PipeWireCursorUpdate: Sendable, Equatable {
    /// Whether the pointer is over the stream (mutter sends no cursor while it is elsewhere).
    package var isVisible: Bool
    /// The pointer's position in the stream's pixels.
    package var x: Int
    package var y: Int
    /// The new image with its hot spot, when it changed with this buffer (a 0 × 0 image: no cursor shown).
    package var image: ScreenCursorImage?

    package init(isVisible: Bool, x: Int, y: Int, image: ScreenCursorImage?) {
        self.isVisible = isVisible
        self.x = x
        self.y = y
        self.image = image
    }

    /// What `buffer`'s cursor meta says; its bitmap is copied (its memory goes back with the buffer).
    init(_ buffer: CPipeWire_Buffer) {
        isVisible = buffer.cursor_is_valid
        x = Int(buffer.cursor_x)
        y = Int(buffer.cursor_y)
        guard buffer.has_cursor_bitmap else {
            image = nil
            return
        }
        let width = Int(buffer.cursor_bitmap_width)
        let height = Int(buffer.cursor_bitmap_height)
        var pixels = [UInt32](repeating: 0, count: width * height)
        if let bitmap = buffer.cursor_bitmap {
            let stride = Int(buffer.cursor_bitmap_stride)
            // Premultiplied bytes in RGBA or BGRA order, as ScreenCursorImage's premultiplied ARGB values.
            let (red, blue) = buffer.cursor_bitmap_is_rgba ? (0, 2) : (2, 0)
            for row in 0..<height {
                let line = bitmap + row * stride
                for column in 0..<width {
                    let pixel = line + column * 4
                    pixels[row * width + column] =
                        UInt32(pixel[3]) << 24 | UInt32(pixel[red]) << 16 | UInt32(pixel[1]) << 8 | UInt32(pixel[blue])
                }
            }
        }
        image = ScreenCursorImage(
            width: width, height: height, hotspotX: Int(buffer.cursor_hotspot_x),
            hotspotY: Int(buffer.cursor_hotspot_y),
            pixels: pixels)
    }
}
