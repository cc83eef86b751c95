// The rest of Apple's kCVPixelFormatType_ constants (CVPixelBuffer.h), with Apple's values, so code that names them
// compiles and compares as on Apple's platforms. Buffers are made in the formats CVPixelFormatType.swift describes;
// CVPixelBufferCreate answers kCVReturnInvalidPixelFormat for these others (no capture path here produces them).

/// A four-character code as CoreVideo packs it: the first character in the most significant byte.
private func fourCharacterCode(_ code: StaticString) -> OSType {
    code.withUTF8Buffer { bytes in bytes.reduce(0) { ($0 << 8) | OSType($1) } }
}

/// 1 bit per pixel, indexed. Apple's `kCVPixelFormatType_1Monochrome`.
public let kCVPixelFormatType_1Monochrome: OSType = 0x0000_0001
/// 2 bits per pixel, indexed.
public let kCVPixelFormatType_2Indexed: OSType = 0x0000_0002
/// 4 bits per pixel, indexed.
public let kCVPixelFormatType_4Indexed: OSType = 0x0000_0004
/// 8 bits per pixel, indexed.
public let kCVPixelFormatType_8Indexed: OSType = 0x0000_0008
/// 1 bit indexed grey, white is zero.
public let kCVPixelFormatType_1IndexedGray_WhiteIsZero: OSType = 0x0000_0021
/// 2 bit indexed grey, white is zero.
public let kCVPixelFormatType_2IndexedGray_WhiteIsZero: OSType = 0x0000_0022
/// 4 bit indexed grey, white is zero.
public let kCVPixelFormatType_4IndexedGray_WhiteIsZero: OSType = 0x0000_0024
/// 8 bit indexed grey, white is zero.
public let kCVPixelFormatType_8IndexedGray_WhiteIsZero: OSType = 0x0000_0028
/// 16 bit big-endian RGB 555.
public let kCVPixelFormatType_16BE555: OSType = 0x0000_0010
/// 16 bit little-endian RGB 555.
public let kCVPixelFormatType_16LE555 = fourCharacterCode("L555")
/// 16 bit little-endian RGB 5551.
public let kCVPixelFormatType_16LE5551 = fourCharacterCode("5551")
/// 16 bit big-endian RGB 565.
public let kCVPixelFormatType_16BE565 = fourCharacterCode("B565")
/// 16 bit little-endian RGB 565.
public let kCVPixelFormatType_16LE565 = fourCharacterCode("L565")
/// 64 bit ARGB, 16 bits per component, big-endian.
public let kCVPixelFormatType_64ARGB = fourCharacterCode("b64a")
/// 64 bit RGBA, 16 bits per component, little-endian.
public let kCVPixelFormatType_64RGBALE = fourCharacterCode("l64r")
/// 48 bit RGB, 16 bits per component, big-endian.
public let kCVPixelFormatType_48RGB = fourCharacterCode("b48r")
/// 32 bit alpha and grey, 16 bits each, big-endian.
public let kCVPixelFormatType_32AlphaGray = fourCharacterCode("b32a")
/// 16 bit grey, big-endian.
public let kCVPixelFormatType_16Gray = fourCharacterCode("b16g")
/// 30 bit RGB, 10 bits per component, big-endian, packed in 32 bits.
public let kCVPixelFormatType_30RGB = fourCharacterCode("R10k")
/// Component Y'CbCrA 8-bit 4:4:4:4, ordered Cb Y' Cr A.
public let kCVPixelFormatType_4444YpCbCrA8 = fourCharacterCode("v408")
/// Component Y'CbCrA 8-bit 4:4:4:4, rendering format, ordered A Y' Cb Cr.
public let kCVPixelFormatType_4444YpCbCrA8R = fourCharacterCode("r408")
/// Component Y'CbCrA 8-bit 4:4:4:4, ordered A Y' Cb Cr, full range alpha, video range Y'CbCr.
public let kCVPixelFormatType_4444AYpCbCr8 = fourCharacterCode("y408")
/// Component Y'CbCrA 16-bit 4:4:4:4, ordered A Y' Cb Cr.
public let kCVPixelFormatType_4444AYpCbCr16 = fourCharacterCode("y416")
/// Component AY'CbCr single-precision floating point 4:4:4:4.
public let kCVPixelFormatType_4444AYpCbCrFloat = fourCharacterCode("r4fl")
/// Component Y'CbCr 8-bit 4:4:4, ordered Cr Y' Cb.
public let kCVPixelFormatType_444YpCbCr8 = fourCharacterCode("v308")
/// Component Y'CbCr 10,12,14,16-bit 4:2:2.
public let kCVPixelFormatType_422YpCbCr16 = fourCharacterCode("v216")
/// Component Y'CbCr 10-bit 4:2:2 (v210).
public let kCVPixelFormatType_422YpCbCr10 = fourCharacterCode("v210")
/// Component Y'CbCr 10-bit 4:4:4.
public let kCVPixelFormatType_444YpCbCr10 = fourCharacterCode("v410")
/// 8-bit 4:2:2 Y'CbCr with an 8-bit alpha plane.
public let kCVPixelFormatType_422YpCbCr_4A_8BiPlanar = fourCharacterCode("a2vy")
/// Bi-planar 4:2:2 8-bit Y'CbCr, video range.
public let kCVPixelFormatType_422YpCbCr8BiPlanarVideoRange = fourCharacterCode("422v")
/// Bi-planar 4:2:2 8-bit Y'CbCr, full range.
public let kCVPixelFormatType_422YpCbCr8BiPlanarFullRange = fourCharacterCode("422f")
/// Bi-planar 4:4:4 8-bit Y'CbCr, video range.
public let kCVPixelFormatType_444YpCbCr8BiPlanarVideoRange = fourCharacterCode("444v")
/// Bi-planar 4:4:4 8-bit Y'CbCr, full range.
public let kCVPixelFormatType_444YpCbCr8BiPlanarFullRange = fourCharacterCode("444f")
/// Bi-planar 4:2:2 10-bit Y'CbCr in 16-bit words, video range.
public let kCVPixelFormatType_422YpCbCr10BiPlanarVideoRange = fourCharacterCode("x422")
/// Bi-planar 4:4:4 10-bit Y'CbCr in 16-bit words, video range.
public let kCVPixelFormatType_444YpCbCr10BiPlanarVideoRange = fourCharacterCode("x444")
/// Bi-planar 4:2:2 10-bit Y'CbCr in 16-bit words, full range.
public let kCVPixelFormatType_422YpCbCr10BiPlanarFullRange = fourCharacterCode("xf22")
/// Bi-planar 4:4:4 10-bit Y'CbCr in 16-bit words, full range.
public let kCVPixelFormatType_444YpCbCr10BiPlanarFullRange = fourCharacterCode("xf44")
/// 4:2:0 8-bit video range Y'CbCr in two planes plus an 8-bit alpha plane.
public let kCVPixelFormatType_420YpCbCr8VideoRange_8A_TriPlanar = fourCharacterCode("v0a8")
/// Little-endian ARGB 10-bit wide-gamut, packed.
public let kCVPixelFormatType_30RGBLEPackedWideGamut = fourCharacterCode("w30r")
/// Little-endian ARGB 2:10:10:10, packed.
public let kCVPixelFormatType_ARGB2101010LEPacked = fourCharacterCode("l10r")
/// Little-endian ARGB 10-bit wide gamut in 16-bit words.
public let kCVPixelFormatType_40ARGBLEWideGamut = fourCharacterCode("w40a")
/// Little-endian ARGB 10-bit wide gamut in 16-bit words, premultiplied alpha.
public let kCVPixelFormatType_40ARGBLEWideGamutPremultiplied = fourCharacterCode("w40m")
/// 10-bit one component, little-endian in 16 bits.
public let kCVPixelFormatType_OneComponent10 = fourCharacterCode("L010")
/// 12-bit one component, little-endian in 16 bits.
public let kCVPixelFormatType_OneComponent12 = fourCharacterCode("L012")
/// 16-bit one component.
public let kCVPixelFormatType_OneComponent16 = fourCharacterCode("L016")
/// 16-bit two components.
public let kCVPixelFormatType_TwoComponent16 = fourCharacterCode("2C16")
/// 16-bit half-float one component.
public let kCVPixelFormatType_OneComponent16Half = fourCharacterCode("L00h")
/// 32-bit float one component.
public let kCVPixelFormatType_OneComponent32Float = fourCharacterCode("L00f")
/// 16-bit half-float two components.
public let kCVPixelFormatType_TwoComponent16Half = fourCharacterCode("2C0h")
/// 32-bit float two components.
public let kCVPixelFormatType_TwoComponent32Float = fourCharacterCode("2C0f")
/// 64-bit RGBA half float.
public let kCVPixelFormatType_64RGBAHalf = fourCharacterCode("RGhA")
/// 128-bit RGBA float.
public let kCVPixelFormatType_128RGBAFloat = fourCharacterCode("RGfA")
/// Bayer 14-bit little-endian in 16 bits, GRBG.
public let kCVPixelFormatType_14Bayer_GRBG = fourCharacterCode("grb4")
/// Bayer 14-bit little-endian in 16 bits, RGGB.
public let kCVPixelFormatType_14Bayer_RGGB = fourCharacterCode("rgg4")
/// Bayer 14-bit little-endian in 16 bits, BGGR.
public let kCVPixelFormatType_14Bayer_BGGR = fourCharacterCode("bgg4")
/// Bayer 14-bit little-endian in 16 bits, GBRG.
public let kCVPixelFormatType_14Bayer_GBRG = fourCharacterCode("gbr4")
/// 16-bit versatile Bayer (ProRes RAW).
public let kCVPixelFormatType_16VersatileBayer = fourCharacterCode("bp16")
