// The image buffer keys that say what colour a buffer's numbers are, beside the Y'CbCr matrix: the primaries and the
// transfer function, with Apple's string values. Devices set them from what the driver reports (V4L2's colorspace and
// transfer function of the format), so code that reads them on Apple's platforms reads the same here.

/// The colour primaries of the buffer's pixels; one of the `kCVImageBufferColorPrimaries_…` values.
public let kCVImageBufferColorPrimariesKey: CFString = "CVImageBufferColorPrimaries"
/// ITU-R BT.709 (and sRGB) primaries: HD video, webcams.
public let kCVImageBufferColorPrimaries_ITU_R_709_2: CFString = "ITU_R_709_2"
/// EBU Tech. 3213 (BT.601 625-line, PAL) primaries.
public let kCVImageBufferColorPrimaries_EBU_3213: CFString = "EBU_3213"
/// SMPTE C (BT.601 525-line, NTSC) primaries.
public let kCVImageBufferColorPrimaries_SMPTE_C: CFString = "SMPTE_C"
/// ITU-R BT.2020 primaries: UHD and HDR video.
public let kCVImageBufferColorPrimaries_ITU_R_2020: CFString = "ITU_R_2020"
/// DCI-P3 primaries with the DCI white point.
public let kCVImageBufferColorPrimaries_DCI_P3: CFString = "DCI_P3"
/// Display P3: DCI-P3 primaries with the D65 white point.
public let kCVImageBufferColorPrimaries_P3_D65: CFString = "P3_D65"

/// The transfer function (gamma curve) of the buffer's pixels; one of the `kCVImageBufferTransferFunction_…` values.
public let kCVImageBufferTransferFunctionKey: CFString = "CVImageBufferTransferFunction"
/// ITU-R BT.709 (also BT.601 and BT.2020 SDR).
public let kCVImageBufferTransferFunction_ITU_R_709_2: CFString = "ITU_R_709_2"
/// SMPTE 240M.
public let kCVImageBufferTransferFunction_SMPTE_240M_1995: CFString = "SMPTE_240M_1995"
/// A pure power law; the exponent is the buffer's `kCVImageBufferGammaLevelKey`.
public let kCVImageBufferTransferFunction_UseGamma: CFString = "UseGamma"
/// IEC 61966-2-1 sRGB.
public let kCVImageBufferTransferFunction_sRGB: CFString = "IEC_sRGB"
/// ITU-R BT.2020 (the same curve as BT.709 at 10 bits).
public let kCVImageBufferTransferFunction_ITU_R_2020: CFString = "ITU_R_2020"
/// SMPTE ST 2084 (PQ): HDR10.
public let kCVImageBufferTransferFunction_SMPTE_ST_2084_PQ: CFString = "SMPTE_ST_2084_PQ"
/// ITU-R BT.2100 hybrid log-gamma.
public let kCVImageBufferTransferFunction_ITU_R_2100_HLG: CFString = "ITU_R_2100_HLG"
/// Linear light.
public let kCVImageBufferTransferFunction_Linear: CFString = "Linear"
/// SMPTE ST 428-1 (DCI X'Y'Z').
public let kCVImageBufferTransferFunction_SMPTE_ST_428_1: CFString = "SMPTE_ST_428_1"
/// The exponent of a ``kCVImageBufferTransferFunction_UseGamma`` transfer function, a number.
public let kCVImageBufferGammaLevelKey: CFString = "CVImageBufferGammaLevel"

/// ITU-R BT.2020 non-constant-luminance Y'CbCr matrix (a value of ``kCVImageBufferYCbCrMatrixKey``).
public let kCVImageBufferYCbCrMatrix_ITU_R_2020: CFString = "ITU_R_2020"

/// A pixel buffer (or pool) attribute: a dictionary of attachments every buffer made with the attributes carries,
/// propagating. Apple's `kCVBufferPropagatedAttachmentsKey`.
public let kCVBufferPropagatedAttachmentsKey: CFString = "PropagatedAttachments"
/// A pixel buffer (or pool) attribute: a dictionary of attachments every buffer made with the attributes carries,
/// not propagating. Apple's `kCVBufferNonPropagatedAttachmentsKey`.
public let kCVBufferNonPropagatedAttachmentsKey: CFString = "NonPropagatedAttachments"
