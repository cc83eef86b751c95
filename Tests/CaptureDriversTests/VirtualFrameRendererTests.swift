import CaptureDrivers
import Testing

/// Indices that exercise every bit: the ends, the sign bit, alternating patterns and a few random ones.
private let sampleIndices: [UInt32] = {
    var generator = SplitMix64(seed: 0x5EED)
    return [0, 1, 2, 1 << 31, 0xFFFF_FFFF, 0x5555_5555, 0xAAAA_AAAA]
        + (0..<3).map { _ in UInt32(truncatingIfNeeded: generator.next()) }
}()

@Suite("Virtual camera frames")
struct VirtualFrameRendererTests {
    // MARK: The frame-index code

    @Test(
        "the frame index reads back at every size, halved, and with ±6 levels of noise", arguments: virtualPresetSizes)
    func frameIndexRoundTrips(size: (width: Int, height: Int)) {
        let renderer = VirtualFrameRenderer(width: size.width, height: size.height)
        let cell = VirtualFrameIndexCode.cellSize(frameWidth: size.width)
        for (n, index) in sampleIndices.enumerated() {
            let frame = TestFrame(
                frameParameters(index: index), width: size.width, height: size.height, renderer: renderer)
            #expect(frame.frameIndex == index, "\(size) index \(index)")
            // The reader looks only at the corner, so scaling the corner is scaling the frame (and keeps the
            // debug build fast at 4032x3024).
            let corner = TestPlane(width: size.width, height: size.height, pixels: frame.packedLuma)
                .cropped(
                    width: (VirtualFrameIndexCode.columns + 6) * cell, height: (VirtualFrameIndexCode.rows + 6) * cell)
            #expect(corner.frameIndex == index)
            #expect(corner.boxDownscaled().frameIndex == index, "\(size) halved, index \(index)")
            #expect(
                corner.withNoise(amplitude: 6, seed: UInt64(n)).frameIndex == index, "\(size) noisy, index \(index)")
            #expect(corner.boxDownscaled().withNoise(amplitude: 6, seed: UInt64(n)).frameIndex == index)
        }
    }

    @Test("whole frames halved, and quartered where cells stay 3 pixels or more, still read")
    func wholeFrameHalved() {
        let small = TestFrame(frameParameters(index: 123_456_789), width: 640, height: 480)
        #expect(TestPlane(width: 640, height: 480, pixels: small.packedLuma).boxDownscaled().frameIndex == 123_456_789)
        let large = TestFrame(frameParameters(index: 987_654_321), width: 1920, height: 1080)
        let quartered = TestPlane(width: 1920, height: 1080, pixels: large.packedLuma).boxDownscaled().boxDownscaled()
        #expect(quartered.frameIndex == 987_654_321)
    }

    @Test("a corrupted code reads nil, not a wrong index")
    func corruptedCodeReadsNil() {
        let width = 640
        let cell = VirtualFrameIndexCode.cellSize(frameWidth: width)
        let clean = TestFrame(frameParameters(index: 0xDEAD_BEEF), width: width, height: 480)
        #expect(clean.frameIndex == 0xDEAD_BEEF)
        // Every data cell and every fixed cell, inverted one at a time.
        for row in 0..<VirtualFrameIndexCode.rows {
            for column in 0..<VirtualFrameIndexCode.columns {
                var frame = clean
                let white = VirtualFrameIndexCode.cellIsWhite(column: column, row: row, index: 0xDEAD_BEEF)
                for y in row * cell..<(row + 1) * cell {
                    for x in column * cell..<(column + 1) * cell {
                        frame.luma[y * frame.lumaStride + x] = white ? 16 : 235
                    }
                }
                #expect(frame.frameIndex == nil, "cell (\(column), \(row)) inverted")
            }
        }
    }

    @Test("pictures without a code read nil")
    func noCodeReadsNil() {
        var generator = SplitMix64(seed: 42)
        let noise = TestPlane(
            width: 320, height: 240, pixels: (0..<320 * 240).map { _ in UInt8.random(in: 0...255, using: &generator) })
        #expect(noise.frameIndex == nil)
        #expect(TestPlane(width: 320, height: 240, pixels: [UInt8](repeating: 128, count: 320 * 240)).frameIndex == nil)
        let flash = TestFrame(frameParameters(index: 30, seconds: 1), width: 320, height: 240)
        #expect(flash.frameIndex == nil)
        // Mirrored: documented as unreadable.
        let frame = TestFrame(frameParameters(index: 77), width: 320, height: 240)
        let mirrored = TestPlane(
            width: 320, height: 240,
            pixels: (0..<240).flatMap { row in frame.packedLuma[row * 320..<(row + 1) * 320].reversed() }
        )
        #expect(mirrored.frameIndex == nil)
    }

    @Test("the code is drawn after the optics: exposure, zoom, white balance, focus and camera leave it alone")
    func codeIgnoresOptics() {
        var optics = VirtualOptics()
        optics.zoomFactor = 3.7
        optics.targetBias = 2
        optics.whiteBalanceGains = VirtualRGB(red: 2, green: 1, blue: 1.5)
        optics.lensPosition = 0
        var scene = VirtualScene()
        scene.camera = .front
        scene.light = 0.01
        let plain = TestFrame(frameParameters(index: 99), width: 640, height: 480)
        let changed = TestFrame(frameParameters(index: 99, scene: scene, optics: optics), width: 640, height: 480)
        let rect = VirtualFrameLayout(width: 640, height: 480).frameIndexCodeRect
        for y in rect.rows {
            let range = y * plain.lumaStride + rect.x..<y * plain.lumaStride + rect.x + rect.width
            #expect(plain.luma[range] == changed.luma[range])
        }
        #expect(changed.frameIndex == 99)
        #expect(changed.meanChroma(rect).cb == 128 && changed.meanChroma(rect).cr == 128)
    }

    // MARK: Determinism

    @Test("equal parameters give identical bytes, whatever was rendered before")
    func deterministic() {
        var optics = VirtualOptics()
        optics.zoomFactor = 1.5
        optics.lensPosition = 0.3
        let parameters = frameParameters(index: 1234, seconds: 2.7, optics: optics)
        let shared = VirtualFrameRenderer(width: 1280, height: 720)
        let first = TestFrame(parameters, width: 1280, height: 720, renderer: shared)
        _ = TestFrame(frameParameters(index: 5, seconds: 0.2), width: 1280, height: 720, renderer: shared)
        let again = TestFrame(parameters, width: 1280, height: 720, renderer: shared)
        let fresh = TestFrame(parameters, width: 1280, height: 720)
        #expect(first.luma == again.luma && first.chroma == again.chroma)
        #expect(first.luma == fresh.luma && first.chroma == fresh.chroma)
        let later = TestFrame(frameParameters(index: 1234, seconds: 2.8, optics: optics), width: 1280, height: 720)
        #expect(first.luma != later.luma, "the object moves with time")
    }

    @Test("YUYV carries the same picture as NV12", arguments: [(320, 240), (1920, 1080)])
    func yuyvMatchesNV12(size: (width: Int, height: Int)) {
        var optics = VirtualOptics()
        optics.whiteBalanceGains = VirtualRGB(red: 1.3, green: 1, blue: 0.8)
        let parameters = frameParameters(index: 0xC0FFEE, seconds: 3.3, optics: optics)
        let nv12 = TestFrame(parameters, width: size.width, height: size.height)
        let stride = 2 * size.width + 16
        var yuyv = [UInt8](repeating: 0, count: stride * size.height)
        yuyv.withUnsafeMutableBufferPointer { buffer in
            VirtualFrameRenderer(width: size.width, height: size.height)
                .renderYUYV(parameters, pixels: buffer.baseAddress!, stride: stride)
        }
        var worstChroma = 0
        var lumaMismatches = 0
        for y in 0..<size.height {
            for x in 0..<size.width {
                lumaMismatches += yuyv[y * stride + 2 * x] == nv12.luma[y * nv12.lumaStride + x] ? 0 : 1
                if y % 2 == 0 {
                    // NV12 chroma is the mean of the two YUYV rows' chroma.
                    let upper = Int(yuyv[y * stride + 2 * x + 1])
                    let lower = Int(yuyv[(y + 1) * stride + 2 * x + 1])
                    let nv12Level = Int(nv12.chroma[y / 2 * nv12.chromaStride + x])
                    worstChroma = max(worstChroma, abs((upper + lower + 1) / 2 - nv12Level))
                }
            }
        }
        #expect(lumaMismatches == 0)
        #expect(worstChroma == 0)
    }

    // MARK: Flash frames

    @Test("flash frames fall exactly at whole seconds at 30 fps")
    func flashAt30fps() {
        for index in 0..<30 * 20 {
            let parameters = VirtualFrameParameters(index: UInt32(index), frameDuration: 1, timescale: 30)
            #expect(parameters.isFlashFrame == (index % 30 == 0), "frame \(index)")
        }
    }

    @Test("flash frames fall exactly at whole seconds at 30000/1001 fps, one per second")
    func flashAt2997fps() {
        // Second k falls in frame ⌊k · 30000 / 1001⌋, the frame whose interval [i·1001, (i+1)·1001) holds k·30000.
        let expected = Set((0...1001).map { second in second * 30000 / 1001 })
        var flashes = 0
        for index in 0..<30000 {
            let parameters = VirtualFrameParameters(index: UInt32(index), frameDuration: 1001, timescale: 30000)
            #expect(parameters.isFlashFrame == expected.contains(index), "frame \(index)")
            flashes += parameters.isFlashFrame ? 1 : 0
        }
        #expect(flashes == 1001)
        // 1001 seconds is exactly 30000 frames: that frame starts on the second.
        #expect(VirtualFrameParameters(index: 30000, frameDuration: 1001, timescale: 30000).isFlashFrame)
        #expect(!VirtualFrameParameters(index: 29999, frameDuration: 1001, timescale: 30000).isFlashFrame)
    }

    @Test("the flash rule holds across timescales and before zero")
    func flashRuleEdges() {
        let start = { (value: Int64, scale: Int32) in VirtualClockTime(value: value, timescale: scale) }
        let frame = VirtualClockTime(value: 1, timescale: 30)
        #expect(VirtualClockTime.intervalContainsWholeSecond(start: start(999_999_999, 1_000_000_000), duration: frame))
        #expect(
            !VirtualClockTime.intervalContainsWholeSecond(start: start(1_000_000_001, 1_000_000_000), duration: frame))
        #expect(VirtualClockTime.intervalContainsWholeSecond(start: start(-1, 30), duration: frame) == false)
        #expect(VirtualClockTime.intervalContainsWholeSecond(start: start(-1, 60), duration: frame))
        #expect(VirtualClockTime.intervalContainsWholeSecond(start: start(Int64.max / 2, 7), duration: start(7, 7)))
    }

    @Test("a flash frame is Y 235 and chroma 128 everywhere, whatever the controls")
    func flashFrameIsWhite() {
        var optics = VirtualOptics()
        optics.targetBias = -8
        optics.whiteBalanceGains = VirtualRGB(red: 3, green: 1, blue: 2)
        optics.zoomFactor = 4
        let frame = TestFrame(frameParameters(index: 60, seconds: 2, optics: optics), width: 352, height: 288)
        for y in 0..<frame.height {
            #expect(frame.luma[y * frame.lumaStride..<y * frame.lumaStride + frame.width].allSatisfy { $0 == 235 })
        }
        for y in 0..<frame.height / 2 {
            #expect(
                frame.chroma[y * frame.chromaStride..<y * frame.chromaStride + frame.width].allSatisfy { $0 == 128 })
        }
        #expect(frame.withLuma { VirtualPictureReader.isFlashFrame($0) })
    }

    @Test("ordinary frames are not flash frames, even overexposed and zoomed into the grey")
    func ordinaryFramesAreNotFlashes() {
        var optics = VirtualOptics()
        optics.iso = 100_000
        optics.zoomFactor = 16
        for optics in [VirtualOptics(), optics] {
            for (width, height) in virtualPresetSizes {
                let frame = TestFrame(frameParameters(index: 3, optics: optics), width: width, height: height)
                #expect(!frame.withLuma { VirtualPictureReader.isFlashFrame($0) }, "\(width)x\(height)")
            }
        }
    }

    // MARK: Optics

    @Test("zoom 2x doubles the object's measured size", arguments: [(640, 480), (1920, 1080), (352, 288)])
    func zoomDoublesObject(size: (width: Int, height: Int)) throws {
        var measured = [Double]()
        for zoom in [1.0, 2.0] {
            var optics = VirtualOptics()
            optics.zoomFactor = zoom
            let seconds = 0.4
            let frame = TestFrame(
                frameParameters(seconds: seconds, optics: optics), width: size.width, height: size.height)
            let layout = VirtualFrameLayout(width: size.width, height: size.height, zoomFactor: zoom)
            let object = layout.object(atSeconds: seconds)
            #expect(object.centerX + object.diameter / 2 < Double(size.width), "the object is in the frame")
            let row = Int(object.centerY)
            let columns = Int(object.centerX - object.diameter)..<Int(object.centerX + object.diameter)
            let width = try #require(
                frame.withLuma { VirtualPictureReader.measureObjectSize($0, row: row, columns: columns) })
            #expect(
                abs(width / object.diameter - 1) < 0.02, "zoom \(zoom): measured \(width), drawn \(object.diameter)")
            measured.append(width)
        }
        #expect(abs(measured[1] / measured[0] - 2) < 0.1, "ratio \(measured[1] / measured[0])")
    }

    @Test("the object moves with time and the front camera mirrors it")
    func objectMoves() throws {
        let layout = VirtualFrameLayout(width: 640, height: 480)
        var scene = VirtualScene()
        scene.camera = .front
        for seconds in [0.2, 0.5, 1.5, 3.1] {
            for scene in [VirtualScene(), scene] {
                let frame = TestFrame(frameParameters(seconds: seconds, scene: scene), width: 640, height: 480)
                var expected = layout.object(atSeconds: seconds)
                if scene.camera == .front { expected.centerX = 640 - expected.centerX }
                // The brightest run's midpoint in the centre row is the object's centre.
                let row = Int(expected.centerY)
                var bright = [Int]()
                for x in 0..<640 where frame.luma[row * frame.lumaStride + x] > 200 { bright.append(x) }
                let center = Double(bright.first! + bright.last! + 1) / 2
                #expect(
                    abs(center - expected.centerX) < 1.5,
                    "\(seconds) s \(scene.camera): \(center) vs \(expected.centerX)")
            }
        }
    }

    @Test("+1 EV of bias, twice the duration or twice the ISO double the linear brightness")
    func exposureDoubles() throws {
        let layout = VirtualFrameLayout(width: 640, height: 480)
        let gray = try #require(layout.grayPatchRect)
        func brightness(_ change: (inout VirtualOptics) -> Void) -> Double {
            var optics = VirtualOptics()
            change(&optics)
            let frame = TestFrame(frameParameters(optics: optics), width: 640, height: 480)
            return frame.withLuma { VirtualPictureReader.measureLinearBrightness($0, in: gray) } ?? .nan
        }
        let base = brightness { _ in }
        #expect(abs(base - VirtualScene.grayReflectance) < 0.01, "the grey card at gain 1 reads \(base)")
        for (name, ratio) in [
            ("bias +1", brightness { $0.targetBias = 1 } / base),
            ("duration x2", brightness { $0.exposureDuration *= 2 } / base),
            ("ISO x2", brightness { $0.iso *= 2 } / base),
            ("bias -1", base / brightness { $0.targetBias = -1 }),
            ("bias +2 over +1", brightness { $0.targetBias = 2 } / brightness { $0.targetBias = 1 }),
        ] {
            #expect(abs(ratio - 2) < 0.2, "\(name): ratio \(ratio)")
        }
        // The torch adds half the normal light, the flash twice it.
        #expect(abs(brightness { $0.torchLevel = 1 } / base - 1.5) < 0.1)
        #expect(abs(brightness { $0.flashFired = true } / base - 3) < 0.2)
    }

    @Test("scene light scales brightness linearly")
    func sceneLight() throws {
        let gray = try #require(VirtualFrameLayout(width: 640, height: 480).grayPatchRect)
        var dark = VirtualScene()
        dark.lightEV = -1
        let normal = TestFrame(frameParameters(), width: 640, height: 480)
        let darker = TestFrame(frameParameters(scene: dark), width: 640, height: 480)
        let ratio =
            normal.withLuma { VirtualPictureReader.measureLinearBrightness($0, in: gray)! }
            / darker.withLuma { VirtualPictureReader.measureLinearBrightness($0, in: gray)! }
        #expect(abs(ratio - 2) < 0.2)
    }

    @Test("defocus lowers the focus target's sharpness monotonically", arguments: [(640, 480), (1920, 1080)])
    func defocusLowersSharpness(size: (width: Int, height: Int)) throws {
        let rect = try #require(VirtualFrameLayout(width: size.width, height: size.height).focusTargetRect)
        var previous = Double.infinity
        for error in [0.0, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0] {
            var scene = VirtualScene()
            scene.focusTargetLensPosition = 0
            var optics = VirtualOptics()
            optics.lensPosition = error
            let frame = TestFrame(frameParameters(scene: scene, optics: optics), width: size.width, height: size.height)
            let sharpness = frame.withLuma { VirtualPictureReader.measureFocusSharpness($0, in: rect) }
            #expect(sharpness < previous, "error \(error): sharpness \(sharpness) after \(previous)")
            previous = sharpness
        }
        // In focus, the stripes step from black to white within about two pixels.
        var sharp = VirtualOptics()
        sharp.lensPosition = 0.5
        let frame = TestFrame(frameParameters(optics: sharp), width: size.width, height: size.height)
        #expect(frame.withLuma { VirtualPictureReader.measureFocusSharpness($0, in: rect) } > 80)
        // The error's sign does not matter.
        var near = VirtualOptics()
        near.lensPosition = 0.3
        var far = VirtualOptics()
        far.lensPosition = 0.7
        let nearFrame = TestFrame(frameParameters(optics: near), width: size.width, height: size.height)
        let farFrame = TestFrame(frameParameters(optics: far), width: size.width, height: size.height)
        #expect(nearFrame.luma == farFrame.luma)
    }

    @Test("white-balance gains move the chroma of grey the right way")
    func whiteBalanceMovesChroma() throws {
        let gray = try #require(VirtualFrameLayout(width: 640, height: 480).grayPatchRect)
        func chroma(_ gains: VirtualRGB, illuminant: VirtualRGB = VirtualRGB(gray: 1)) -> (cb: Double, cr: Double) {
            var optics = VirtualOptics()
            optics.whiteBalanceGains = gains
            var scene = VirtualScene()
            scene.illuminant = illuminant
            return TestFrame(frameParameters(scene: scene, optics: optics), width: 640, height: 480).meanChroma(gray)
        }
        let neutral = chroma(VirtualRGB(gray: 1))
        #expect(abs(neutral.cb - 128) < 0.5 && abs(neutral.cr - 128) < 0.5)
        let red = chroma(VirtualRGB(red: 1.5, green: 1, blue: 1))
        #expect(red.cr > neutral.cr + 5 && red.cb < neutral.cb)
        let blue = chroma(VirtualRGB(red: 1, green: 1, blue: 1.5))
        #expect(blue.cb > neutral.cb + 5 && blue.cr < neutral.cr)
        // A warm illuminant turns grey orange; gains of its inverse make it grey again.
        let tungsten = VirtualRGB(red: 1.4, green: 1, blue: 0.6)
        let warm = chroma(VirtualRGB(gray: 1), illuminant: tungsten)
        #expect(warm.cr > 135 && warm.cb < 121)
        let corrected = chroma(VirtualRGB(red: 1 / 1.4, green: 1, blue: 1 / 0.6), illuminant: tungsten)
        #expect(abs(corrected.cb - 128) < 0.5 && abs(corrected.cr - 128) < 0.5)
    }

    @Test("the front camera sees the bars mirrored")
    func frontCameraMirrors() throws {
        let layout = VirtualFrameLayout(width: 1280, height: 720)
        let whiteBar = try #require(layout.barRect(0))
        let blueBar = try #require(layout.barRect(6))
        var scene = VirtualScene()
        scene.camera = .front
        let back = TestFrame(frameParameters(), width: 1280, height: 720)
        let front = TestFrame(frameParameters(scene: scene), width: 1280, height: 720)
        #expect(back.meanLuma(whiteBar) > 200 && back.meanLuma(blueBar) < 40)
        #expect(front.meanLuma(whiteBar) < 40 && front.meanLuma(blueBar) > 200)
        #expect(front.frameIndex == 7)
    }
}
