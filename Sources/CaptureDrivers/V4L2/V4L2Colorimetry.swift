import CLinuxMedia
import OpenCoreVideo

/// What colour a V4L2 format's numbers are, as VIDIOC_S_FMT reports it (`colorspace`, `xfer_func`, `ycbcr_enc`,
/// `quantization` of `v4l2_pix_format` or `v4l2_pix_format_mplane`), and the CoreVideo attachments that say the same:
/// primaries, transfer function and Y'CbCr matrix, set on every pixel buffer the camera delivers.
///
/// `…_DEFAULT` fields follow from the colorspace as the kernel's `V4L2_MAP_*_DEFAULT` macros define; a colorspace of
/// `V4L2_COLORSPACE_DEFAULT` (a driver that says nothing) yields no attachments, so the graph keeps choosing by size.
/// The range (`quantization`) has no attachment in Apple's API, whose pixel formats carry it (`'420v'` or `'420f'`):
/// ``isFullRange`` chooses the pixel format the frames are delivered in (`V4L2PixelFormat.mediaSubType(fullRange:)`).
///
/// Value type; safe to use from any thread.
package struct V4L2Colorimetry: Sendable, Hashable {
    package var colorspace: UInt32
    package var transferFunction: UInt32
    package var yCbCrEncoding: UInt32
    package var quantization: UInt32

    package init(colorspace: UInt32 = 0, transferFunction: UInt32 = 0, yCbCrEncoding: UInt32 = 0, quantization: UInt32 = 0) {
        self.colorspace = colorspace
        self.transferFunction = transferFunction
        self.yCbCrEncoding = yCbCrEncoding
        self.quantization = quantization
    }

    /// The primaries (`kCVImageBufferColorPrimaries_…`), or nil when the driver did not say.
    package var colorPrimaries: CFString? {
        switch colorspace {
        case V4L2_COLORSPACE_REC709.rawValue, V4L2_COLORSPACE_SRGB.rawValue, V4L2_COLORSPACE_JPEG.rawValue:
            kCVImageBufferColorPrimaries_ITU_R_709_2
        case V4L2_COLORSPACE_SMPTE170M.rawValue, V4L2_COLORSPACE_SMPTE240M.rawValue,
            V4L2_COLORSPACE_470_SYSTEM_M.rawValue, V4L2_COLORSPACE_BT878.rawValue:
            kCVImageBufferColorPrimaries_SMPTE_C
        case V4L2_COLORSPACE_470_SYSTEM_BG.rawValue: kCVImageBufferColorPrimaries_EBU_3213
        case V4L2_COLORSPACE_BT2020.rawValue: kCVImageBufferColorPrimaries_ITU_R_2020
        case V4L2_COLORSPACE_DCI_P3.rawValue: kCVImageBufferColorPrimaries_DCI_P3
        default: nil
        }
    }

    /// The transfer function given, or the colorspace's default (`V4L2_MAP_XFER_FUNC_DEFAULT`); nil when neither
    /// says, or for curves Apple has no name for (opRGB).
    package var transferFunctionValue: CFString? {
        var function = transferFunction
        if function == V4L2_XFER_FUNC_DEFAULT.rawValue {
            switch colorspace {
            case V4L2_COLORSPACE_SRGB.rawValue, V4L2_COLORSPACE_JPEG.rawValue: function = V4L2_XFER_FUNC_SRGB.rawValue
            case V4L2_COLORSPACE_SMPTE240M.rawValue: function = V4L2_XFER_FUNC_SMPTE240M.rawValue
            case V4L2_COLORSPACE_DCI_P3.rawValue: function = V4L2_XFER_FUNC_DCI_P3.rawValue
            case V4L2_COLORSPACE_RAW.rawValue: function = V4L2_XFER_FUNC_NONE.rawValue
            case V4L2_COLORSPACE_DEFAULT.rawValue: return nil
            default: function = V4L2_XFER_FUNC_709.rawValue
            }
        }
        switch function {
        case V4L2_XFER_FUNC_709.rawValue:
            return colorspace == V4L2_COLORSPACE_BT2020.rawValue
                ? kCVImageBufferTransferFunction_ITU_R_2020 : kCVImageBufferTransferFunction_ITU_R_709_2
        case V4L2_XFER_FUNC_SRGB.rawValue: return kCVImageBufferTransferFunction_sRGB
        case V4L2_XFER_FUNC_SMPTE240M.rawValue: return kCVImageBufferTransferFunction_SMPTE_240M_1995
        case V4L2_XFER_FUNC_NONE.rawValue: return kCVImageBufferTransferFunction_Linear
        case V4L2_XFER_FUNC_DCI_P3.rawValue: return kCVImageBufferTransferFunction_UseGamma
        case V4L2_XFER_FUNC_SMPTE2084.rawValue: return kCVImageBufferTransferFunction_SMPTE_ST_2084_PQ
        default: return nil
        }
    }

    /// The Y'CbCr matrix given, or the colorspace's default (`V4L2_MAP_YCBCR_ENC_DEFAULT`); nil when neither says.
    package var yCbCrMatrix: CFString? {
        var encoding = yCbCrEncoding
        if encoding == V4L2_YCBCR_ENC_DEFAULT.rawValue {
            switch colorspace {
            case V4L2_COLORSPACE_REC709.rawValue, V4L2_COLORSPACE_DCI_P3.rawValue: encoding = V4L2_YCBCR_ENC_709.rawValue
            case V4L2_COLORSPACE_BT2020.rawValue: encoding = V4L2_YCBCR_ENC_BT2020.rawValue
            case V4L2_COLORSPACE_SMPTE240M.rawValue: encoding = V4L2_YCBCR_ENC_SMPTE240M.rawValue
            case V4L2_COLORSPACE_DEFAULT.rawValue, V4L2_COLORSPACE_RAW.rawValue: return nil
            default: encoding = V4L2_YCBCR_ENC_601.rawValue
            }
        }
        switch encoding {
        case V4L2_YCBCR_ENC_601.rawValue, V4L2_YCBCR_ENC_XV601.rawValue: return kCVImageBufferYCbCrMatrix_ITU_R_601_4
        case V4L2_YCBCR_ENC_709.rawValue, V4L2_YCBCR_ENC_XV709.rawValue: return kCVImageBufferYCbCrMatrix_ITU_R_709_2
        // Apple has no constant-luminance BT.2020 matrix; the non-constant one is the nearest.
        case V4L2_YCBCR_ENC_BT2020.rawValue, V4L2_YCBCR_ENC_BT2020_CONST_LUM.rawValue:
            return kCVImageBufferYCbCrMatrix_ITU_R_2020
        case V4L2_YCBCR_ENC_SMPTE240M.rawValue: return kCVImageBufferYCbCrMatrix_SMPTE_240M_1995
        default: return nil
        }
    }

    /// Whether the Y'CbCr samples use the full range (0–255) rather than the video range (16–235/240): the
    /// `quantization` given, or the colorspace's default (`V4L2_MAP_QUANTIZATION_DEFAULT` for Y'CbCr: full for
    /// `V4L2_COLORSPACE_JPEG`, limited otherwise, and limited when the driver says nothing).
    package var isFullRange: Bool {
        switch quantization {
        case V4L2_QUANTIZATION_FULL_RANGE.rawValue: true
        case V4L2_QUANTIZATION_LIM_RANGE.rawValue: false
        default: colorspace == V4L2_COLORSPACE_JPEG.rawValue
        }
    }

    /// Sets the attachments on `buffer`, propagating, as Apple's cameras do (`kCVImageBufferGammaLevelKey` 2.6 with
    /// DCI-P3's pure power curve).
    package func attach(to buffer: CVPixelBuffer) {
        if let primaries = colorPrimaries {
            CVBufferSetAttachment(buffer, kCVImageBufferColorPrimariesKey, primaries, .shouldPropagate)
        }
        if let function = transferFunctionValue {
            CVBufferSetAttachment(buffer, kCVImageBufferTransferFunctionKey, function, .shouldPropagate)
            if function == kCVImageBufferTransferFunction_UseGamma {
                CVBufferSetAttachment(buffer, kCVImageBufferGammaLevelKey, 2.6, .shouldPropagate)
            }
        }
        if let matrix = yCbCrMatrix {
            CVBufferSetAttachment(buffer, kCVImageBufferYCbCrMatrixKey, matrix, .shouldPropagate)
        }
    }
}
