import OpenCoreMedia
import OpenCoreVideo

/// The matrix as Apple's APIs carry it: a pixel buffer's `kCVImageBufferYCbCrMatrixKey` attachment and a video
/// description's `kCMFormatDescriptionExtension_YCbCrMatrix` (the same key and values). Decoders set it, converters
/// and encoders read it, so every consumer reads a frame's numbers as they were made.
extension YCbCrMatrix {
    /// The matrix an attachment or extension value names (`kCVImageBufferYCbCrMatrix_…`), or nil when it names none
    /// (or one libswscale lacks).
    package init?(attachmentValue value: Any?) {
        switch value as? String {
        case kCVImageBufferYCbCrMatrix_ITU_R_709_2: self = .itu709
        case kCVImageBufferYCbCrMatrix_ITU_R_601_4: self = .itu601
        case kCVImageBufferYCbCrMatrix_ITU_R_2020: self = .itu2020
        default: return nil
        }
    }

    /// The `kCVImageBufferYCbCrMatrix_…` value that names this matrix.
    package var attachmentValue: String {
        switch self {
        case .itu601: kCVImageBufferYCbCrMatrix_ITU_R_601_4
        case .itu709: kCVImageBufferYCbCrMatrix_ITU_R_709_2
        case .itu2020: kCVImageBufferYCbCrMatrix_ITU_R_2020
        }
    }

    /// The matrix a buffer's ``kCVImageBufferYCbCrMatrixKey`` attachment names, or nil.
    package init?(attachedTo buffer: CVPixelBuffer) {
        self.init(attachmentValue: CVBufferCopyAttachment(buffer, kCVImageBufferYCbCrMatrixKey, nil))
    }

    /// The matrix of `buffer`'s Y'CbCr numbers: its attachment, or BT.709 when it has none (the virtual cameras
    /// encode BT.709 at every size, and so do HD cameras).
    package static func of(_ buffer: CVPixelBuffer) -> YCbCrMatrix { YCbCrMatrix(attachedTo: buffer) ?? .itu709 }

    /// The matrix of a video format description (its ``kCMFormatDescriptionExtension_YCbCrMatrix``), or nil.
    package init?(formatDescription: CMFormatDescription) {
        self.init(attachmentValue: formatDescription.extensions[kCMFormatDescriptionExtension_YCbCrMatrix])
    }

    /// Marks `buffer`'s numbers as made with this matrix (a propagating attachment, as Apple's decoders set).
    package func attach(to buffer: CVPixelBuffer) {
        if YCbCrMatrix(attachedTo: buffer) != self {
            CVBufferSetAttachment(buffer, kCVImageBufferYCbCrMatrixKey, attachmentValue, .shouldPropagate)
        }
    }
}
