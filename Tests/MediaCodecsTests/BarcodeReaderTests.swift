import MediaCodecs
import Testing

/// zxing-cpp through CZXing: every symbology drawn, then read back with its text and corners.
@Suite struct BarcodeReaderTests {
    static let samples: [(BarcodeSymbology, String)] = [
        (.qr, "OpenAVCapture QR"), (.aztec, "Aztec 123"), (.dataMatrix, "DM-42"), (.pdf417, "PDF417 text"),
        (.ean8, "96385074"), (.ean13, "5901234123457"), (.upcA, "036000291452"), (.upcE, "01234565"),
        (.code39, "CODE39"), (.code93, "CODE93"), (.code128, "Code 128!"), (.itf, "00123456789012"),
    ]

    /// The symbol drawn dark on light into a luma plane with a white border around it.
    static func picture(_ text: String, _ symbology: BarcodeSymbology, width: Int, height: Int, border: Int)
        -> [UInt8]?
    {
        guard let modules = BarcodeWriter.modules(text, symbology: symbology, width: width, height: height) else {
            return nil
        }
        let stride = width + 2 * border
        var luma = [UInt8](repeating: 235, count: stride * (height + 2 * border))
        for y in 0..<height {
            for x in 0..<width where modules[y * width + x] == 1 {
                luma[(y + border) * stride + x + border] = 16
            }
        }
        return luma
    }

    @Test(arguments: samples.indices)
    func everySymbologyIsReadBack(_ index: Int) throws {
        let (symbology, text) = Self.samples[index]
        let isLinear = ![.qr, .aztec, .dataMatrix, .pdf417].contains(symbology)
        let (width, height) = isLinear ? (600, 150) : (symbology == .pdf417 ? (600, 240) : (400, 400))
        let border = 40
        let luma = try #require(Self.picture(text, symbology, width: width, height: height, border: border))
        let reader = BarcodeReader()
        let found = luma.withUnsafeBufferPointer { buffer in
            reader.read(
                luma: buffer.baseAddress!, width: width + 2 * border, height: height + 2 * border,
                rowStride: width + 2 * border, symbologies: Set(BarcodeSymbology.allCases))
        }
        let symbol = try #require(found.first, "\(symbology) not read")
        #expect(symbol.symbology == symbology)
        #expect(symbol.text == text)
        #expect(symbol.corners.count == 4)
        for corner in symbol.corners {
            #expect(corner.x >= Double(border - 2) && corner.x <= Double(border + width + 2))
            #expect(corner.y >= Double(border - 2) && corner.y <= Double(border + height + 2))
        }
    }

    @Test func onlyTheSymbologiesAskedForAreRead() throws {
        let luma = try #require(Self.picture("only QR", .qr, width: 300, height: 300, border: 30))
        let reader = BarcodeReader()
        let found = luma.withUnsafeBufferPointer { buffer in
            reader.read(luma: buffer.baseAddress!, width: 360, height: 360, rowStride: 360, symbologies: [.ean13])
        }
        #expect(found.isEmpty)
    }

    @Test func textASymbologyCannotCarryIsRefused() {
        #expect(BarcodeWriter.modules("not digits", symbology: .ean13, width: 300, height: 100) == nil)
    }

    // MARK: Passes chosen for video frames

    @Test func passesFollowTheSymbologiesAndTheSize() {
        #expect(BarcodeReadingEffort.forVideo([.qr, .aztec], width: 1920, height: 1080) == [])
        #expect(BarcodeReadingEffort.forVideo([.qr, .ean13], width: 1920, height: 1080) == [.rotated])
        #expect(BarcodeReadingEffort.forVideo([.qr], width: 3840, height: 2160) == [.downscaled])
        #expect(BarcodeReadingEffort.forVideo([.code128], width: 3840, height: 2160) == [.rotated, .downscaled])
    }

    /// A barcode standing on its side (bars across the rows) is read only with the rotated pass, which the linear
    /// symbologies get by default; without it zxing-cpp misses it, so the choice is what reads it.
    @Test func anUprightBarcodeIsReadThroughTheRotatedPass() throws {
        let (width, height, border) = (600, 150, 40)
        let lying = try #require(Self.picture("5901234123457", .ean13, width: width, height: height, border: border))
        let (columns, rows) = (width + 2 * border, height + 2 * border)
        // Turned 90°: the picture's rows become columns.
        var upright = [UInt8](repeating: 0, count: columns * rows)
        for y in 0..<rows {
            for x in 0..<columns { upright[x * rows + (rows - 1 - y)] = lying[y * columns + x] }
        }
        let reader = BarcodeReader()
        func read(_ effort: BarcodeReadingEffort?) -> [DecodedBarcode] {
            upright.withUnsafeBufferPointer { buffer in
                reader.read(
                    luma: buffer.baseAddress!, width: rows, height: columns, rowStride: rows, symbologies: [.ean13],
                    effort: effort)
            }
        }
        #expect(read(nil).first?.text == "5901234123457")
        #expect(read([]).isEmpty)
    }
}
