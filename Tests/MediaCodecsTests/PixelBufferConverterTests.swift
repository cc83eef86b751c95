// PixelBufferConverter: colour accuracy, round trips, scaling geometry, every format pair, errors, pool reuse.

import MediaCodecs
import OpenCoreVideo
import Testing

private typealias Format = PixelBufferConverter.Format

private let nv12 = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
private let nv12Full = kCVPixelFormatType_420YpCbCr8BiPlanarFullRange
private let bgra = kCVPixelFormatType_32BGRA

/// "420v", or the number of a small Apple code.
private func pixelFormatName(_ pixelFormat: OSType) -> String {
    let bytes = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: pixelFormat >> $0) }
    return bytes.allSatisfy { (0x20...0x7E).contains($0) } ? String(decoding: bytes, as: UTF8.self) : "\(pixelFormat)"
}

@Suite struct PixelBufferConverterTests {
    // MARK: Colour

    /// 100% and 75% bars written as BT.709 video-range NV12 at 1280x720 (where the default matrix is BT.709)
    /// come out of the BGRA conversion within ±3 of the colours they encode, and opaque.
    @Test(arguments: [1.0, 0.75])
    func nv12ColourBarsToBGRA(level: Double) throws {
        let bars = RGB.colourBars(level: level)
        let (width, height) = (1280, 720)
        let source = try makeNV12Bars(bars, width: width, height: height)
        let converter = try PixelBufferConverter(
            from: Format(of: source), to: Format(pixelFormatType: bgra, width: width, height: height))
        #expect(converter.matrix == .itu709)
        let output = try converter.convert(source)
        #expect(output.pixelFormatType == bgra && output.width == width && output.height == height)
        let barWidth = width / bars.count
        for (index, expected) in bars.enumerated() {
            // The middle of the bar, and a point 4 pixels inside each edge: chroma may blur only across edges.
            for x in [index * barWidth + 4, index * barWidth + barWidth / 2, (index + 1) * barWidth - 5] {
                for y in [0, height / 2, height - 1] {
                    let (colour, alpha) = bgraPixel(output, x: x, y: y)
                    #expect(
                        colour.distance(to: expected) <= 3,
                        "bar \(index) at (\(x), \(y)): \(colour), expected \(expected)")
                    #expect(alpha == 255)
                }
            }
        }
    }

    /// The bars test can fail: decoding the same BT.709 bars with BT.601 misses by far more than 3 codes.
    @Test func wrongMatrixMissesTheBars() throws {
        let bars = RGB.colourBars(level: 0.75)
        let source = try makeNV12Bars(bars, width: 640, height: 64)
        let converter = try PixelBufferConverter(
            from: Format(of: source), to: Format(pixelFormatType: bgra, width: 640, height: 64), matrix: .itu601)
        let output = try converter.convert(source)
        let worst = bars.indices.map { bgraPixel(output, x: $0 * 80 + 40, y: 32).colour.distance(to: bars[$0]) }.max()
        #expect(try #require(worst) > 10)
    }

    /// The matrix follows the size unless one is given: BT.709 for HD, BT.601 below; the Y'CbCr side decides.
    @Test func defaultMatrixFollowsTheYCbCrSide() throws {
        #expect(YCbCrMatrix.conventional(width: 640, height: 480) == .itu601)
        #expect(YCbCrMatrix.conventional(width: 960, height: 540) == .itu601)
        #expect(YCbCrMatrix.conventional(width: 1280, height: 720) == .itu709)
        #expect(YCbCrMatrix.conventional(width: 3840, height: 2160) == .itu709)
        let hd = Format(pixelFormatType: nv12, width: 1920, height: 1080)
        let small = Format(pixelFormatType: bgra, width: 640, height: 360)
        #expect(try PixelBufferConverter(from: hd, to: small).matrix == .itu709)
        #expect(
            try PixelBufferConverter(from: Format(pixelFormatType: bgra, width: 1920, height: 1080), to: hd).matrix
                == .itu709)
        #expect(
            try PixelBufferConverter(from: Format(pixelFormatType: nv12, width: 640, height: 480), to: small).matrix
                == .itu601)
        // Y'CbCr → Y'CbCr keeps the source's matrix: scaling 1080p to 360p does not re-encode the colours.
        let nv12Small = Format(pixelFormatType: nv12, width: 640, height: 360)
        #expect(try PixelBufferConverter(from: hd, to: nv12Small).matrix == .itu709)
        #expect(try PixelBufferConverter(from: hd, to: small, matrix: .itu601).matrix == .itu601)
    }

    /// BGRA → NV12 → BGRA, video and full range, brings back 16x16 blocks of colour within ±3 at their centres.
    @Test(arguments: [nv12, nv12Full])
    func bgraRoundTripThroughNV12(pixelFormat: OSType) throws {
        let (width, height) = (320, 240)
        // A deterministic spread of colours, one per 16x16 block, covering the cube's corners and its inside.
        func colour(block: Int) -> RGB {
            let value = UInt32(truncatingIfNeeded: block &* 2_654_435_761)
            return RGB(
                red: UInt8(truncatingIfNeeded: value), green: UInt8(truncatingIfNeeded: value >> 8),
                blue: UInt8(truncatingIfNeeded: value >> 16))
        }
        let blocksPerRow = width / 16
        let source = try makeBGRA(width: width, height: height) { x, y in
            colour(block: (y / 16) * blocksPerRow + x / 16)
        }
        let yuv = Format(pixelFormatType: pixelFormat, width: width, height: height)
        let there = try PixelBufferConverter(from: Format(of: source), to: yuv)
        let back = try PixelBufferConverter(from: yuv, to: Format(of: source))
        #expect(there.matrix == back.matrix)
        let output = try back.convert(try there.convert(source))
        var worst = 0
        for by in 0..<(height / 16) {
            for bx in 0..<blocksPerRow {
                let expected = colour(block: by * blocksPerRow + bx)
                let got = bgraPixel(output, x: bx * 16 + 8, y: by * 16 + 8).colour
                worst = max(worst, got.distance(to: expected))
            }
        }
        #expect(worst <= 3, "largest round-trip error \(worst)")
    }

    // MARK: Scaling

    /// 1920x1080 bars scaled to 640x360 (area filter) keep their edges every 80 pixels: the pixels 2 left and 1
    /// right of an edge hold the neighbouring bars' colours.
    @Test(arguments: [nv12, bgra])
    func scalingKeepsBarEdges(outputFormat: OSType) throws {
        let bars = RGB.colourBars(level: 0.75)
        let source = try makeNV12Bars(bars, width: 1920, height: 1080)
        let destination = Format(pixelFormatType: outputFormat, width: 640, height: 360)
        let converter = try PixelBufferConverter(from: Format(of: source), to: destination)
        #expect(converter.scalingFilter == .area)
        var output = try converter.convert(source)
        #expect(output.width == 640 && output.height == 360)
        if outputFormat != bgra {
            // The 360p NV12 keeps the 1080p source's BT.709 values; reading it back must use the same matrix.
            output = try PixelBufferConverter(
                from: destination, to: Format(pixelFormatType: bgra, width: 640, height: 360), matrix: converter.matrix
            ).convert(output)
        }
        for y in [0, 180, 359] {
            for edge in 1..<bars.count {
                let x = edge * 80
                let left = bgraPixel(output, x: x - 2, y: y).colour
                let right = bgraPixel(output, x: x + 1, y: y).colour
                #expect(left.distance(to: bars[edge - 1]) <= 4, "left of edge \(edge) at y \(y): \(left)")
                #expect(right.distance(to: bars[edge]) <= 4, "right of edge \(edge) at y \(y): \(right)")
            }
        }
        // Scaled straight to BGRA, the edge is not smeared: of the two pixels straddling it, one is already
        // (nearly) the next colour. (Through 360p NV12 its chroma is 4:2:0 again, and spreads over two pixels.)
        guard outputFormat == bgra else { return }
        let straddling = (1..<bars.count).map { edge in
            [edge * 80 - 1, edge * 80].map { bgraPixel(output, x: $0, y: 180).colour.distance(to: bars[edge]) }.min()!
        }
        #expect(straddling.allSatisfy { $0 <= 40 }, "\(straddling)")
    }

    /// Scaling 1920x1080 → 1280x720 uses bilinear; enlarging too.
    @Test func filterChoice() throws {
        let hd = Format(pixelFormatType: nv12, width: 1920, height: 1080)
        let p720 = Format(pixelFormatType: nv12, width: 1280, height: 720)
        let p360 = Format(pixelFormatType: nv12, width: 640, height: 360)
        #expect(PixelBufferConverter.ScalingFilter.conventional(from: hd, to: p720) == .bilinear)
        #expect(PixelBufferConverter.ScalingFilter.conventional(from: hd, to: p360) == .area)
        #expect(PixelBufferConverter.ScalingFilter.conventional(from: p360, to: hd) == .bilinear)
        #expect(try PixelBufferConverter(from: hd, to: p720).scalingFilter == .bilinear)
        #expect(try PixelBufferConverter(from: hd, to: p360, scalingFilter: .bicubic).scalingFilter == .bicubic)
    }

    // MARK: Every pair

    /// Every supported pair converts a uniform colour, same size and scaled, into a buffer whose geometry is
    /// the destination format's with 64-byte rows; converting the result to BGRA gives back the colour (grey
    /// when either side is luminance only), which catches a wrong range or channel order on either side.
    @Test(arguments: PixelBufferConverter.supportedPixelFormats)
    func everyPairConverts(from sourceFormat: OSType) throws {
        let colourful = RGB(red: 200, green: 90, blue: 40)
        let grey = RGB(red: 150, green: 150, blue: 150)
        let (width, height) = (70, 34)
        for destinationFormat in PixelBufferConverter.supportedPixelFormats {
            #expect(PixelBufferConverter.canConvert(from: sourceFormat, to: destinationFormat))
            let involvesGrey = [sourceFormat, destinationFormat].contains(kCVPixelFormatType_OneComponent8)
            let colour = involvesGrey ? grey : colourful
            // Make the source in its format from BGRA, then convert to the destination at two sizes.
            let bgraSource = try makeBGRA(width: width, height: height) { _, _ in colour }
            let source =
                sourceFormat == bgra
                ? bgraSource
                : try PixelBufferConverter(
                    from: Format(of: bgraSource),
                    to: Format(pixelFormatType: sourceFormat, width: width, height: height)
                ).convert(bgraSource)
            for (outWidth, outHeight) in [(width, height), (37, 21)] {
                let destination = Format(pixelFormatType: destinationFormat, width: outWidth, height: outHeight)
                let output = try PixelBufferConverter(from: Format(of: source), to: destination).convert(source)
                try expectGeometry(of: output, is: destination)
                let check =
                    destinationFormat == bgra
                    ? output
                    : try PixelBufferConverter(
                        from: destination, to: Format(pixelFormatType: bgra, width: outWidth, height: outHeight)
                    ).convert(output)
                let got = bgraPixel(check, x: outWidth / 2, y: outHeight / 2).colour
                #expect(
                    got.distance(to: colour) <= 4,
                    "\(Format(of: source)) → \(destination): \(got), expected \(colour)")
            }
        }
    }

    /// Black and white land on each luma format's range: 16 and 235 in video range, 0 and 255 in full range
    /// and in `'L008'`. (The round trips above cannot see a range that is wrong the same way in both directions.)
    @Test func lumaRangesAreTheFormats() throws {
        let cases: [(OSType, lumaOffset: Int, black: UInt8, white: UInt8)] = [
            (nv12, 0, 16, 235), (nv12Full, 0, 0, 255),
            (kCVPixelFormatType_420YpCbCr8Planar, 0, 16, 235),
            (kCVPixelFormatType_420YpCbCr8PlanarFullRange, 0, 0, 255),
            (kCVPixelFormatType_422YpCbCr8_yuvs, 0, 16, 235), (kCVPixelFormatType_422YpCbCr8FullRange, 0, 0, 255),
            (kCVPixelFormatType_422YpCbCr8, 1, 16, 235), (kCVPixelFormatType_OneComponent8, 0, 0, 255),
        ]
        for (pixelFormat, lumaOffset, black, white) in cases {
            for (colour, expected) in [
                (RGB(red: 0, green: 0, blue: 0), black), (RGB(red: 255, green: 255, blue: 255), white),
            ] {
                let source = try makeBGRA(width: 32, height: 16) { _, _ in colour }
                let output = try PixelBufferConverter(
                    from: Format(of: source), to: Format(pixelFormatType: pixelFormat, width: 32, height: 16)
                ).convert(source)
                let luma = output.withLockedPlanes(.readOnly) { $0[0].row(8)[lumaOffset + 2 * 4] }
                #expect(luma == expected, "\(pixelFormatName(pixelFormat)) \(colour): luma \(luma)")
            }
        }
    }

    /// The plane geometry a buffer of `format` must have: plane sizes, 64-byte rows holding a whole row.
    private func expectGeometry(of buffer: CVPixelBuffer, is format: Format) throws {
        #expect(Format(of: buffer) == format)
        let (w, h) = (format.width, format.height)
        let (cw, ch) = ((w + 1) / 2, (h + 1) / 2)
        // (width, height, minimum bytes per row) of each plane; non-planar formats list the image.
        let planes: [(Int, Int, Int)]
        switch format.pixelFormatType {
        case kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8BiPlanarFullRange:
            planes = [(w, h, w), (cw, ch, 2 * cw)]
        case kCVPixelFormatType_420YpCbCr8Planar, kCVPixelFormatType_420YpCbCr8PlanarFullRange:
            planes = [(w, h, w), (cw, ch, cw), (cw, ch, cw)]
        case kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr10BiPlanarFullRange:
            planes = [(w, h, 2 * w), (cw, ch, 4 * cw)]
        case kCVPixelFormatType_422YpCbCr8_yuvs, kCVPixelFormatType_422YpCbCr8FullRange, kCVPixelFormatType_422YpCbCr8:
            planes = [(w, h, 4 * cw)]
        case kCVPixelFormatType_24RGB, kCVPixelFormatType_24BGR:
            planes = [(w, h, 3 * w)]
        case kCVPixelFormatType_OneComponent8:
            planes = [(w, h, w)]
        default:
            planes = [(w, h, 4 * w)]
        }
        if planes.count > 1 {
            #expect(CVPixelBufferGetPlaneCount(buffer) == planes.count)
            for (index, (pw, ph, rowBytes)) in planes.enumerated() {
                #expect(CVPixelBufferGetWidthOfPlane(buffer, index) == pw)
                #expect(CVPixelBufferGetHeightOfPlane(buffer, index) == ph)
                let bytesPerRow = CVPixelBufferGetBytesPerRowOfPlane(buffer, index)
                #expect(bytesPerRow >= rowBytes && bytesPerRow % 64 == 0, "plane \(index): \(bytesPerRow)")
            }
        } else {
            #expect(CVPixelBufferGetPlaneCount(buffer) == 0)
            let bytesPerRow = CVPixelBufferGetBytesPerRow(buffer)
            #expect(bytesPerRow >= planes[0].2 && bytesPerRow % 64 == 0, "\(bytesPerRow)")
        }
    }

    // MARK: Errors

    /// Formats outside the table and impossible sizes are errors when the converter is made, never traps.
    @Test func unsupportedConversionsAreErrors() throws {
        let good = Format(pixelFormatType: bgra, width: 64, height: 64)
        let twoComponent = Format(pixelFormatType: kCVPixelFormatType_TwoComponent8, width: 64, height: 64)
        let unknown = Format(pixelFormatType: 0x7878_7878, width: 64, height: 64)
        #expect(!PixelBufferConverter.canConvert(from: kCVPixelFormatType_TwoComponent8, to: bgra))
        #expect(!PixelBufferConverter.canConvert(from: bgra, to: 0x7878_7878))
        for (from, to) in [
            (twoComponent, good), (good, twoComponent), (unknown, good), (good, unknown),
            (Format(pixelFormatType: bgra, width: 0, height: 64), good),
            (good, Format(pixelFormatType: nv12, width: 64, height: -1)),
            (good, Format(pixelFormatType: nv12, width: 64, height: 1 << 16)),
        ] {
            let error = #expect(throws: MediaCodecsError.self) { try PixelBufferConverter(from: from, to: to) }
            #expect(error?.kind == .unsupportedConversion, "\(from) → \(to)")
            #expect(error?.description.contains("pixel buffer converter") == true)
        }
    }

    /// A buffer of another format or size is an error value, and the converter keeps working afterwards.
    @Test func mismatchedInputIsAnError() throws {
        let converter = try PixelBufferConverter(
            from: Format(pixelFormatType: nv12, width: 64, height: 48),
            to: Format(pixelFormatType: bgra, width: 64, height: 48))
        let wrongSize = try makeBuffer(nv12, width: 64, height: 50)
        let wrongFormat = try makeBuffer(nv12Full, width: 64, height: 48)
        for buffer in [wrongSize, wrongFormat] {
            let error = #expect(throws: MediaCodecsError.self) { try converter.convert(buffer) }
            #expect(error?.kind == .formatMismatch)
        }
        _ = try converter.convert(try makeBuffer(nv12, width: 64, height: 48))
    }

    // MARK: 10-bit ('x420', P010)

    /// 75% bars written as 10-bit BT.709 video-range P010 (what a V4L2 P010 camera delivers) come out of the BGRA
    /// conversion within ±3 of their colours, and the 8-bit NV12 conversion keeps the top 8 bits of each sample.
    @Test func p010BarsToBGRAAndNV12() throws {
        let bars = RGB.colourBars(level: 0.75)
        let (width, height) = (1280, 720)
        let source = try makeP010Bars(bars, width: width, height: height)
        let toBGRA = try PixelBufferConverter(
            from: Format(of: source), to: Format(pixelFormatType: bgra, width: width, height: height))
        let rgb = try toBGRA.convert(source)
        let toNV12 = try PixelBufferConverter(
            from: Format(of: source), to: Format(pixelFormatType: nv12, width: width, height: height))
        let eightBit = try toNV12.convert(source)
        let barWidth = width / bars.count
        for (index, expected) in bars.enumerated() {
            let x = index * barWidth + barWidth / 2
            let (colour, alpha) = bgraPixel(rgb, x: x, y: height / 2)
            #expect(colour.distance(to: expected) <= 3, "bar \(index): \(colour), expected \(expected)")
            #expect(alpha == 255)
            let tenBit = videoRangeBT709TenBit(expected)
            let (y, cb, cr) = eightBit.withLockedPlanes(.readOnly) { planes in
                (planes[0].row(height / 2)[x], planes[1].row(height / 4)[x / 2 * 2], planes[1].row(height / 4)[x / 2 * 2 + 1])
            }
            // 10-bit to 8-bit is a division by 4, rounded either way.
            for (eight, ten, name) in [(y, tenBit.y, "Y"), (cb, tenBit.cb, "Cb"), (cr, tenBit.cr, "Cr")] {
                #expect(abs(Int(eight) * 4 - Int(ten)) <= 4, "bar \(index) \(name): \(eight) from \(ten)")
            }
        }
    }

    /// Black and white written into 'x420' and 'xf20' land on the 10-bit range's ends, in the high bits of each
    /// little-endian word (64 and 940 video range, 0 and 1023 full, within 3), and read back as black and white.
    @Test func tenBitRangesAndRoundTrip() throws {
        for (pixelFormat, black, white) in [
            (kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange, UInt16(64), UInt16(940)),
            (kCVPixelFormatType_420YpCbCr10BiPlanarFullRange, UInt16(0), UInt16(1023)),
        ] {
            for (colour, expected) in [(RGB(red: 0, green: 0, blue: 0), black), (RGB(red: 255, green: 255, blue: 255), white)] {
                let source = try makeBGRA(width: 32, height: 16) { _, _ in colour }
                let tenBit = try PixelBufferConverter(
                    from: Format(of: source), to: Format(pixelFormatType: pixelFormat, width: 32, height: 16)
                ).convert(source)
                let (word, chroma) = tenBit.withLockedPlanes(.readOnly) { planes in
                    let luma = planes[0].row(8)
                    let cbcr = planes[1].row(4)
                    return (UInt16(luma[8]) | UInt16(luma[9]) << 8, UInt16(cbcr[4]) | UInt16(cbcr[5]) << 8)
                }
                // libswscale widens 8-bit full range by a shift (255 → 1020): within 3 of the range's end.
                #expect(abs(Int(word >> 6) - Int(expected)) <= 3, "\(pixelFormatName(pixelFormat)) \(colour): luma \(word >> 6)")
                #expect(word & 0x3F == 0, "the low 6 bits are zero")
                #expect(abs(Int(chroma >> 6) - 512) <= 1, "grey has neutral chroma: \(chroma >> 6)")
                let back = try PixelBufferConverter(
                    from: Format(of: tenBit), to: Format(pixelFormatType: bgra, width: 32, height: 16)
                ).convert(tenBit)
                #expect(bgraPixel(back, x: 5, y: 5).colour.distance(to: colour) <= 1)
            }
        }
    }

    // MARK: Colour attachments

    /// The result carries the source's primaries, transfer function and gamma (libswscale converts neither), and the
    /// matrix its numbers use; a reused pool buffer loses what the next source does not say.
    @Test func primariesAndTransferFunctionTravelWithTheFrame() throws {
        let source = try makeNV12Bars(RGB.colourBars(level: 1), width: 128, height: 64)
        CVBufferSetAttachment(source, kCVImageBufferColorPrimariesKey, kCVImageBufferColorPrimaries_DCI_P3, .shouldPropagate)
        CVBufferSetAttachment(source, kCVImageBufferTransferFunctionKey, kCVImageBufferTransferFunction_UseGamma, .shouldPropagate)
        CVBufferSetAttachment(source, kCVImageBufferGammaLevelKey, 2.6, .shouldPropagate)
        CVBufferSetAttachment(source, kCVImageBufferYCbCrMatrixKey, kCVImageBufferYCbCrMatrix_ITU_R_709_2, .shouldPropagate)
        for target in [nv12Full, kCVPixelFormatType_422YpCbCr8_yuvs, bgra] {
            let converter = try PixelBufferConverter(
                from: Format(of: source), to: Format(pixelFormatType: target, width: 64, height: 32), matrix: .itu709,
                bufferLimit: 1)
            let convertedIdentity: ObjectIdentifier
            do {
                let converted = try converter.convert(source)
                convertedIdentity = ObjectIdentifier(converted)
                #expect(ColourAttachments(of: converted) == ColourAttachments(
                    primaries: kCVImageBufferColorPrimaries_DCI_P3, transferFunction: kCVImageBufferTransferFunction_UseGamma,
                    gammaLevel: 2.6), "\(pixelFormatName(target))")
                var mode = CVAttachmentMode.shouldNotPropagate
                _ = CVBufferCopyAttachment(converted, kCVImageBufferColorPrimariesKey, &mode)
                #expect(mode == .shouldPropagate)
                if target != bgra {
                    #expect(YCbCrMatrix(attachedTo: converted) == .itu709)
                }
            }
            // The same pool buffer, for a source that says nothing of its colour: it says nothing either.
            for key in [kCVImageBufferColorPrimariesKey, kCVImageBufferTransferFunctionKey, kCVImageBufferGammaLevelKey] {
                CVBufferRemoveAttachment(source, key)
            }
            let plain = try converter.convert(source)
            #expect(ObjectIdentifier(plain) == convertedIdentity)
            #expect(ColourAttachments(of: plain) == ColourAttachments())
            CVBufferSetAttachment(source, kCVImageBufferColorPrimariesKey, kCVImageBufferColorPrimaries_DCI_P3, .shouldPropagate)
            CVBufferSetAttachment(source, kCVImageBufferTransferFunctionKey, kCVImageBufferTransferFunction_UseGamma, .shouldPropagate)
            CVBufferSetAttachment(source, kCVImageBufferGammaLevelKey, 2.6, .shouldPropagate)
        }
    }

    // MARK: Pool

    /// A released output buffer comes back from the next conversion: the same object, no new allocation; a held
    /// one does not; with a limit, holding that many is an out-of-buffers error until one is released.
    @Test func outputBuffersAreReused() throws {
        let source = try makeNV12Bars(RGB.colourBars(level: 1), width: 128, height: 64)
        let converter = try PixelBufferConverter(
            from: Format(of: source), to: Format(pixelFormatType: bgra, width: 64, height: 32), bufferLimit: 2)
        var first: CVPixelBuffer? = try converter.convert(source)
        let firstIdentity = ObjectIdentifier(try #require(first))
        first = nil
        let second = try converter.convert(source)
        #expect(ObjectIdentifier(second) == firstIdentity)
        let third = try converter.convert(source)
        #expect(ObjectIdentifier(third) != firstIdentity)
        #expect(converter.pool.bufferCount == 2)
        withExtendedLifetime((second, third)) {
            let error = #expect(throws: MediaCodecsError.self) { try converter.convert(source) }
            #expect(error?.kind == .outOfBuffers)
        }
    }

    /// Whether the graph converts at all: the same format and size is an identity; a range change is not.
    @Test func identityIsDecidedByFormatAndSize() {
        let a = Format(pixelFormatType: nv12, width: 1280, height: 720)
        #expect(PixelBufferConverter.isIdentity(from: a, to: a))
        #expect(!PixelBufferConverter.needsConversion(from: a, to: a))
        #expect(
            PixelBufferConverter.needsConversion(
                from: a, to: Format(pixelFormatType: nv12Full, width: 1280, height: 720)))
        #expect(
            PixelBufferConverter.needsConversion(from: a, to: Format(pixelFormatType: nv12, width: 640, height: 360)))
    }
}
