import Foundation
import OpenCoreMedia
import Testing

/// The output presentation time and presentation dimensions that players and trimming code read (issue 21).
@Suite struct CMOutputTimingTests {
    private func frame(at seconds: Int64) throws -> CMSampleBuffer {
        var pixels: CVPixelBuffer?
        _ = CVPixelBufferCreate(nil, 64, 48, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &pixels)
        let image = try #require(pixels)
        let format = try CMVideoFormatDescription(imageBuffer: image)
        return try CMSampleBuffer(
            imageBuffer: image, formatDescription: format,
            sampleTiming: CMSampleTimingInfo(
                duration: CMTime(value: 1, timescale: 30), presentationTimeStamp: CMTime(value: seconds, timescale: 1),
                decodeTimeStamp: .invalid))
    }

    @Test func outputPresentationTimeDefaultsToThePresentationTimeAndCanBeSet() throws {
        let buffer = try frame(at: 7)
        #expect(CMSampleBufferGetOutputPresentationTimeStamp(buffer) == CMTime(value: 7, timescale: 1))
        #expect(CMSampleBufferSetOutputPresentationTimeStamp(buffer, newValue: CMTime(value: 2, timescale: 1)) == noErr)
        #expect(CMSampleBufferGetOutputPresentationTimeStamp(buffer) == CMTime(value: 2, timescale: 1))
        #expect(buffer.outputPresentationTimeStamp == CMTime(value: 2, timescale: 1))
        #expect(CMSampleBufferGetPresentationTimeStamp(buffer) == CMTime(value: 7, timescale: 1))
        buffer.outputPresentationTimeStamp = CMTime(value: 3, timescale: 1)
        #expect(CMSampleBufferGetOutputPresentationTimeStamp(buffer) == CMTime(value: 3, timescale: 1))
    }

    @Test func presentationDimensionsAreTheEncodedSizeForSquarePixels() throws {
        let description = try CMFormatDescription(
            videoCodecType: .init(rawValue: kCVPixelFormatType_32BGRA), width: 1920, height: 1080)
        for (aspect, aperture) in [(false, false), (true, false), (true, true)] {
            #expect(
                CMVideoFormatDescriptionGetPresentationDimensions(
                    description, usePixelAspectRatio: aspect, useCleanAperture: aperture)
                    == CGSize(width: 1920, height: 1080))
        }
    }
}
