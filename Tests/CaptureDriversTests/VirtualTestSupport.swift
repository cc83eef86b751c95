import CaptureDrivers

/// Every preset size of the virtual cameras, and the back camera's photo size.
let virtualPresetSizes: [(width: Int, height: Int)] = [
    (320, 240), (352, 288), (640, 480), (960, 540), (1280, 720), (1920, 1080), (3840, 2160), (4032, 3024),
]

/// The parameters of a frame at `seconds` (on a 600 Hz grid) lasting 1/30 s, away from any whole second unless
/// asked for.
func frameParameters(
    index: UInt32 = 7,
    seconds: Double = 0.5,
    scene: VirtualScene = VirtualScene(),
    optics: VirtualOptics = VirtualOptics()
) -> VirtualFrameParameters {
    VirtualFrameParameters(
        time: VirtualClockTime(value: Int64((seconds * 600).rounded()), timescale: 600),
        duration: VirtualClockTime(value: 20, timescale: 600),
        index: index,
        scene: scene,
        optics: optics
    )
}

/// One rendered NV12 frame in arrays, with strides wider than the width so stride handling is exercised.
struct TestFrame {
    let width: Int
    let height: Int
    let lumaStride: Int
    let chromaStride: Int
    var luma: [UInt8]
    var chroma: [UInt8]

    init(_ parameters: VirtualFrameParameters, width: Int, height: Int, renderer: VirtualFrameRenderer? = nil) {
        let renderer = renderer ?? VirtualFrameRenderer(width: width, height: height)
        self.width = width
        self.height = height
        let lumaStride = width + 32
        let chromaStride = width + 64
        self.lumaStride = lumaStride
        self.chromaStride = chromaStride
        var luma = [UInt8](repeating: 0, count: lumaStride * height)
        var chroma = [UInt8](repeating: 0, count: chromaStride * height / 2)
        luma.withUnsafeMutableBufferPointer { lumaBuffer in
            chroma.withUnsafeMutableBufferPointer { chromaBuffer in
                renderer.renderNV12(
                    parameters,
                    luma: lumaBuffer.baseAddress!,
                    lumaStride: lumaStride,
                    chroma: chromaBuffer.baseAddress!,
                    chromaStride: chromaStride
                )
            }
        }
        self.luma = luma
        self.chroma = chroma
    }

    /// The luma as a tightly packed plane.
    var packedLuma: [UInt8] {
        (0..<height).flatMap { row in luma[row * lumaStride..<row * lumaStride + width] }
    }

    func withLuma<Result>(_ body: (VirtualLumaPlane) -> Result) -> Result {
        VirtualLumaPlane.with(luma, width: width, height: height, stride: lumaStride, body)
    }

    var frameIndex: UInt32? { withLuma { VirtualPictureReader.readFrameIndex($0) } }

    func meanLuma(_ rect: VirtualPixelRect) -> Double {
        withLuma { VirtualPictureReader.measureMeanLuma($0, in: rect) } ?? .nan
    }

    func meanChroma(_ rect: VirtualPixelRect) -> (cb: Double, cr: Double) {
        chroma.withUnsafeBufferPointer { VirtualPictureReader.measureMeanChroma($0, stride: chromaStride, in: rect) }
    }
}

/// A tightly packed luma plane and its size.
struct TestPlane {
    var width: Int
    var height: Int
    var pixels: [UInt8]

    var frameIndex: UInt32? {
        VirtualLumaPlane.with(pixels, width: width, height: height) { VirtualPictureReader.readFrameIndex($0) }
    }

    /// The top-left `width` × `height` pixels.
    func cropped(width: Int, height: Int) -> TestPlane {
        let w = min(width, self.width)
        let h = min(height, self.height)
        return TestPlane(
            width: w, height: h, pixels: (0..<h).flatMap { row in pixels[row * self.width..<row * self.width + w] })
    }

    /// Each 2 × 2 block averaged into one pixel (rounded).
    func boxDownscaled() -> TestPlane {
        let w = width / 2
        let h = height / 2
        var out = [UInt8](repeating: 0, count: w * h)
        for y in 0..<h {
            for x in 0..<w {
                let sum =
                    Int(pixels[2 * y * width + 2 * x]) + Int(pixels[2 * y * width + 2 * x + 1])
                    + Int(pixels[(2 * y + 1) * width + 2 * x]) + Int(pixels[(2 * y + 1) * width + 2 * x + 1])
                out[y * w + x] = UInt8((sum + 2) / 4)
            }
        }
        return TestPlane(width: w, height: h, pixels: out)
    }

    /// Every pixel moved by a uniform deterministic offset in −amplitude ... amplitude, clamped.
    func withNoise(amplitude: Int, seed: UInt64) -> TestPlane {
        var generator = SplitMix64(seed: seed)
        return TestPlane(
            width: width, height: height,
            pixels: pixels.map { level in
                let offset = Int(generator.next() % UInt64(2 * amplitude + 1)) - amplitude
                return UInt8(min(max(Int(level) + offset, 0), 255))
            })
    }
}

/// A small deterministic generator, so failures reproduce.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
