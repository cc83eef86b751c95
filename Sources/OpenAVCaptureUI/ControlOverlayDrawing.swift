import CSDL2
import OpenAVCapture

/// Draws ``ControlOverlay``'s rows with SDL: a darkened panel, each control's name and value in the pixel font
/// (``PixelFont``), its track (the part below the value filled yellow, as Apple's camera controls are), and a white
/// thumb at the value. A disabled control (or one whose session has no controls delegate) is drawn dimmed; the
/// chosen one is outlined.
///
/// Threading: the window's thread only (SDL's rule).
enum ControlOverlayDrawing {
    static let font = PixelFont(scale: 2)

    static func draw(_ rows: [ControlOverlay.Row], selected: Int?, renderer: OpaquePointer) {
        guard let panel = ControlOverlay.panel(around: rows) else { return }
        SDL_SetRenderDrawBlendMode(renderer, SDL_BLENDMODE_BLEND)
        defer { SDL_SetRenderDrawBlendMode(renderer, SDL_BLENDMODE_NONE) }
        fill(panel, red: 0, green: 0, blue: 0, alpha: 150, renderer: renderer)
        for (index, row) in rows.enumerated() {
            let appearance = row.appearance
            let bright: UInt8 = appearance.isEnabled ? 255 : 150
            SDL_SetRenderDrawColor(renderer, bright, bright, bright, 255)
            let textY = Int(row.frame.minY) + 4
            font.draw(appearance.title, x: Int(row.frame.minX), y: textY, renderer: renderer)
            let valueWidth = font.width(of: appearance.valueText)
            font.draw(appearance.valueText, x: Int(row.frame.maxX) - valueWidth, y: textY, renderer: renderer)

            let filledWidth = row.thumbX - row.track.minX
            fill(row.track, red: 110, green: 110, blue: 110, alpha: 255, renderer: renderer)
            var filled = row.track
            filled.size.width = filledWidth
            if appearance.isEnabled {
                fill(filled, red: 255, green: 204, blue: 0, alpha: 255, renderer: renderer)
            } else {
                fill(filled, red: 150, green: 130, blue: 60, alpha: 255, renderer: renderer)
            }
            let thumb = CGRect(
                x: row.thumbX - ControlOverlay.thumbWidth / 2,
                y: row.track.midY - ControlOverlay.thumbHeight / 2, width: ControlOverlay.thumbWidth,
                height: ControlOverlay.thumbHeight)
            fill(thumb, red: bright, green: bright, blue: bright, alpha: 255, renderer: renderer)
            if index == selected {
                SDL_SetRenderDrawColor(renderer, 255, 204, 0, 255)
                var outline = rect(row.frame.insetBy(dx: -4, dy: 0))
                SDL_RenderDrawRectF(renderer, &outline)
            }
        }
    }

    private static func fill(
        _ area: CGRect, red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8, renderer: OpaquePointer
    ) {
        SDL_SetRenderDrawColor(renderer, red, green, blue, alpha)
        var box = rect(area)
        SDL_RenderFillRectF(renderer, &box)
    }

    private static func rect(_ area: CGRect) -> SDL_FRect {
        SDL_FRect(x: Float(area.minX), y: Float(area.minY), w: Float(area.width), h: Float(area.height))
    }
}
