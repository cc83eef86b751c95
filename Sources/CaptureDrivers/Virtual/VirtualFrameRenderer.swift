import Foundation

/// Draws virtual camera frames of one size into caller-provided NV12 or YUYV planes.
///
/// What a frame shows is described on `VirtualScene` and `VirtualOptics`; a frame whose interval holds a whole
/// second is the flash frame (Y 235, chroma 128 everywhere, no code); every other frame carries its index as a
/// `VirtualFrameIndexCode` in the top-left corner.
///
/// Fast by construction: away from the moving object every row of the picture is one of three rows (the bars,
/// plain grey, grey across the focus target), so the renderer keeps those three rows in Y, NV12-chroma and YUYV
/// form, rebuilds them only when the controls or the scene change, and fills the frame by copying rows. Only the
/// object's rows are drawn pixel by pixel (analytic coverage, antialiased edges). All memory is allocated in
/// `init`; rendering allocates nothing.
///
/// A reference type holding scratch memory: use one instance from one thread at a time (the capture thread);
/// rendering is deterministic, so any two instances of one size produce identical bytes.
package final class VirtualFrameRenderer {
    /// The frame width in pixels (even).
    package let width: Int
    /// The frame height in pixels (even).
    package let height: Int

    /// One picture row in the three layouts the renderer writes.
    private struct RowTemplate {
        /// `width` luma bytes.
        let luma: UnsafeMutablePointer<UInt8>
        /// `width` bytes of interleaved Cb, Cr, one pair per two pixels (NV12's chroma row, before vertical
        /// averaging; also the chroma of a YUYV row).
        let chroma: UnsafeMutablePointer<UInt8>
        /// `2 · width` bytes of Y0 Cb Y1 Cr.
        let yuyv: UnsafeMutablePointer<UInt8>

        init(width: Int) {
            luma = .allocate(capacity: width)
            chroma = .allocate(capacity: width)
            yuyv = .allocate(capacity: 2 * width)
        }

        func deallocate() {
            luma.deallocate()
            chroma.deallocate()
            yuyv.deallocate()
        }
    }

    /// Everything the row templates depend on; the templates are rebuilt when it changes.
    private struct TemplateKey: Equatable {
        var scene: VirtualScene
        var optics: VirtualOptics
    }

    /// The moving object as drawn in one frame, in pixels and levels.
    private struct Disc {
        var centerX: Double
        var centerY: Double
        var radius: Double
        var luma: Float
        var cb: Float
        var cr: Float
    }

    private let bars: RowTemplate
    private let gray: RowTemplate
    private let target: RowTemplate
    /// Two rows of luma and chroma for the object's rows: NV12 needs two rows at once to average chroma.
    private let scratchLuma: UnsafeMutablePointer<UInt8>
    private let scratchChroma: UnsafeMutablePointer<UInt8>
    /// The object's coverage of each pixel of the row being drawn.
    private let coverage: UnsafeMutablePointer<Float>
    /// Per-pixel chroma while a template is built, before pairs are averaged.
    private let pixelCb: UnsafeMutablePointer<Double>
    private let pixelCr: UnsafeMutablePointer<Double>

    private var templateKey: TemplateKey?
    /// The first row below the bars, and the focus target's rows, for the current templates.
    private var barsEndRow = 0
    private var targetRows = 0..<0

    /// A renderer for `width` × `height` frames: both even, at least 112 × 48 (the frame-index code's size).
    /// Allocates about `7 · width` bytes of templates and scratch.
    package init(width: Int, height: Int) {
        precondition(width % 2 == 0 && height % 2 == 0, "virtual frames have even sizes, not \(width)x\(height)")
        let minimumCell = VirtualFrameIndexCode.cellSize(frameWidth: width)
        precondition(
            width >= VirtualFrameIndexCode.columns * minimumCell && height >= VirtualFrameIndexCode.rows * minimumCell,
            "a \(width)x\(height) frame is too small for the frame-index code"
        )
        self.width = width
        self.height = height
        bars = RowTemplate(width: width)
        gray = RowTemplate(width: width)
        target = RowTemplate(width: width)
        scratchLuma = .allocate(capacity: 2 * width)
        scratchChroma = .allocate(capacity: 2 * width)
        coverage = .allocate(capacity: width)
        pixelCb = .allocate(capacity: width)
        pixelCr = .allocate(capacity: width)
    }

    deinit {
        bars.deallocate()
        gray.deallocate()
        target.deallocate()
        scratchLuma.deallocate()
        scratchChroma.deallocate()
        coverage.deallocate()
        pixelCb.deallocate()
        pixelCr.deallocate()
    }

    // MARK: Rendering

    /// Renders the frame `parameters` describe into NV12 planes: a `width` × `height` Y plane, rows `lumaStride`
    /// bytes apart, and a `width` × `height / 2` plane of interleaved Cb, Cr, rows `chromaStride` bytes apart.
    /// Video range; chroma is the mean of each 2 × 2 block.
    package func renderNV12(
        _ parameters: VirtualFrameParameters,
        luma: UnsafeMutablePointer<UInt8>,
        lumaStride: Int,
        chroma: UnsafeMutablePointer<UInt8>,
        chromaStride: Int
    ) {
        precondition(lumaStride >= width && chromaStride >= width, "NV12 strides must be at least the width")
        if parameters.isFlashFrame {
            for row in 0..<height {
                (luma + row * lumaStride).update(repeating: VirtualColorEncoding.videoWhite, count: width)
            }
            for row in 0..<height / 2 {
                (chroma + row * chromaStride).update(repeating: VirtualColorEncoding.neutralChroma, count: width)
            }
            return
        }
        prepareTemplates(for: parameters)
        let disc = disc(for: parameters)
        for pair in 0..<height / 2 {
            let upper = row(2 * pair, disc: disc, slot: 0)
            let lower = row(2 * pair + 1, disc: disc, slot: 1)
            (luma + 2 * pair * lumaStride).update(from: upper.luma, count: width)
            (luma + (2 * pair + 1) * lumaStride).update(from: lower.luma, count: width)
            let chromaRow = chroma + pair * chromaStride
            if upper.chroma == lower.chroma {
                chromaRow.update(from: upper.chroma, count: width)
            } else {
                for i in 0..<width {
                    chromaRow[i] = UInt8((UInt16(upper.chroma[i]) + UInt16(lower.chroma[i]) + 1) >> 1)
                }
            }
        }
        VirtualFrameIndexCode.drawNV12(
            index: parameters.index,
            frameWidth: width,
            luma: luma,
            lumaStride: lumaStride,
            chroma: chroma,
            chromaStride: chromaStride
        )
        parameters.scene.card?.drawNV12(
            frameWidth: width, frameHeight: height, luma: luma, lumaStride: lumaStride, chroma: chroma,
            chromaStride: chromaStride)
    }

    /// Renders the frame `parameters` describe into a packed 4:2:2 YUYV plane (Y0 Cb Y1 Cr), rows `stride` bytes
    /// apart (at least `2 · width`). Video range; chroma is the mean of each horizontal pixel pair.
    package func renderYUYV(_ parameters: VirtualFrameParameters, pixels: UnsafeMutablePointer<UInt8>, stride: Int) {
        precondition(stride >= 2 * width, "a YUYV stride must be at least twice the width")
        if parameters.isFlashFrame {
            for row in 0..<height {
                let line = pixels + row * stride
                for pair in 0..<width / 2 {
                    line[4 * pair] = VirtualColorEncoding.videoWhite
                    line[4 * pair + 1] = VirtualColorEncoding.neutralChroma
                    line[4 * pair + 2] = VirtualColorEncoding.videoWhite
                    line[4 * pair + 3] = VirtualColorEncoding.neutralChroma
                }
            }
            return
        }
        prepareTemplates(for: parameters)
        let disc = disc(for: parameters)
        for y in 0..<height {
            let source = row(y, disc: disc, slot: 0)
            let line = pixels + y * stride
            if let yuyv = source.yuyv {
                line.update(from: yuyv, count: 2 * width)
            } else {
                for pair in 0..<width / 2 {
                    line[4 * pair] = source.luma[2 * pair]
                    line[4 * pair + 1] = source.chroma[2 * pair]
                    line[4 * pair + 2] = source.luma[2 * pair + 1]
                    line[4 * pair + 3] = source.chroma[2 * pair + 1]
                }
            }
        }
        VirtualFrameIndexCode.drawYUYV(index: parameters.index, frameWidth: width, pixels: pixels, stride: stride)
        parameters.scene.card?.drawYUYV(frameWidth: width, frameHeight: height, pixels: pixels, rowBytes: stride)
    }

    // MARK: Rows

    /// Row `y` of the picture: a template's row, or, where the object crosses it, the template's row with the
    /// object drawn on it in scratch slot `slot`. `yuyv` is the template's YUYV row when the row is a template.
    private func row(
        _ y: Int,
        disc: Disc,
        slot: Int
    ) -> (luma: UnsafePointer<UInt8>, chroma: UnsafePointer<UInt8>, yuyv: UnsafePointer<UInt8>?) {
        let base = y < barsEndRow ? bars : targetRows.contains(y) ? target : gray
        let dy = Double(y) + 0.5 - disc.centerY
        let outer = disc.radius + 0.5
        guard abs(dy) < outer else {
            return (UnsafePointer(base.luma), UnsafePointer(base.chroma), UnsafePointer(base.yuyv))
        }

        // Coverage by distance from the edge (1 inside r − ½, 0 outside r + ½): a one-pixel antialiased rim.
        let outerHalfChord = (outer * outer - dy * dy).squareRoot()
        let innerSquared = (disc.radius - 0.5) * (disc.radius - 0.5) - dy * dy
        let first = max(0, Int((disc.centerX - outerHalfChord).rounded(.down))) & ~1
        let end = min(width, (Int((disc.centerX + outerHalfChord).rounded(.up)) + 1) & ~1)
        let luma = scratchLuma + slot * width
        let chroma = scratchChroma + slot * width
        luma.update(from: base.luma, count: width)
        chroma.update(from: base.chroma, count: width)
        guard end > first else { return (UnsafePointer(luma), UnsafePointer(chroma), nil) }
        for x in first..<end {
            let dx = Double(x) + 0.5 - disc.centerX
            let squared = dx * dx
            if squared <= innerSquared {
                coverage[x] = 1
            } else {
                coverage[x] = Float(min(max(outer - (squared + dy * dy).squareRoot(), 0), 1))
            }
        }
        for x in first..<end {
            luma[x] = Self.blend(base.luma[x], disc.luma, coverage[x])
        }
        for pair in first / 2..<end / 2 {
            let a = (coverage[2 * pair] + coverage[2 * pair + 1]) * 0.5
            chroma[2 * pair] = Self.blend(base.chroma[2 * pair], disc.cb, a)
            chroma[2 * pair + 1] = Self.blend(base.chroma[2 * pair + 1], disc.cr, a)
        }
        return (UnsafePointer(luma), UnsafePointer(chroma), nil)
    }

    /// `background` moved towards `level` by `amount` (0 ... 1), rounded: blending in the encoded domain, which
    /// is close enough for a one-pixel rim.
    @inline(__always)
    private static func blend(_ background: UInt8, _ level: Float, _ amount: Float) -> UInt8 {
        let b = Float(background)
        return UInt8(min(max(b + amount * (level - b) + 0.5, 0), 255))
    }

    private func disc(for parameters: VirtualFrameParameters) -> Disc {
        let layout = VirtualFrameLayout(width: width, height: height, parameters: parameters)
        let object = layout.object(atSeconds: parameters.time.seconds)
        let level = VirtualColorEncoding.videoYCbCr(
            fromLinear: VirtualRGB(gray: VirtualScene.objectReflectance) * lightFactors(parameters)
        )
        return Disc(
            centerX: object.centerX,
            centerY: object.centerY,
            radius: object.diameter / 2,
            luma: Float(level.y),
            cb: Float(level.cb),
            cr: Float(level.cr)
        )
    }

    /// What multiplies a reflectance to give linear sensor values: illuminant × white balance × exposure gain.
    private func lightFactors(_ parameters: VirtualFrameParameters) -> VirtualRGB {
        parameters.scene.illuminant * parameters.optics.whiteBalanceGains
            * parameters.optics.exposureGain(sceneLight: parameters.scene.light)
    }

    // MARK: Templates

    private func prepareTemplates(for parameters: VirtualFrameParameters) {
        let key = TemplateKey(scene: parameters.scene, optics: parameters.optics)
        guard key != templateKey else { return }
        templateKey = key
        let layout = VirtualFrameLayout(width: width, height: height, parameters: parameters)
        let factors = lightFactors(parameters)

        // A row is in a band when its centre is: the first row at or below scene y is ⌈pixelY − ½⌉.
        func firstRow(atOrBelow sceneY: Double) -> Int {
            min(height, max(0, Int((layout.pixelY(sceneY: sceneY) - 0.5).rounded(.up))))
        }
        let bounds = VirtualScene.focusTargetBounds
        barsEndRow = firstRow(atOrBelow: VirtualScene.barsBottom)
        targetRows =
            firstRow(atOrBelow: bounds.minY)..<max(firstRow(atOrBelow: bounds.minY), firstRow(atOrBelow: bounds.maxY))

        let grayRGB = VirtualRGB(gray: VirtualScene.grayReflectance)
        build(gray, factors: factors) { _ in grayRGB }

        let barWidth = layout.aspect / Double(VirtualScene.barReflectances.count)
        let lastBar = VirtualScene.barReflectances.count - 1
        build(bars, factors: factors) { x in
            // The bars the pixel's footprint covers, weighted by how much of it each covers.
            let a = layout.sceneX(pixelX: Double(x))
            let b = layout.sceneX(pixelX: Double(x + 1))
            let low = min(a, b) + layout.aspect / 2
            let high = max(a, b) + layout.aspect / 2
            let firstBar = min(lastBar, max(0, Int((low / barWidth).rounded(.down))))
            let endBar = min(lastBar, max(0, Int((high / barWidth).rounded(.down))))
            if firstBar == endBar { return VirtualScene.barReflectances[firstBar] }
            var sum = VirtualRGB(gray: 0)
            for bar in firstBar...endBar {
                let covered = min(high, Double(bar + 1) * barWidth) - max(low, Double(bar) * barWidth)
                sum = VirtualRGB(
                    red: sum.red + covered * VirtualScene.barReflectances[bar].red,
                    green: sum.green + covered * VirtualScene.barReflectances[bar].green,
                    blue: sum.blue + covered * VirtualScene.barReflectances[bar].blue
                )
            }
            return sum * (1 / (high - low))
        }

        // The stripes seen through a box blur as wide as the defocus and the pixel together: the blurred value is
        // a difference of the drawing's antiderivative, exact and cheap, so no convolution is needed.
        let pixel = 1 / layout.pixelsPerSceneUnit
        let defocus = parameters.optics.defocusBlurWidth(targetLensPosition: parameters.scene.focusTargetLensPosition)
        let blur = (defocus * defocus + pixel * pixel).squareRoot()
        build(target, factors: factors) { x in
            let center = layout.sceneX(pixelX: Double(x) + 0.5)
            if center + blur / 2 <= bounds.minX || center - blur / 2 >= bounds.maxX { return grayRGB }
            let value =
                (Self.focusTargetIntegral(center + blur / 2) - Self.focusTargetIntegral(center - blur / 2)) / blur
            return VirtualRGB(gray: value)
        }
    }

    /// The integral from 0 of the reflectance along a focus-target row: grey outside the target, then stripes
    /// starting white at its left edge, `focusStripePeriod` apart.
    private static func focusTargetIntegral(_ x: Double) -> Double {
        let bounds = VirtualScene.focusTargetBounds
        let grayLevel = VirtualScene.grayReflectance
        let (white, black) = VirtualScene.focusStripeReflectances
        let period = VirtualScene.focusStripePeriod
        func stripes(_ u: Double) -> Double {
            let whole = (u / period).rounded(.down)
            let inPeriod = u - whole * period
            return black * u + (white - black) * (whole * period / 2 + min(inPeriod, period / 2))
        }
        if x <= bounds.minX { return grayLevel * x }
        let atLeft = grayLevel * bounds.minX
        if x <= bounds.maxX { return atLeft + stripes(x - bounds.minX) }
        return atLeft + stripes(bounds.maxX - bounds.minX) + grayLevel * (x - bounds.maxX)
    }

    /// Fills `template` from the reflectance of each pixel column, converting each distinct colour once.
    private func build(_ template: RowTemplate, factors: VirtualRGB, reflectance: (Int) -> VirtualRGB) {
        var previous: VirtualRGB?
        var level = (y: 0.0, cb: 0.0, cr: 0.0)
        for x in 0..<width {
            let rgb = reflectance(x)
            if rgb != previous {
                level = VirtualColorEncoding.videoYCbCr(fromLinear: rgb * factors)
                previous = rgb
            }
            template.luma[x] = VirtualColorEncoding.byte(level.y)
            pixelCb[x] = level.cb
            pixelCr[x] = level.cr
        }
        for pair in 0..<width / 2 {
            template.chroma[2 * pair] = VirtualColorEncoding.byte((pixelCb[2 * pair] + pixelCb[2 * pair + 1]) / 2)
            template.chroma[2 * pair + 1] = VirtualColorEncoding.byte((pixelCr[2 * pair] + pixelCr[2 * pair + 1]) / 2)
            template.yuyv[4 * pair] = template.luma[2 * pair]
            template.yuyv[4 * pair + 1] = template.chroma[2 * pair]
            template.yuyv[4 * pair + 2] = template.luma[2 * pair + 1]
            template.yuyv[4 * pair + 3] = template.chroma[2 * pair + 1]
        }
    }
}
