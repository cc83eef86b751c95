// Still encoders: JPEG colours survive the trip from a camera's NV12, the EXIF block says what it was given, HEIC
// encodes where libheif can. Files are decoded here with TurboJPEG and libexif; exiftool and ffprobe read them in
// IntegrationTests.

import CExif
import CTurboJPEG
import Foundation
import OpenCoreVideo
import Testing

@testable import MediaCodecs

@Suite("Still encoders")
struct StillEncoderTests {
    static let bars = RGB.colourBars(level: 0.75)

    /// The RGB of the middle of each bar of a decoded JPEG.
    func decodedBars(_ jpeg: Data, width: Int, height: Int) throws -> [RGB] {
        let handle = try #require(tjInitDecompress())
        defer { tjDestroy(handle) }
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        let status = jpeg.withUnsafeBytes { bytes in
            tjDecompress2(
                handle, bytes.bindMemory(to: UInt8.self).baseAddress, UInt(bytes.count), &rgb, Int32(width),
                Int32(width * 3), Int32(height), Int32(TJPF_RGB.rawValue), 0)
        }
        try #require(status == 0, "\(String(cString: tjGetErrorStr2(handle)))")
        let barWidth = width / Self.bars.count
        return (0..<Self.bars.count).map { bar in
            let offset = ((height / 2) * width + bar * barWidth + barWidth / 2) * 3
            return RGB(red: rgb[offset], green: rgb[offset + 1], blue: rgb[offset + 2])
        }
    }

    @Test("Video-range BT.709 NV12 becomes a JPEG whose decoded colours are the bars' (range and matrix converted)")
    func nv12ColoursSurvive() throws {
        let (width, height) = (640, 480)
        let image = try makeNV12Bars(Self.bars, width: width, height: height)
        let jpeg = try JPEGEncoder().encode(image, quality: 0.95, matrix: .itu709)
        #expect(jpeg.prefix(2) == Data([0xFF, 0xD8]))
        #expect(jpeg.suffix(2) == Data([0xFF, 0xD9]))
        let decoded = try decodedBars(jpeg, width: width, height: height)
        for (got, want) in zip(decoded, Self.bars) {
            #expect(got.distance(to: want) <= 6, "decoded \(got), drawn \(want)")
        }
    }

    @Test("Without the conversion the colours would be visibly off: black must decode to black, not 16")
    func blackIsBlack() throws {
        let image = try makeNV12Bars([RGB(red: 0, green: 0, blue: 0)], width: 64, height: 64)
        let jpeg = try JPEGEncoder().encode(image, quality: 0.9)
        let handle = try #require(tjInitDecompress())
        defer { tjDestroy(handle) }
        var rgb = [UInt8](repeating: 0, count: 64 * 64 * 3)
        _ = jpeg.withUnsafeBytes { bytes in
            tjDecompress2(
                handle, bytes.bindMemory(to: UInt8.self).baseAddress, UInt(bytes.count), &rgb, 64, 64 * 3, 64,
                Int32(TJPF_RGB.rawValue), 0)
        }
        #expect(rgb.max()! <= 3)
    }

    @Test("BGRA encodes too, and odd sizes work")
    func bgraAndOddSizes() throws {
        let bgra = try makeBGRA(width: 321, height: 241) { x, _ in
            x < 160 ? RGB(red: 200, green: 30, blue: 40) : RGB(red: 10, green: 20, blue: 220)
        }
        let jpeg = try JPEGEncoder().encode(bgra, quality: 0.9)
        #expect(jpeg.count > 200)
        let odd = try makeNV12Bars(Self.bars, width: 323, height: 243)
        let encoder = try JPEGEncoder()
        #expect(try encoder.encode(odd, quality: 0.9).count > 200)
        // The encoder reuses its planes and buffer for a larger frame after a smaller one.
        let large = try makeNV12Bars(Self.bars, width: 1280, height: 720)
        #expect(try decodedBars(encoder.encode(large, quality: 0.95), width: 1280, height: 720).count == 8)
    }

    @Test("A pixel format TurboJPEG is not fed is an error value, not a trap")
    func unsupportedFormat() throws {
        let yuyv = try makeBuffer(kCVPixelFormatType_422YpCbCr8_yuvs, width: 64, height: 64)
        #expect(throws: MediaCodecsError.self) { try JPEGEncoder().encode(yuyv, quality: 0.9) }
    }

    static let metadata = StillImageMetadata(
        make: "OpenAVCapture", model: "Virtual Back Camera", software: "OpenAVCapture test",
        dateTimeOriginal: Date(timeIntervalSince1970: 1_700_000_000.25), timeZone: TimeZone(secondsFromGMT: 3600)!,
        exposureTime: 1.0 / 60, iso: 200, flash: .auto(fired: true), orientation: 6, pixelWidth: 640,
        pixelHeight: 480,
        location: .init(
            latitude: 48.8584, longitude: -2.2945, altitude: 35, timestamp: Date(timeIntervalSince1970: 1_700_000_000)))

    /// The text of one entry, as libexif formats it.
    func value(_ data: UnsafeMutablePointer<ExifData>, _ ifd: ExifIfd, _ tag: UInt32) -> String? {
        guard let entry = exif_content_get_entry(CExif_content(data, ifd), ExifTag(rawValue: tag)) else { return nil }
        var text = [CChar](repeating: 0, count: 256)
        return String(cString: exif_entry_get_value(entry, &text, 256))
    }

    @Test("The EXIF block holds every field, and sits first in the JPEG in place of JFIF")
    func exifBlock() throws {
        let payload = try ExifWriter.app1Payload(for: Self.metadata)
        #expect(Array(payload.prefix(6)) == Array("Exif".utf8) + [0, 0])
        let data = try #require(exif_data_new_from_data(payload, UInt32(payload.count)))
        defer { exif_data_unref(data) }
        #expect(value(data, EXIF_IFD_0, 0x010F) == "OpenAVCapture")
        #expect(value(data, EXIF_IFD_0, 0x0110) == "Virtual Back Camera")
        #expect(value(data, EXIF_IFD_EXIF, 0x9003) == "2023:11:14 23:13:20")
        #expect(value(data, EXIF_IFD_EXIF, 0x9011) == "+01:00")
        #expect(value(data, EXIF_IFD_EXIF, 0x9209)?.contains("auto") == true)
        #expect(value(data, EXIF_IFD_EXIF, 0xA002) == "640")
        #expect(value(data, EXIF_IFD_GPS, 0x0001) == "N")
        #expect(value(data, EXIF_IFD_GPS, 0x0003) == "W")

        let image = try makeNV12Bars(Self.bars, width: 640, height: 480)
        let jpeg = try JPEGEncoder().encode(image, quality: 0.9, exif: payload)
        #expect(Array(jpeg.prefix(4)) == [0xFF, 0xD8, 0xFF, 0xE1])
        #expect(jpeg.range(of: Data("JFIF".utf8)) == nil)
        #expect(try decodedBars(jpeg, width: 640, height: 480).count == 8)
    }

    @Test("EXIF's Flash values: fired in bit 0, the mode in bits 3-4, 0x20 without a flash")
    func flashValues() {
        #expect(StillImageMetadata.Flash.noFlashFunction.exifValue == 0x20)
        #expect(StillImageMetadata.Flash.off.exifValue == 0x10)
        #expect(StillImageMetadata.Flash.on(fired: true).exifValue == 0x09)
        #expect(StillImageMetadata.Flash.auto(fired: false).exifValue == 0x18)
        #expect(StillImageMetadata.Flash.auto(fired: true).exifValue == 0x19)
    }

    @Test("HEIC encodes where libheif has an HEVC encoder")
    func heic() throws {
        guard HEICEncoder.isAvailable else {
            print("Skipping HEIC: this libheif has no HEVC encoder")
            return
        }
        let image = try makeNV12Bars(Self.bars, width: 640, height: 480)
        let heic = try HEICEncoder.encode(
            image, quality: 0.8, orientation: 6, exif: ExifWriter.app1Payload(for: Self.metadata))
        #expect(heic.count > 500)
        #expect(heic.subdata(in: 4..<12) == Data("ftypheic".utf8))
    }
}
