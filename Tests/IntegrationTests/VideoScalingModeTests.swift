// AVVideoScalingModeKey: 640x360 pictures (a dark band at the left quarter) written into other sizes with each
// mode; ffmpeg decodes the movie and the bars, the crop and the encoded size are measured in its pixels.

import Foundation
import OpenAVCapture
import OpenCoreMedia
import OpenCoreVideo
import TestSupport
import Testing

@Suite("AVVideoScalingModeKey: Fit, Resize, ResizeAspect, ResizeAspectFill", .serialized)
struct VideoScalingModeTests {
    /// Writes three 640x360 NV12 pictures (luma 40 left of x = 160, 200 elsewhere) into `width`×`height` with
    /// `mode` (nil: the key absent); returns the movie.
    static func write(mode: String?, width: Int, height: Int) async throws -> URL {
        let url = try scratchURL("scaling-\(mode ?? "none")-\(width)x\(height).mov", suite: "scaling-mode-tests")
        let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
        var settings: [String: Any] = [
            AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: width, AVVideoHeightKey: height,
        ]
        if let mode { settings[AVVideoScalingModeKey] = mode }
        let input = AVAssetWriterInput(mediaType: .video, outputSettings: settings)
        input.expectsMediaDataInRealTime = false
        let adaptor = AVAssetWriterInputPixelBufferAdaptor(
            assetWriterInput: input,
            sourcePixelBufferAttributes: [
                kCVPixelBufferPixelFormatTypeKey as String: Int(kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange),
                kCVPixelBufferWidthKey as String: 640, kCVPixelBufferHeightKey as String: 360,
            ])
        writer.add(input)
        #expect(writer.startWriting(), "\(String(describing: writer.error))")
        writer.startSession(atSourceTime: .zero)
        for index in 0..<3 {
            var made: CVPixelBuffer?
            CVPixelBufferCreate(nil, 640, 360, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &made)
            let picture = try #require(made)
            CVPixelBufferLockBaseAddress(picture, [])
            let luma = CVPixelBufferGetBaseAddressOfPlane(picture, 0)!.assumingMemoryBound(to: UInt8.self)
            let lumaStride = CVPixelBufferGetBytesPerRowOfPlane(picture, 0)
            for y in 0..<360 {
                for x in 0..<640 { luma[y * lumaStride + x] = x < 160 ? 40 : 200 }
            }
            let chroma = CVPixelBufferGetBaseAddressOfPlane(picture, 1)!.assumingMemoryBound(to: UInt8.self)
            memset(chroma, 128, CVPixelBufferGetBytesPerRowOfPlane(picture, 1) * 180)
            CVPixelBufferUnlockBaseAddress(picture, [])
            waitUntilReady(input)
            #expect(adaptor.append(picture, withPresentationTime: CMTime(value: CMTimeValue(index), timescale: 30)))
        }
        input.markAsFinished()
        await writer.finishWriting()
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        return url
    }

    /// The first frame, decoded by ffmpeg to full-range grey: its size and pixels.
    static func firstFrame(_ url: URL) throws -> (width: Int, height: Int, gray: [UInt8]) {
        let video = try #require(try FFprobeReport(url).stream("video"))
        let width = try #require(video["width"] as? Int)
        let height = try #require(video["height"] as? Int)
        let decoded = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-i", url.path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "-",
        ])
        try #require(decoded.status == 0 && decoded.output.count == width * height, "ffmpeg: \(decoded.error)")
        return (width, height, [UInt8](decoded.output))
    }

    /// Columns of the middle row darker than the bright part and lighter than black: the band.
    static func bandColumns(_ frame: (width: Int, height: Int, gray: [UInt8])) -> Int {
        let row = frame.height / 2
        return (0..<frame.width).filter { (12...120).contains(frame.gray[row * frame.width + $0]) }.count
    }

    /// Black rows (under 10) of the column at x = 3/4 of the width (bright in the picture).
    static func blackRows(_ frame: (width: Int, height: Int, gray: [UInt8])) -> Int {
        let column = frame.width * 3 / 4
        return (0..<frame.height).filter { frame.gray[$0 * frame.width + column] < 10 }.count
    }

    @Test("Resize (and no key) stretches: 320x320, the band a quarter of the width, no bars")
    func resize() async throws {
        guard MediaTool.available(for: "VideoScalingModeTests.resize") else { return }
        for mode in [AVVideoScalingModeResize, nil] {
            let frame = try Self.firstFrame(try await Self.write(mode: mode, width: 320, height: 320))
            #expect(frame.width == 320 && frame.height == 320)
            #expect(abs(Self.bandColumns(frame) - 80) <= 2, "\(Self.bandColumns(frame)) band columns")
            #expect(Self.blackRows(frame) == 0)
        }
    }

    @Test("ResizeAspect: 320x320 with the picture 320x180 in the middle, black bars of 70 rows above and below")
    func resizeAspect() async throws {
        guard MediaTool.available(for: "VideoScalingModeTests.resizeAspect") else { return }
        let frame = try Self.firstFrame(
            try await Self.write(mode: AVVideoScalingModeResizeAspect, width: 320, height: 320))
        #expect(frame.width == 320 && frame.height == 320)
        #expect(abs(Self.blackRows(frame) - 140) <= 3, "\(Self.blackRows(frame)) black rows")
        // The bars are split evenly: the top 68 rows and the bottom 68 are black.
        let column = 240
        #expect((0..<68).allSatisfy { frame.gray[$0 * 320 + column] < 10 })
        #expect((252..<320).allSatisfy { frame.gray[$0 * 320 + column] < 10 })
        #expect(abs(Self.bandColumns(frame) - 80) <= 2, "\(Self.bandColumns(frame)) band columns")
    }

    @Test("ResizeAspectFill: 320x320 cropped from the centre: the band mostly cut off, no bars")
    func resizeAspectFill() async throws {
        guard MediaTool.available(for: "VideoScalingModeTests.resizeAspectFill") else { return }
        let frame = try Self.firstFrame(
            try await Self.write(mode: AVVideoScalingModeResizeAspectFill, width: 320, height: 320))
        #expect(frame.width == 320 && frame.height == 320)
        #expect(Self.blackRows(frame) == 0)
        // Scaled by 320/360 to 568x320 and cropped 124 px from each side: the band's 160 px become 142, 18 shown.
        #expect(abs(Self.bandColumns(frame) - 18) <= 3, "\(Self.bandColumns(frame)) band columns")
    }

    @Test("Fit: the encoded size keeps the source's aspect within the size asked, and never grows")
    func fit() async throws {
        guard MediaTool.available(for: "VideoScalingModeTests.fit") else { return }
        let smaller = try Self.firstFrame(try await Self.write(mode: AVVideoScalingModeFit, width: 320, height: 320))
        #expect(smaller.width == 320 && smaller.height == 180)
        #expect(abs(Self.bandColumns(smaller) - 80) <= 2 && Self.blackRows(smaller) == 0)
        let larger = try Self.firstFrame(try await Self.write(mode: AVVideoScalingModeFit, width: 1280, height: 1280))
        #expect(larger.width == 640 && larger.height == 360)
        #expect(abs(Self.bandColumns(larger) - 160) <= 2)
    }
}
