import Foundation
import OpenAVCapture
import OpenAVCaptureTesting

/// Reads pixels of any format an output delivers as video-range BT.709 Y'CbCr, written from the formats' definitions
/// and independently of the library's converters, so a test can compare what different outputs got.
struct PictureSampler {
    /// One pixel as video-range Y'CbCr (chroma nil for grey formats).
    struct Sample {
        var y: Double
        var cb: Double?
        var cr: Double?
    }

    let width: Int
    let height: Int
    private let read: (Int, Int) -> Sample

    /// The Y'CbCr matrix that relates RGB pictures to the Y'CbCr ones they are compared with.
    enum Matrix {
        case bt601
        case bt709

        /// Kr and Kb, from the recommendations.
        var coefficients: (red: Double, blue: Double) { self == .bt601 ? (0.299, 0.114) : (0.2126, 0.0722) }
    }

    /// A sampler over a copy of `image`'s pixels; nil for a format it does not know. RGB pixels are read as
    /// Y'CbCr through `matrix`.
    init?(_ image: CVPixelBuffer, matrix: Matrix = .bt709) {
        CVPixelBufferLockBaseAddress(image, .readOnly)
        defer { CVPixelBufferUnlockBaseAddress(image, .readOnly) }
        width = CVPixelBufferGetWidth(image)
        height = CVPixelBufferGetHeight(image)
        func plane(_ index: Int) -> (bytes: [UInt8], stride: Int) {
            let isPlanar = CVPixelBufferIsPlanar(image)
            let stride = isPlanar ? CVPixelBufferGetBytesPerRowOfPlane(image, index) : CVPixelBufferGetBytesPerRow(image)
            let rows = isPlanar ? CVPixelBufferGetHeightOfPlane(image, index) : CVPixelBufferGetHeight(image)
            let base = (isPlanar ? CVPixelBufferGetBaseAddressOfPlane(image, index) : CVPixelBufferGetBaseAddress(image))!
            return (Array(UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: stride * rows)), stride)
        }
        /// Full-range luma and chroma to video range (BT.601/709 quantization).
        func video(y: UInt8, cb: UInt8?, cr: UInt8?, full: Bool) -> Sample {
            guard full else { return Sample(y: Double(y), cb: cb.map(Double.init), cr: cr.map(Double.init)) }
            func chroma(_ c: UInt8?) -> Double? { c.map { 128 + (Double($0) - 128) * 224 / 255 } }
            return Sample(y: 16 + Double(y) * 219 / 255, cb: chroma(cb), cr: chroma(cr))
        }
        switch CVPixelBufferGetPixelFormatType(image) {
        case kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8BiPlanarFullRange:
            let full = CVPixelBufferGetPixelFormatType(image) == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange
            let (luma, chroma) = (plane(0), plane(1))
            read = { x, y in
                let c = (y / 2) * chroma.stride + (x / 2) * 2
                return video(y: luma.bytes[y * luma.stride + x], cb: chroma.bytes[c], cr: chroma.bytes[c + 1], full: full)
            }
        case kCVPixelFormatType_420YpCbCr8Planar, kCVPixelFormatType_420YpCbCr8PlanarFullRange:
            let full = CVPixelBufferGetPixelFormatType(image) == kCVPixelFormatType_420YpCbCr8PlanarFullRange
            let (luma, cb, cr) = (plane(0), plane(1), plane(2))
            read = { x, y in
                video(
                    y: luma.bytes[y * luma.stride + x], cb: cb.bytes[(y / 2) * cb.stride + x / 2],
                    cr: cr.bytes[(y / 2) * cr.stride + x / 2], full: full)
            }
        case kCVPixelFormatType_422YpCbCr8_yuvs, kCVPixelFormatType_422YpCbCr8:
            // yuvs: Y0 Cb Y1 Cr; 2vuy: Cb Y0 Cr Y1.
            let yuyv = CVPixelBufferGetPixelFormatType(image) == kCVPixelFormatType_422YpCbCr8_yuvs
            let packed = plane(0)
            read = { x, y in
                let group = y * packed.stride + (x / 2) * 4
                let bytes = packed.bytes
                return yuyv
                    ? video(y: bytes[group + (x % 2) * 2], cb: bytes[group + 1], cr: bytes[group + 3], full: false)
                    : video(y: bytes[group + 1 + (x % 2) * 2], cb: bytes[group], cr: bytes[group + 2], full: false)
            }
        case kCVPixelFormatType_32BGRA, kCVPixelFormatType_32ARGB, kCVPixelFormatType_24RGB:
            let format = CVPixelBufferGetPixelFormatType(image)
            let packed = plane(0)
            let (size, red, green, blue) =
                format == kCVPixelFormatType_32BGRA ? (4, 2, 1, 0) : format == kCVPixelFormatType_32ARGB ? (4, 1, 2, 3) : (3, 0, 1, 2)
            read = { x, y in
                let pixel = y * packed.stride + x * size
                return Self.fromRGB(
                    packed.bytes[pixel + red], packed.bytes[pixel + green], packed.bytes[pixel + blue], matrix: matrix)
            }
        case kCVPixelFormatType_OneComponent8:
            let grey = plane(0)
            read = { x, y in video(y: grey.bytes[y * grey.stride + x], cb: nil, cr: nil, full: true) }
        default:
            return nil
        }
    }

    /// Decoded planes of a 4:2:0 movie frame (`ffmpeg -pix_fmt yuv420p`), full range when `isFullRange`.
    init(yuv420p bytes: [UInt8], width: Int, height: Int, isFullRange: Bool) {
        self.width = width
        self.height = height
        let chromaWidth = (width + 1) / 2
        let chromaSize = chromaWidth * ((height + 1) / 2)
        read = { x, y in
            let c = (y / 2) * chromaWidth + x / 2
            let (luma, cb, cr) = (bytes[y * width + x], bytes[width * height + c], bytes[width * height + chromaSize + c])
            guard isFullRange else { return Sample(y: Double(luma), cb: Double(cb), cr: Double(cr)) }
            return Sample(
                y: 16 + Double(luma) * 219 / 255, cb: 128 + (Double(cb) - 128) * 224 / 255,
                cr: 128 + (Double(cr) - 128) * 224 / 255)
        }
    }

    /// Decoded RGB frame (`ffmpeg -pix_fmt rgb24`).
    init(rgb24 bytes: [UInt8], width: Int, height: Int, matrix: Matrix) {
        self.width = width
        self.height = height
        read = { x, y in
            let pixel = (y * width + x) * 3
            return Self.fromRGB(bytes[pixel], bytes[pixel + 1], bytes[pixel + 2], matrix: matrix)
        }
    }

    /// Full-range RGB as video-range Y'CbCr through `matrix`, so RGB pictures compare in the same units as the
    /// Y'CbCr ones they were made from.
    private static func fromRGB(_ r: UInt8, _ g: UInt8, _ b: UInt8, matrix: Matrix) -> Sample {
        let (kr, kb) = matrix.coefficients
        let (red, green, blue) = (Double(r) / 255, Double(g) / 255, Double(b) / 255)
        let luma = kr * red + (1 - kr - kb) * green + kb * blue
        return Sample(
            y: 16 + 219 * luma, cb: 128 + 224 * (blue - luma) / (2 * (1 - kb)),
            cr: 128 + 224 * (red - luma) / (2 * (1 - kr)))
    }

    func sample(x: Int, y: Int) -> Sample { read(x, y) }

    /// The luma plane, tightly packed, for the frame-index reader: only the frame-index code's corner is filled
    /// (the reader looks nowhere else), so large frames cost little.
    var luma: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: width * height)
        let code = VirtualSceneLayout(width: width, height: height).frameIndexCode
        // A margin around the code, as the reader searches for its frame.
        let maxX = min(width, code.x + code.width + code.width / 2 + 8)
        let maxY = min(height, code.y + code.height + code.height / 2 + 8)
        for y in 0..<maxY {
            for x in 0..<maxX { bytes[y * width + x] = UInt8(max(0, min(255, sample(x: x, y: y).y.rounded()))) }
        }
        return bytes
    }

    /// The frame index the virtual camera wrote into the picture (nil for a flash frame or an unreadable code).
    var frameIndex: UInt32? { VirtualFrameReader.readFrameIndex(fromLuma: luma, width: width, height: height) }

    /// Whether this is a flash frame: white all over (mean luma of a sparse grid at 225 or more).
    var isFlash: Bool {
        var sum = 0.0
        var count = 0.0
        for y in stride(from: 0, to: height, by: 8) {
            for x in stride(from: 0, to: width, by: 8) {
                sum += sample(x: x, y: y).y
                count += 1
            }
        }
        return sum / count >= 225
    }

    /// The mean Y'CbCr of each colour bar the layout shows at this size (a grid of about 40 × 40 points in each).
    var barMeans: [Sample] {
        let layout = VirtualSceneLayout(width: width, height: height)
        return (0..<7).compactMap { layout.colorBar($0) }.map { region in
            var sum = Sample(y: 0, cb: 0, cr: 0)
            var count = 0.0
            for y in stride(from: region.y, to: region.y + region.height, by: max(1, region.height / 40)) {
                for x in stride(from: region.x, to: region.x + region.width, by: max(1, region.width / 40)) {
                    let pixel = sample(x: x, y: y)
                    sum.y += pixel.y
                    sum.cb = pixel.cb.map { $0 + (sum.cb ?? 0) }
                    sum.cr = pixel.cr.map { $0 + (sum.cr ?? 0) }
                    count += 1
                }
            }
            return Sample(y: sum.y / count, cb: sum.cb.map { $0 / count }, cr: sum.cr.map { $0 / count })
        }
    }

    /// The largest difference in code values between two sets of bar means (chroma where both have it).
    static func largestDifference(_ a: [Sample], _ b: [Sample]) -> Double {
        zip(a, b).map { first, second in
            var worst = abs(first.y - second.y)
            if let c1 = first.cb, let c2 = second.cb { worst = max(worst, abs(c1 - c2)) }
            if let c1 = first.cr, let c2 = second.cr { worst = max(worst, abs(c1 - c2)) }
            return worst
        }.max() ?? .infinity
    }
}
