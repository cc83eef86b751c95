import Foundation
import OpenCoreVideo
import Testing

/// The rest of the CoreVideo functions that take a CFDictionary, given an `NSDictionary` as Apple's toll-free
/// bridging allows, and `CVBufferGetAttachments`/`CVBufferSetAttachments` (issue 37).
@Suite struct NSDictionaryArgumentTests {
    private func pool(width: Int = 64, height: Int = 48) throws -> CVPixelBufferPool {
        let attributes: NSDictionary = [
            kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA, kCVPixelBufferWidthKey: width,
            kCVPixelBufferHeightKey: height,
        ]
        var pool: CVPixelBufferPool?
        try #require(CVPixelBufferPoolCreate(nil, nil, attributes, &pool) == kCVReturnSuccess)
        return try #require(pool)
    }

    @Test func auxAttributesAsNSDictionaryBoundThePool() throws {
        let pool = try pool()
        let threshold: NSDictionary = [kCVPixelBufferPoolAllocationThresholdKey: 2]
        var held: [CVPixelBuffer] = []
        for _ in 0..<2 {
            var buffer: CVPixelBuffer?
            #expect(CVPixelBufferPoolCreatePixelBufferWithAuxAttributes(nil, pool, threshold, &buffer) == kCVReturnSuccess)
            held.append(try #require(buffer))
        }
        var third: CVPixelBuffer?
        #expect(
            CVPixelBufferPoolCreatePixelBufferWithAuxAttributes(nil, pool, threshold, &third)
                == kCVReturnWouldExceedAllocationThreshold)
        #expect(third == nil)
        held.removeAll()
        #expect(CVPixelBufferPoolCreatePixelBufferWithAuxAttributes(nil, pool, threshold, &third) == kCVReturnSuccess)
    }

    @Test func wrappedBytesTakeAttributesAsNSDictionary() throws {
        let bytes = UnsafeMutableRawPointer.allocate(byteCount: 16 * 4 * 4, alignment: 64)
        defer { bytes.deallocate() }
        let attributes: NSDictionary = [
            kCVBufferPropagatedAttachmentsKey: [kCVImageBufferYCbCrMatrixKey: kCVImageBufferYCbCrMatrix_ITU_R_601_4]
        ]
        var buffer: CVPixelBuffer?
        let status = CVPixelBufferCreateWithBytes(
            nil, 16, 4, kCVPixelFormatType_32BGRA, bytes, 64, nil, nil, attributes, &buffer)
        #expect(status == kCVReturnSuccess)
        let image = try #require(buffer)
        #expect(CVBufferCopyAttachment(image, kCVImageBufferYCbCrMatrixKey, nil) as? String == kCVImageBufferYCbCrMatrix_ITU_R_601_4)
    }

    @Test func setAttachmentsSetsEachEntryWithItsModeAndGetAttachmentsReadsThem() throws {
        var created: CVPixelBuffer?
        CVPixelBufferPoolCreatePixelBuffer(nil, try pool(), &created)
        let buffer = try #require(created)
        #expect(CVBufferGetAttachments(buffer, .shouldPropagate)?.isEmpty == true, "empty, not nil, as Apple's")
        let colour: NSDictionary = [
            kCVImageBufferYCbCrMatrixKey: kCVImageBufferYCbCrMatrix_ITU_R_709_2,
            kCVImageBufferColorPrimariesKey: kCVImageBufferColorPrimaries_ITU_R_709_2,
        ]
        CVBufferSetAttachments(buffer, colour, .shouldPropagate)
        CVBufferSetAttachments(buffer, ["Note": "kept here"], .shouldNotPropagate)
        let propagated = try #require(CVBufferGetAttachments(buffer, .shouldPropagate))
        #expect(propagated.count == 2)
        #expect(propagated[kCVImageBufferColorPrimariesKey] as? String == kCVImageBufferColorPrimaries_ITU_R_709_2)
        #expect(CVBufferGetAttachments(buffer, .shouldNotPropagate)?["Note"] as? String == "kept here")
        var copy: CVPixelBuffer?
        CVPixelBufferPoolCreatePixelBuffer(nil, try pool(), &copy)
        let destination = try #require(copy)
        CVBufferPropagateAttachments(buffer, destination)
        #expect(CVBufferCopyAttachments(destination, .shouldPropagate)?.count == 2)
        #expect(CVBufferCopyAttachment(destination, "Note", nil) == nil)
    }
}
