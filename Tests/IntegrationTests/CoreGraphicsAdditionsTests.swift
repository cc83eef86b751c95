// The CoreGraphics names `import AVFoundation` brings: a generator's CGImage checked against ffmpeg's decode of the
// same frame, and colour spaces named by a frame's colour attachments.

import Foundation
import OpenAVCapture
import OpenCoreMedia
import OpenCoreVideo
import TestSupport
import Testing

@Suite("CGImage from AVAssetImageGenerator, CGColorSpace from attachments", .serialized)
struct CoreGraphicsAdditionsTests {
    @Test("copyCGImage(at:actualTime:) gives the frame ffmpeg decodes at that time, as BGRA bytes")
    func copyCGImageMatchesFFmpeg() async throws {
        guard MediaTool.available(for: "CoreGraphicsAdditionsTests.copyCGImage") else { return }
        let url = try await ReaderMovies.shared.movie()
        let generator = AVAssetImageGenerator(asset: AVURLAsset(url: url))
        var actual = CMTime.invalid
        let image = try generator.copyCGImage(at: CMTime(value: 1, timescale: 1), actualTime: &actual)
        #expect(actual == CMTime(value: 1, timescale: 1), "\(actual.seconds) s")
        #expect(image.width == 640 && image.height == 480)
        #expect(image.bitsPerPixel == 32 && image.bitsPerComponent == 8)
        #expect(image.alphaInfo == .premultipliedFirst && image.bitmapInfo.contains(.byteOrder32Little))
        #expect(image.colorSpace?.model == .rgb)
        let data = try #require(image.dataProvider?.data)
        #expect(CFDataGetLength(data) == image.bytesPerRow * image.height)
        let bytes = try #require(CFDataGetBytePtr(data))

        let decoded = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-ss", "1", "-i", url.path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "bgra",
            "-",
        ])
        try #require(decoded.status == 0, "ffmpeg: \(decoded.error)")
        let reference = [UInt8](decoded.output)
        try #require(reference.count == 640 * 480 * 4)
        var difference = 0
        for row in 0..<480 {
            for column in 0..<(640 * 4) where column % 4 != 3 {
                difference += abs(Int(bytes[row * image.bytesPerRow + column]) - Int(reference[row * 640 * 4 + column]))
            }
        }
        let mean = Double(difference) / Double(640 * 480 * 3)
        // Both decode the same H.264 frame; only the YUV-to-RGB rounding of two converters differs.
        #expect(mean < 3, "mean difference \(mean) per component")
        #expect(throws: AVError.self) {
            _ = try generator.copyCGImage(at: CMTime(value: 60, timescale: 1), actualTime: nil)
        }
    }

    @Test("CVImageBufferCreateColorSpaceFromAttachments names the space the attachments describe")
    func colorSpacesFromAttachments() throws {
        func space(_ primaries: String, _ transfer: String) -> CGColorSpace? {
            CVImageBufferCreateColorSpaceFromAttachments([
                kCVImageBufferColorPrimariesKey: primaries, kCVImageBufferTransferFunctionKey: transfer,
            ])?.takeRetainedValue()
        }
        let hlg = try #require(space(kCVImageBufferColorPrimaries_ITU_R_2020, kCVImageBufferTransferFunction_ITU_R_2100_HLG))
        #expect(hlg.name == CGColorSpace.itur_2100_HLG && hlg.isHDR && hlg.isWideGamutRGB)
        #expect(space(kCVImageBufferColorPrimaries_P3_D65, kCVImageBufferTransferFunction_sRGB)?.name == CGColorSpace.displayP3)
        #expect(space(kCVImageBufferColorPrimaries_ITU_R_709_2, kCVImageBufferTransferFunction_sRGB)?.name == CGColorSpace.sRGB)
        #expect(space(kCVImageBufferColorPrimaries_ITU_R_709_2, kCVImageBufferTransferFunction_ITU_R_709_2)?.name == CGColorSpace.itur_709)
        #expect(CVImageBufferCreateColorSpaceFromAttachments([:]) == nil)
        #expect(CGColorSpace(name: "kCGColorSpaceNoSuchSpace") == nil)
        #expect(CGColorSpaceCreateDeviceRGB().model == .rgb && CGColorSpaceCreateDeviceRGB().numberOfComponents == 3)
        #expect(CGColorSpaceGetModel(CGColorSpaceCreateDeviceGray()) == .monochrome)
        #expect(CGImagePropertyOrientation(rawValue: 6) == .right)
    }
}
