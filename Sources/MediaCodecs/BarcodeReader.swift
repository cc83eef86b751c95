// QR codes and barcodes read from luma planes and drawn into module maps, by zxing-cpp (CZXing).

import CZXing

/// The symbologies zxing-cpp reads and writes here, with its format bits as raw values.
///
/// Value type; safe to use from any thread.
package enum BarcodeSymbology: Int32, Sendable, Hashable, CaseIterable {
    case aztec = 1
    case codabar = 2
    case code39 = 4
    case code93 = 8
    case code128 = 16
    /// GS1 DataBar (omnidirectional, formerly RSS-14). Read, not written, by zxing-cpp 1.4.
    case dataBar = 32
    /// GS1 DataBar Expanded. Read, not written, by zxing-cpp 1.4.
    case dataBarExpanded = 64
    case dataMatrix = 128
    case ean8 = 256
    case ean13 = 512
    case itf = 1024
    case pdf417 = 4096
    case qr = 8192
    case upcA = 16384
    case upcE = 32768

    /// Whether the symbology is linear (one-dimensional bars), read along scan lines; the others are matrix codes,
    /// found by their finder patterns at any rotation.
    package var isLinear: Bool {
        switch self {
        case .codabar, .code39, .code93, .code128, .dataBar, .dataBarExpanded, .ean8, .ean13, .itf, .upcA, .upcE: true
        case .aztec, .dataMatrix, .pdf417, .qr: false
        }
    }
}

/// What a read tries beyond one pass over the picture at full size (zxing-cpp's `tryRotate`, `tryDownscale`,
/// `tryHarder`).
///
/// Value type; safe to use from any thread.
package struct BarcodeReadingEffort: OptionSet, Sendable, Hashable {
    package let rawValue: Int32
    package init(rawValue: Int32) { self.rawValue = rawValue }

    /// Linear symbols also across the rows (rotated 90°).
    package static let rotated = Self(rawValue: Int32(CZXing_TryRotate))
    /// The picture again at a third of its size.
    package static let downscaled = Self(rawValue: Int32(CZXing_TryDownscale))
    /// More scan lines and finder-pattern candidates.
    package static let harder = Self(rawValue: Int32(CZXing_TryHarder))

    /// What every frame of a video was read with before this choice existed: rotation and a downscaled pass
    /// whatever was asked (the benchmark's baseline).
    package static let everything: Self = [.rotated, .downscaled]

    /// The effort video frames get, from the symbologies asked for: the rotated pass only for linear ones (matrix
    /// codes are found at any rotation in the one pass), and no downscaled pass for pictures whose smaller side is
    /// 1080 or less (a symbol a scanner is pointed at has modules of several pixels there; the third-size layer finds
    /// what the full one finds, at a ninth more work a frame and the binarization of a second picture).
    package static func forVideo(_ symbologies: Set<BarcodeSymbology>, width: Int, height: Int) -> Self {
        var effort: Self = []
        if symbologies.contains(where: \.isLinear) { effort.insert(.rotated) }
        if min(width, height) > 1080 { effort.insert(.downscaled) }
        return effort
    }
}

/// One symbol found in a picture: what it is, what it says, and where its four corners are (pixels of the picture
/// read, clockwise from the symbol's own top left).
///
/// Value type; safe to use from any thread.
package struct DecodedBarcode: Sendable, Hashable {
    package var symbology: BarcodeSymbology
    package var text: String
    package var corners: [(x: Double, y: Double)]

    package static func == (lhs: DecodedBarcode, rhs: DecodedBarcode) -> Bool {
        lhs.symbology == rhs.symbology && lhs.text == rhs.text
            && lhs.corners.elementsEqual(rhs.corners) { $0.x == $1.x && $0.y == $1.y }
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(symbology)
        hasher.combine(text)
    }
}

/// Reads symbols from 8-bit luma planes in place (`CZXing_ReadLuma`), into storage made once: reading allocates
/// nothing of ours per picture except the results it finds (zxing-cpp allocates its own working memory).
///
/// Threading: thread-bound; use one reader from one thread at a time.
package final class BarcodeReader {
    private let symbols: UnsafeMutableBufferPointer<CZXing_Symbol>
    private let text: UnsafeMutableBufferPointer<CChar>

    /// A reader that finds up to `capacity` symbols per picture, whose texts together fit in `textCapacity` bytes.
    package init(capacity: Int = 8, textCapacity: Int = 16 * 1024) {
        symbols = .allocate(capacity: capacity)
        text = .allocate(capacity: textCapacity)
    }

    deinit {
        symbols.deallocate()
        text.deallocate()
    }

    /// The symbols of `symbologies` in a `width` x `height` luma plane whose rows are `rowStride` bytes apart and
    /// whose pixels are `pixelStride` bytes apart (2 reads the luma of YUYV in place), trying `effort` (by default
    /// ``BarcodeReadingEffort/forVideo(_:width:height:)``). Empty when there are none, or when zxing-cpp failed.
    package func read(
        luma: UnsafePointer<UInt8>, width: Int, height: Int, rowStride: Int, pixelStride: Int = 1,
        symbologies: Set<BarcodeSymbology>, effort: BarcodeReadingEffort? = nil
    ) -> [DecodedBarcode] {
        let formats = symbologies.reduce(Int32(0)) { $0 | $1.rawValue }
        guard formats != 0, width > 0, height > 0 else { return [] }
        let tries = (effort ?? .forVideo(symbologies, width: width, height: height)).rawValue
        let count = CZXing_ReadLuma(
            luma, Int32(width), Int32(height), Int32(rowStride), Int32(pixelStride), formats, tries, symbols.baseAddress,
            Int32(symbols.count), text.baseAddress, Int32(text.count))
        guard count > 0 else { return [] }
        return (0..<Int(count)).compactMap { index in
            let symbol = symbols[index]
            guard let symbology = BarcodeSymbology(rawValue: symbol.format) else { return nil }
            let bytes = UnsafeRawBufferPointer(
                start: text.baseAddress! + Int(symbol.textOffset), count: Int(symbol.textLength))
            let xs = withUnsafeBytes(of: symbol.cornersX) { Array($0.bindMemory(to: Int32.self)) }
            let ys = withUnsafeBytes(of: symbol.cornersY) { Array($0.bindMemory(to: Int32.self)) }
            return DecodedBarcode(
                symbology: symbology, text: String(decoding: bytes, as: UTF8.self),
                corners: zip(xs, ys).map { (x: Double($0), y: Double($1)) })
        }
    }
}

/// Draws symbols (`CZXing_Write`): what the virtual camera shows when a test puts a code in front of it.
package enum BarcodeWriter {
    /// `text` as a `symbology` symbol scaled into `width` x `height` pixels with a `margin`-pixel quiet zone: one
    /// byte per pixel, 1 dark and 0 light, rows `width` bytes apart. Nil when the symbology cannot encode the text
    /// (a wrong length, or characters it lacks) or the symbol does not fit.
    package static func modules(
        _ text: String, symbology: BarcodeSymbology, width: Int, height: Int, margin: Int = 0
    ) -> [UInt8]? {
        guard width > 0, height > 0 else { return nil }
        var modules = [UInt8](repeating: 0, count: width * height)
        let status = modules.withUnsafeMutableBufferPointer { buffer in
            CZXing_Write(symbology.rawValue, text, Int32(width), Int32(height), Int32(margin), buffer.baseAddress)
        }
        return status == 0 ? modules : nil
    }
}
