// zxing-cpp (Debian's libzxing-dev, 1.4) behind a C interface: every symbol carries the CZXing_ prefix.
//
// Reading takes an 8-bit luma plane in place (no copy); writing renders a symbol's modules into a caller's buffer.
// zxing-cpp is C++; this header is plain C so Swift imports it without C++ interoperability.

#ifndef CZXING_H
#define CZXING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Symbologies, zxing-cpp's `BarcodeFormat` bits.
enum {
    CZXing_Aztec = 1 << 0,
    CZXing_Codabar = 1 << 1,
    CZXing_Code39 = 1 << 2,
    CZXing_Code93 = 1 << 3,
    CZXing_Code128 = 1 << 4,
    CZXing_DataMatrix = 1 << 7,
    CZXing_EAN8 = 1 << 8,
    CZXing_EAN13 = 1 << 9,
    CZXing_ITF = 1 << 10,
    CZXing_PDF417 = 1 << 12,
    CZXing_QRCode = 1 << 13,
    CZXing_UPCA = 1 << 14,
    CZXing_UPCE = 1 << 15,
};

/// One decoded symbol: its symbology, its text (UTF-8, in the caller's text storage at `textOffset`, `textLength`
/// bytes, not terminated) and its four corners in pixels of the image read (top-left, top-right, bottom-right,
/// bottom-left of the symbol as it is oriented).
typedef struct {
    int32_t format;
    int32_t textOffset;
    int32_t textLength;
    int32_t cornersX[4];
    int32_t cornersY[4];
} CZXing_Symbol;

/// What `CZXing_ReadLuma` tries beyond one pass over the picture at full size (zxing-cpp's `DecodeHints`).
enum {
    /// `tryRotate`: linear symbols also across the picture's rows (rotated 90°).
    CZXing_TryRotate = 1 << 0,
    /// `tryDownscale`: the picture again at a third of its size (when its smaller side passes 500 pixels).
    CZXing_TryDownscale = 1 << 1,
    /// `tryHarder`: more scan lines and finder-pattern candidates.
    CZXing_TryHarder = 1 << 2,
};

/// Reads up to `capacity` symbols of the `formats` bits from a `width` x `height` luma plane whose rows are
/// `rowStride` bytes apart and whose pixels are `pixelStride` bytes apart (1 for a luma plane, 2 for YUYV). Texts go to `textStorage` (`textCapacity` bytes); a symbol whose text does not fit is
/// left out. `tries` are the `CZXing_Try…` bits. Returns how many symbols were written, or -1 when zxing-cpp failed (an exception).
int32_t CZXing_ReadLuma(
    const uint8_t *luma, int32_t width, int32_t height, int32_t rowStride, int32_t pixelStride, int32_t formats,
    int32_t tries, CZXing_Symbol *symbols, int32_t capacity, char *textStorage, int32_t textCapacity);

/// Renders `text` as a symbol of one `format` at `width` x `height` pixels (the writer scales and centres the
/// symbol, keeping a quiet zone of `margin` pixels where the symbology allows) into `modules`, one byte per pixel,
/// 1 for dark and 0 for light, rows `width` bytes apart. Returns 0, or -1 when the text cannot be encoded in that
/// symbology (a wrong length or character) and nothing was written.
int32_t CZXing_Write(
    int32_t format, const char *text, int32_t width, int32_t height, int32_t margin, uint8_t *modules);

#ifdef __cplusplus
}
#endif

#endif
