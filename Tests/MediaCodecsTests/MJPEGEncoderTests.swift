import CTurboJPEG
import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo
import Testing

/// `MJPEGEncoder`: a webcam's MJPEG frames (JFIF 4:2:2) from YUYV, checked by TurboJPEG's header reader and by
/// decoding them back with `MJPEGDecoder`.
@Suite struct MJPEGEncoderTests {
    /// Full-range BT.601 Y'CbCr of a colour: what a JFIF decoder should give back.
    private func jfif(_ colour: RGB) -> (y: Double, cb: Double, cr: Double) {
        let r = Double(colour.red) / 255
        let g = Double(colour.green) / 255
        let b = Double(colour.blue) / 255
        let y = 0.299 * r + 0.587 * g + 0.114 * b
        return (255 * y, 128 + 255 * (b - y) / 1.772, 128 + 255 * (r - y) / 1.402)
    }

    /// A YUYV buffer of vertical bars, equally wide, each in video-range BT.709 as the virtual cameras write.
    private func makeYUYVBars(_ colours: [RGB], width: Int, height: Int) throws -> CVPixelBuffer {
        let buffer = try makeBuffer(kCVPixelFormatType_422YpCbCr8_yuvs, width: width, height: height)
        buffer.withLockedPlanes { planes in
            let plane = planes[0]
            let bytes = plane.baseAddress.assumingMemoryBound(to: UInt8.self)
            for row in 0..<height {
                for pair in 0..<(width / 2) {
                    let (y, cb, cr) = videoRangeBT709(colours[2 * pair * colours.count / width])
                    let pixel = bytes + row * plane.bytesPerRow + 4 * pair
                    // Y0 Cb Y1 Cr: both pixels of a pair lie in one bar (bars are an even number of pixels wide).
                    pixel[0] = y
                    pixel[1] = cb
                    pixel[2] = y
                    pixel[3] = cr
                }
            }
        }
        return buffer
    }

    @Test("colour bars from YUYV come back from the JPEG as JFIF's full-range BT.601, within 3 code values")
    func coloursSurviveAsJFIF() throws {
        let colours = RGB.colourBars(level: 0.75)
        let width = 32 * colours.count
        let height = 64
        let source = try makeYUYVBars(colours, width: width, height: height)
        let encoder = try MJPEGEncoder()
        let jpeg = try encoder.encode(source, matrix: .itu709) { Data($0) }
        #expect(jpeg.starts(with: [0xFF, 0xD8]))

        // TurboJPEG reads it as a baseline 4:2:2 Y'CbCr image of the same size.
        let reader = try #require(tjInitDecompress())
        defer { tjDestroy(reader) }
        var (w, h, subsampling, colourspace): (Int32, Int32, Int32, Int32) = (0, 0, 0, 0)
        let status = jpeg.withUnsafeBytes { bytes in
            tjDecompressHeader3(
                reader, bytes.bindMemory(to: UInt8.self).baseAddress, UInt(bytes.count), &w, &h, &subsampling,
                &colourspace)
        }
        #expect(status == 0)
        #expect(w == Int32(width) && h == Int32(height))
        #expect(subsampling == Int32(TJSAMP_422.rawValue))
        #expect(colourspace == Int32(TJCS_YCbCr.rawValue))

        let decoded = try MJPEGDecoder().decode(CMBlockBuffer(copying: jpeg))
        #expect(CVPixelBufferGetPixelFormatType(decoded) == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange)
        decoded.withLockedPlanes(.readOnly) { planes in
            let luma = planes[0].baseAddress.assumingMemoryBound(to: UInt8.self)
            let chroma = planes[1].baseAddress.assumingMemoryBound(to: UInt8.self)
            for (bar, colour) in colours.enumerated() {
                // The bar's centre, away from the ringing at its edges.
                let x = bar * 32 + 16
                let y = height / 2
                let expected = jfif(colour)
                let gotY = Double(luma[y * planes[0].bytesPerRow + x])
                let gotCb = Double(chroma[(y / 2) * planes[1].bytesPerRow + x])
                let gotCr = Double(chroma[(y / 2) * planes[1].bytesPerRow + x + 1])
                #expect(abs(gotY - expected.y) <= 3, "bar \(bar) \(colour): Y \(gotY), expected \(expected.y)")
                #expect(abs(gotCb - expected.cb) <= 3, "bar \(bar) \(colour): Cb \(gotCb), expected \(expected.cb)")
                #expect(abs(gotCr - expected.cr) <= 3, "bar \(bar) \(colour): Cr \(gotCr), expected \(expected.cr)")
            }
        }
    }

    @Test("the encoder reuses its buffers: the same frame twice gives the same bytes")
    func repeatableAcrossFrames() throws {
        let source = try makeYUYVBars(RGB.colourBars(level: 1), width: 320, height: 240)
        let other = try makeYUYVBars(RGB.colourBars(level: 0.5), width: 640, height: 480)
        let encoder = try MJPEGEncoder(quality: 0.9)
        let first = try encoder.encode(source, matrix: .itu709) { Data($0) }
        let larger = try encoder.encode(other, matrix: .itu709) { Data($0) }
        let again = try encoder.encode(source, matrix: .itu709) { Data($0) }
        #expect(first == again)
        #expect(larger != first)
    }

    @Test("a pixel format other than YUYV is refused with unsupportedConversion, naming it")
    func refusesOtherFormats() throws {
        let nv12 = try makeBuffer(kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, width: 64, height: 32)
        let encoder = try MJPEGEncoder()
        do {
            _ = try encoder.encode(nv12, matrix: .itu709) { $0.count }
            Issue.record("an NV12 buffer was encoded")
        } catch {
            #expect(error.kind == .unsupportedConversion)
            #expect("\(error)".contains("420v"))
        }
    }
}
