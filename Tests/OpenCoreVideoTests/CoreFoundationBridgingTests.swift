import Foundation
import OpenCoreVideo
import Testing

/// `CFNumber` and attributes passed as `NSDictionary`, as Apple's toll-free bridging lets capture code write them
/// (issue 21).
@Suite struct CoreFoundationBridgingTests {
    @Test func pixelBufferAttributesGivenAsNSDictionaryAreHonoured() throws {
        let attributes: [String: Any] = [
            kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA as CFNumber,
            kCVPixelBufferBytesPerRowAlignmentKey as String: 256 as CFNumber,
        ]
        var buffer: CVPixelBuffer?
        let status = CVPixelBufferCreate(
            kCFAllocatorDefault, 100, 20, kCVPixelFormatType_32BGRA, attributes as NSDictionary, &buffer)
        #expect(status == kCVReturnSuccess)
        let image = try #require(buffer)
        #expect(CVPixelBufferGetPixelFormatType(image) == kCVPixelFormatType_32BGRA)
        #expect(CVPixelBufferGetBytesPerRow(image) % 256 == 0)
        #expect(CVPixelBufferGetBytesPerRow(image) >= 400)
    }

    @Test func poolAttributesGivenAsNSDictionaryAreHonoured() throws {
        let pixelAttributes: NSDictionary = [
            kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange as CFNumber,
            kCVPixelBufferWidthKey as String: 320 as CFNumber,
            kCVPixelBufferHeightKey as String: 240 as CFNumber,
        ]
        let poolAttributes: NSDictionary = [kCVPixelBufferPoolMinimumBufferCountKey as String: 2 as CFNumber]
        var pool: CVPixelBufferPool?
        #expect(CVPixelBufferPoolCreate(nil, poolAttributes, pixelAttributes, &pool) == kCVReturnSuccess)
        var buffer: CVPixelBuffer?
        #expect(CVPixelBufferPoolCreatePixelBuffer(nil, try #require(pool), &buffer) == kCVReturnSuccess)
        let image = try #require(buffer)
        #expect(CVPixelBufferGetWidth(image) == 320 && CVPixelBufferGetHeight(image) == 240)
        #expect(CVPixelBufferGetPixelFormatType(image) == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
    }

    @Test func aMissingAttributeDictionaryStillPicksTheSwiftOverload() {
        var buffer: CVPixelBuffer?
        #expect(CVPixelBufferCreate(nil, 8, 8, kCVPixelFormatType_OneComponent8, nil, &buffer) == kCVReturnSuccess)
    }
}
