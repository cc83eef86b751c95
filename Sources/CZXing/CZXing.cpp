// The C interface of CZXing.h over zxing-cpp 1.4. Exceptions never cross into Swift: each call catches them.

// zxing-cpp 1.4 returns text as UTF-8 only with this defined (its announced default from the next release).
#define ZX_USE_UTF8 1

#include "CZXing.h"

#include <ZXing/BitMatrix.h>
#include <ZXing/DecodeHints.h>
#include <ZXing/ImageView.h>
#include <ZXing/MultiFormatWriter.h>
#include <ZXing/ReadBarcode.h>

#include <cstring>
#include <exception>
#include <string>

extern "C" int32_t CZXing_ReadLuma(
    const uint8_t *luma, int32_t width, int32_t height, int32_t rowStride, int32_t pixelStride, int32_t formats,
    int32_t tries, CZXing_Symbol *symbols, int32_t capacity, char *textStorage, int32_t textCapacity) {
    try {
        ZXing::ImageView image(luma, width, height, ZXing::ImageFormat::Lum, rowStride, pixelStride);
        ZXing::DecodeHints hints;
        hints.setFormats(ZXing::BarcodeFormats(static_cast<ZXing::BarcodeFormat>(formats)));
        hints.setTryHarder((tries & CZXing_TryHarder) != 0);
        hints.setTryRotate((tries & CZXing_TryRotate) != 0);
        hints.setTryDownscale((tries & CZXing_TryDownscale) != 0);
        hints.setMaxNumberOfSymbols(static_cast<uint8_t>(capacity > 255 ? 255 : capacity));
        auto results = ZXing::ReadBarcodes(image, hints);
        int32_t count = 0;
        int32_t used = 0;
        for (const auto &result : results) {
            if (count >= capacity) break;
            if (!result.isValid()) continue;
            std::string text = result.text();
            if (used + static_cast<int32_t>(text.size()) > textCapacity) continue;
            std::memcpy(textStorage + used, text.data(), text.size());
            CZXing_Symbol &symbol = symbols[count];
            symbol.format = static_cast<int32_t>(result.format());
            symbol.textOffset = used;
            symbol.textLength = static_cast<int32_t>(text.size());
            const auto &position = result.position();
            for (int corner = 0; corner < 4; corner++) {
                symbol.cornersX[corner] = position[corner].x;
                symbol.cornersY[corner] = position[corner].y;
            }
            used += static_cast<int32_t>(text.size());
            count++;
        }
        return count;
    } catch (const std::exception &) {
        return -1;
    }
}

extern "C" int32_t CZXing_Write(
    int32_t format, const char *text, int32_t width, int32_t height, int32_t margin, uint8_t *modules) {
    try {
        ZXing::MultiFormatWriter writer(static_cast<ZXing::BarcodeFormat>(format));
        writer.setMargin(margin);
        ZXing::BitMatrix matrix = writer.encode(std::string(text), width, height);
        if (matrix.width() != width || matrix.height() != height) {
            // Writers that cannot scale to the size asked (a symbol bigger than the image) draw at their own size.
            std::memset(modules, 0, static_cast<size_t>(width) * static_cast<size_t>(height));
            int offsetX = (width - matrix.width()) / 2;
            int offsetY = (height - matrix.height()) / 2;
            if (offsetX < 0 || offsetY < 0) return -1;
            for (int y = 0; y < matrix.height(); y++)
                for (int x = 0; x < matrix.width(); x++)
                    modules[(y + offsetY) * width + x + offsetX] = matrix.get(x, y) ? 1 : 0;
            return 0;
        }
        for (int y = 0; y < height; y++)
            for (int x = 0; x < width; x++) modules[y * width + x] = matrix.get(x, y) ? 1 : 0;
        return 0;
    } catch (const std::exception &) {
        return -1;
    }
}
