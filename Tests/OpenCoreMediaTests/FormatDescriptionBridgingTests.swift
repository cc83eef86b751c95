import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Testing

/// Format descriptions made and read with `NSDictionary`s, as Apple's toll-free bridging lets code do, and their
/// extension values used as objects (`AnyObject`, `NSNumber`, `NSString`) as on Apple's platforms (issue 37).
@Suite struct FormatDescriptionBridgingTests {
    @Test func extensionsGivenAsNSDictionaryAreKeptAndReadAsObjects() throws {
        let extensions = NSMutableDictionary()
        extensions[kCMFormatDescriptionExtension_ColorPrimaries] = kCVImageBufferColorPrimaries_P3_D65
        extensions[kCMFormatDescriptionExtension_GammaLevel] = 2.2
        var made: CMVideoFormatDescription?
        let status = CMVideoFormatDescriptionCreate(
            allocator: nil, codecType: kCVPixelFormatType_32BGRA, width: 64, height: 48, extensions: extensions,
            formatDescriptionOut: &made)
        #expect(status == noErr)
        let description = try #require(made)
        let read = try #require(CMFormatDescriptionGetExtensions(description) as NSDictionary?)
        #expect(read[kCMFormatDescriptionExtension_ColorPrimaries] as? String == kCVImageBufferColorPrimaries_P3_D65)
        let gamma: AnyObject = try #require(read[kCMFormatDescriptionExtension_GammaLevel] as AnyObject?)
        #expect((gamma as? NSNumber)?.doubleValue == 2.2)
        let primaries: AnyObject = try #require(read[kCMFormatDescriptionExtension_ColorPrimaries] as AnyObject?)
        #expect((primaries as? NSString).map(String.init) == kCVImageBufferColorPrimaries_P3_D65)
        let asObjects = try #require(CMFormatDescriptionGetExtensions(description) as? [String: AnyObject])
        #expect(asObjects.count == 2)
    }

    @Test func attachmentsGivenAsNSDictionaryAreSet() throws {
        var made: CMVideoFormatDescription?
        CMVideoFormatDescriptionCreate(
            allocator: nil, codecType: kCVPixelFormatType_32BGRA, width: 64, height: 48, extensions: nil,
            formatDescriptionOut: &made)
        var sample: CMSampleBuffer?
        var timing = CMSampleTimingInfo(duration: .invalid, presentationTimeStamp: .zero, decodeTimeStamp: .invalid)
        CMSampleBufferCreate(
            allocator: nil, dataBuffer: nil, dataReady: true, makeDataReadyCallback: nil, refcon: nil,
            formatDescription: made, sampleCount: 0, sampleTimingEntryCount: 1, sampleTimingArray: &timing,
            sampleSizeEntryCount: 0, sampleSizeArray: nil, sampleBufferOut: &sample)
        let buffer = try #require(sample)
        let note: NSDictionary = ["Reason": "test"]
        CMSetAttachments(buffer, attachments: note, attachmentMode: kCMAttachmentMode_ShouldPropagate)
        #expect(CMGetAttachment(buffer, key: "Reason", attachmentModeOut: nil) as? String == "test")
    }
}
