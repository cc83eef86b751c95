import OpenAVCaptureTesting
import Testing

/// The frame and sound sources, read back with the readers: no device involved, so these run in parallel with
/// everything.
@Suite struct VirtualSourceAndReaderTests {
    private func nv12Buffer(
        width: Int, height: Int, format: OSType = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
    )
        throws -> CVPixelBuffer
    {
        var buffer: CVPixelBuffer?
        #expect(CVPixelBufferCreate(nil, width, height, format, nil, &buffer) == kCVReturnSuccess)
        return try #require(buffer)
    }

    @Test func renderedFramesReadBack() throws {
        let source = VirtualFrameSource(width: 640, height: 480)
        let buffer = try nv12Buffer(width: 640, height: 480)
        for index: UInt32 in [0, 1, 29, 30, 31, 12345] {
            source.render(frameIndex: index, into: buffer)
            let isFlash = index % 30 == 0
            #expect(source.isFlashFrame(index) == isFlash)
            #expect(VirtualFrameReader.isFlashFrame(buffer) == isFlash)
            #expect(VirtualFrameReader.readFrameIndex(from: buffer) == (isFlash ? nil : index))
        }
        source.render(frameIndex: 7, into: buffer)
        let time = source.presentationTime(ofFrame: 7)
        let gray = try #require(VirtualFrameReader.measureGrayPatchBrightness(in: buffer))
        #expect(abs(gray - 0.18) < 0.01)
        let size = try #require(VirtualFrameReader.measureObjectSize(in: buffer, at: time))
        #expect(abs(size - 96) < 2)
        let sharpness = try #require(VirtualFrameReader.measureFocusSharpness(in: buffer))
        #expect(sharpness > 50)
        let patch = try #require(VirtualSceneLayout(width: 640, height: 480).grayPatch)
        let chroma = try #require(VirtualFrameReader.measureMeanChroma(in: buffer, region: patch))
        #expect(abs(chroma.cb - 128) < 1 && abs(chroma.cr - 128) < 1)
    }

    @Test func aStridedRawPlaneAndYUYVReadBack() throws {
        let source = VirtualFrameSource(width: 300, height: 240)
        let nv12 = try nv12Buffer(width: 300, height: 240)
        source.render(frameIndex: 41, into: nv12)
        // The luma plane as is, with its row padding (rows are 64-byte aligned: 320 bytes for 300 pixels).
        let (bytes, bytesPerRow) = nv12.withUnsafePlane(0) { bytes, bytesPerRow in (Array(bytes), bytesPerRow) }
        #expect(bytesPerRow > 300)
        bytes.withUnsafeBufferPointer { luma in
            #expect(
                VirtualFrameReader.readFrameIndex(fromLuma: luma, width: 300, height: 240, bytesPerRow: bytesPerRow)
                    == 41)
            #expect(!VirtualFrameReader.isFlashFrame(luma: luma, width: 300, height: 240, bytesPerRow: bytesPerRow))
        }
        let yuyv = try nv12Buffer(width: 300, height: 240, format: kCVPixelFormatType_422YpCbCr8_yuvs)
        source.render(frameIndex: 41, into: yuyv)
        #expect(VirtualFrameReader.readFrameIndex(from: yuyv) == 41)
        #expect(
            VirtualFrameReader.measureMeanChroma(in: yuyv, region: VirtualFrameRegion(x: 0, y: 0, width: 2, height: 2))
                == nil)
    }

    @Test func renderedSoundHasBeepsAtWholeSeconds() {
        let source = VirtualSoundSource(channelCount: 2)
        let frames = 96_000 + 9_600
        var floats = [Float](repeating: 0, count: frames * 2)
        var ints = [Int16](repeating: 0, count: frames * 2)
        // From 0.9 s: beeps at 1, 2 and 3 s are 0.1, 1.1 and 2.1 s in.
        floats.withUnsafeMutableBufferPointer { source.render(startingAt: 43_200, frameCount: frames, into: $0) }
        ints.withUnsafeMutableBufferPointer { source.render(startingAt: 43_200, frameCount: frames, into: $0) }
        for beeps in [
            VirtualAudioReader.findBeeps(samples: floats, sampleRate: 48_000, channels: 2),
            VirtualAudioReader.findBeeps(samples: ints, sampleRate: 48_000, channels: 2),
        ] {
            #expect(beeps.count == 3)
            for (beep, expected) in zip(beeps, [0.1, 1.1, 2.1]) { #expect(abs(beep - expected) < 0.000_05) }
        }
        #expect(abs(VirtualAudioReader.peakLevel(samples: floats) - -6) < 0.01)
        #expect(abs(VirtualAudioReader.peakLevel(samples: ints) - -6) < 0.01)
    }
}
