// kCVBufferPropagatedAttachmentsKey / kCVBufferNonPropagatedAttachmentsKey in pixel buffer attributes become the
// new buffers' attachments, in those modes, as Apple's CoreVideo does.

import Foundation
import OpenCoreVideo
import Testing

@Suite struct PixelBufferAttributeAttachmentsTests {
    static var attributes: CFDictionary {
        [
            kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
            kCVPixelBufferWidthKey: 64, kCVPixelBufferHeightKey: 48,
            kCVBufferPropagatedAttachmentsKey: [
                kCVImageBufferColorPrimariesKey: kCVImageBufferColorPrimaries_ITU_R_709_2,
                kCVImageBufferTransferFunctionKey: kCVImageBufferTransferFunction_ITU_R_709_2,
                kCVImageBufferYCbCrMatrixKey: kCVImageBufferYCbCrMatrix_ITU_R_709_2,
            ] as [String: Any],
            kCVBufferNonPropagatedAttachmentsKey: ["Frame": "first"] as [String: Any],
        ]
    }

    private func check(_ buffer: CVPixelBuffer) {
        let propagated = (CVBufferCopyAttachments(buffer, .shouldPropagate) ?? [:]).compactMapValues { $0 as? String }
        #expect(
            propagated == [
                kCVImageBufferColorPrimariesKey: kCVImageBufferColorPrimaries_ITU_R_709_2,
                kCVImageBufferTransferFunctionKey: kCVImageBufferTransferFunction_ITU_R_709_2,
                kCVImageBufferYCbCrMatrixKey: kCVImageBufferYCbCrMatrix_ITU_R_709_2,
            ])
        let kept = (CVBufferCopyAttachments(buffer, .shouldNotPropagate) ?? [:]).compactMapValues { $0 as? String }
        #expect(kept == ["Frame": "first"])
        // Only the propagated ones travel to another buffer.
        var other: CVPixelBuffer?
        #expect(CVPixelBufferCreate(nil, 64, 48, kCVPixelFormatType_32BGRA, nil, &other) == kCVReturnSuccess)
        let destination = other!
        CVBufferPropagateAttachments(buffer, destination)
        #expect(CVBufferCopyAttachments(destination, .shouldPropagate)?.count == 3)
        #expect(CVBufferCopyAttachment(destination, "Frame" as CFString, nil) == nil)
    }

    @Test func createAttachesTheAttributesAttachments() throws {
        var buffer: CVPixelBuffer?
        #expect(
            CVPixelBufferCreate(nil, 64, 48, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, Self.attributes, &buffer)
                == kCVReturnSuccess)
        check(try #require(buffer))
    }

    @Test func createWithBytesAndPoolsAttachThemToo() throws {
        let memory = UnsafeMutableRawPointer.allocate(byteCount: 64 * 4 * 48, alignment: 64)
        defer { memory.deallocate() }
        var wrapped: CVPixelBuffer?
        #expect(
            CVPixelBufferCreateWithBytes(
                nil, 64, 48, kCVPixelFormatType_32BGRA, memory, 256, nil, nil, Self.attributes, &wrapped)
                == kCVReturnSuccess)
        check(try #require(wrapped))
        var pool: CVPixelBufferPool?
        #expect(CVPixelBufferPoolCreate(nil, nil, Self.attributes, &pool) == kCVReturnSuccess)
        var pooled: CVPixelBuffer?
        #expect(CVPixelBufferPoolCreatePixelBuffer(nil, try #require(pool), &pooled) == kCVReturnSuccess)
        check(try #require(pooled))
    }

    @Test func attachmentsAsNSDictionaryAreAccepted() throws {
        let attributes: NSDictionary = [
            kCVBufferPropagatedAttachmentsKey: NSDictionary(dictionary: [
                kCVImageBufferYCbCrMatrixKey: kCVImageBufferYCbCrMatrix_ITU_R_601_4
            ])
        ]
        var buffer: CVPixelBuffer?
        #expect(CVPixelBufferCreate(nil, 16, 16, kCVPixelFormatType_32BGRA, attributes, &buffer) == kCVReturnSuccess)
        let matrix = CVBufferCopyAttachment(try #require(buffer), kCVImageBufferYCbCrMatrixKey, nil) as? String
        #expect(matrix == kCVImageBufferYCbCrMatrix_ITU_R_601_4)
    }

    @Test func attachmentsThatAreNotADictionaryAreMalformed() {
        var buffer: CVPixelBuffer?
        let status = CVPixelBufferCreate(
            nil, 16, 16, kCVPixelFormatType_32BGRA, [kCVBufferPropagatedAttachmentsKey: "709"], &buffer)
        #expect(status == kCVReturnInvalidPixelBufferAttributes)
        #expect(buffer == nil)
    }
}
