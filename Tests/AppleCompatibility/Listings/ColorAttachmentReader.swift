// Reading a frame's colour attachments to pick the right conversion matrix (video filters and encoders).
import OpenAVCaptureShim

enum ColorAttachmentReader {
    enum Matrix {
        case bt601, bt709, bt2020, unknown
    }

    static func matrix(of pixelBuffer: CVPixelBuffer) -> Matrix {
        guard let value = CVBufferCopyAttachment(pixelBuffer, kCVImageBufferYCbCrMatrixKey, nil) else { return .unknown }
        let matrix = value as! CFString
        if matrix == kCVImageBufferYCbCrMatrix_ITU_R_709_2 { return .bt709 }
        if matrix == kCVImageBufferYCbCrMatrix_ITU_R_601_4 { return .bt601 }
        if matrix == kCVImageBufferYCbCrMatrix_ITU_R_2020 { return .bt2020 }
        return .unknown
    }

    static func isHDR(_ pixelBuffer: CVPixelBuffer) -> Bool {
        guard let transfer = CVBufferCopyAttachment(pixelBuffer, kCVImageBufferTransferFunctionKey, nil) else {
            return false
        }
        let name = transfer as! CFString
        return name == kCVImageBufferTransferFunction_SMPTE_ST_2084_PQ || name == kCVImageBufferTransferFunction_ITU_R_2100_HLG
    }

    static func tagAsRec709(_ pixelBuffer: CVPixelBuffer) {
        CVBufferSetAttachment(
            pixelBuffer, kCVImageBufferColorPrimariesKey, kCVImageBufferColorPrimaries_ITU_R_709_2, .shouldPropagate)
        CVBufferSetAttachment(
            pixelBuffer, kCVImageBufferTransferFunctionKey, kCVImageBufferTransferFunction_ITU_R_709_2,
            .shouldPropagate)
        CVBufferSetAttachment(
            pixelBuffer, kCVImageBufferYCbCrMatrixKey, kCVImageBufferYCbCrMatrix_ITU_R_709_2, .shouldPropagate)
    }

    static func propagatedRec709() -> [String: Any] {
        [
            kCVBufferPropagatedAttachmentsKey as String: [
                kCVImageBufferColorPrimariesKey as String: kCVImageBufferColorPrimaries_ITU_R_709_2,
                kCVImageBufferYCbCrMatrixKey as String: kCVImageBufferYCbCrMatrix_ITU_R_709_2,
            ]
        ]
    }
}
