import CSDL2

/// A 5x7 pixel font for the few words the window writes over the picture (a control's name and value): SDL has no
/// text of its own, and a font file and a text library (SDL_ttf, FreeType) would be a dependency for a dozen short
/// labels. Upper-case letters, digits and `.+-:%/()x`; lower-case letters are drawn as capitals, `x` as a small
/// cross (the zoom factor's), anything else as a blank.
///
/// Threading: value type; the drawing call uses SDL and belongs on the window's thread.
struct PixelFont {
    /// How many screen pixels one font pixel is.
    var scale: Int

    static let glyphWidth = 5
    static let glyphHeight = 7

    /// The width of `text` drawn, in screen pixels (a font pixel of space between letters).
    func width(of text: String) -> Int { text.count * (Self.glyphWidth + 1) * scale }

    /// The height of a line, in screen pixels.
    var height: Int { Self.glyphHeight * scale }

    /// The rectangles that draw `text` with its top-left corner at (x, y), one per lit font pixel.
    func rectangles(for text: String, x: Int, y: Int) -> [SDL_Rect] {
        var rectangles: [SDL_Rect] = []
        for (position, character) in text.enumerated() {
            guard let rows = Self.glyph(character) else { continue }
            let left = x + position * (Self.glyphWidth + 1) * scale
            for (row, bits) in rows.enumerated() {
                for (column, bit) in bits.enumerated() where bit == "#" {
                    rectangles.append(
                        SDL_Rect(
                            x: Int32(left + column * scale), y: Int32(y + row * scale), w: Int32(scale),
                            h: Int32(scale)))
                }
            }
        }
        return rectangles
    }

    /// Draws `text` in the renderer's current colour.
    func draw(_ text: String, x: Int, y: Int, renderer: OpaquePointer) {
        let rectangles = rectangles(for: text, x: x, y: y)
        guard !rectangles.isEmpty else { return }
        _ = rectangles.withUnsafeBufferPointer { SDL_RenderFillRects(renderer, $0.baseAddress, Int32($0.count)) }
    }

    /// The seven rows of a character, or nil for a blank.
    static func glyph(_ character: Character) -> [Substring]? {
        let key = character == "x" ? character : Character(character.uppercased())
        guard let pattern = glyphs[key] else { return nil }
        return pattern.split(separator: " ")
    }

    /// Each glyph: seven rows of five columns, '#' lit, separated by spaces.
    private static let glyphs: [Character: String] = [
        "A": ".###. #...# #...# ##### #...# #...# #...#", "B": "####. #...# #...# ####. #...# #...# ####.",
        "C": ".###. #...# #.... #.... #.... #...# .###.", "D": "####. #...# #...# #...# #...# #...# ####.",
        "E": "##### #.... #.... ####. #.... #.... #####", "F": "##### #.... #.... ####. #.... #.... #....",
        "G": ".###. #...# #.... #.### #...# #...# .####", "H": "#...# #...# #...# ##### #...# #...# #...#",
        "I": ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.", "J": "..### ...#. ...#. ...#. ...#. #..#. .##..",
        "K": "#...# #..#. #.#.. ##... #.#.. #..#. #...#", "L": "#.... #.... #.... #.... #.... #.... #####",
        "M": "#...# ##.## #.#.# #.#.# #...# #...# #...#", "N": "#...# ##..# #.#.# #..## #...# #...# #...#",
        "O": ".###. #...# #...# #...# #...# #...# .###.", "P": "####. #...# #...# ####. #.... #.... #....",
        "Q": ".###. #...# #...# #...# #.#.# #..#. .##.#", "R": "####. #...# #...# ####. #.#.. #..#. #...#",
        "S": ".#### #.... #.... .###. ....# ....# ####.", "T": "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
        "U": "#...# #...# #...# #...# #...# #...# .###.", "V": "#...# #...# #...# #...# #...# .#.#. ..#..",
        "W": "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.", "X": "#...# #...# .#.#. ..#.. .#.#. #...# #...#",
        "Y": "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#..", "Z": "##### ....# ...#. ..#.. .#... #.... #####",
        "0": ".###. #...# #..## #.#.# ##..# #...# .###.", "1": "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
        "2": ".###. #...# ....# ...#. ..#.. .#... #####", "3": "####. ....# ....# .###. ....# ....# ####.",
        "4": "...#. ..##. .#.#. #..#. ##### ...#. ...#.", "5": "##### #.... ####. ....# ....# #...# .###.",
        "6": "..##. .#... #.... ####. #...# #...# .###.", "7": "##### ....# ...#. ..#.. .#... .#... .#...",
        "8": ".###. #...# #...# .###. #...# #...# .###.", "9": ".###. #...# #...# .#### ....# ...#. .##..",
        ".": "..... ..... ..... ..... ..... .##.. .##..", "+": "..... ..#.. ..#.. ##### ..#.. ..#.. .....",
        "-": "..... ..... ..... ##### ..... ..... .....", ":": "..... .##.. .##.. ..... .##.. .##.. .....",
        "%": "##..# ##..# ...#. ..#.. .#... #..## #..##", "/": "....# ....# ...#. ..#.. .#... #.... #....",
        "(": "...#. ..#.. .#... .#... .#... ..#.. ...#.", ")": ".#... ..#.. ...#. ...#. ...#. ..#.. .#...",
        "x": "..... ..... #...# .#.#. ..#.. .#.#. #...#",
    ]
}
