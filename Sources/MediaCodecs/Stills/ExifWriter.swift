// ExifWriter: a StillImageMetadata as the EXIF block of a JPEG's APP1 segment (or a HEIF's Exif item), with libexif.

import CExif
import Foundation

/// Serializes ``StillImageMetadata`` as EXIF 2.31 with libexif: IFD0 (Make, Model, Orientation, resolution,
/// Software, DateTime), the EXIF IFD (ExposureTime, ISOSpeedRatings, ExifVersion, DateTimeOriginal and
/// DateTimeDigitized with their OffsetTime… and SubSecTime… tags, Flash, ColorSpace, PixelX/YDimension) and, with a
/// location, the GPS IFD (version, latitude, longitude, altitude, UTC time and date).
///
/// libexif's defaults are turned off (`EXIF_DATA_OPTION_FOLLOW_SPECIFICATION` would add and "fix" tags on its
/// own), so the block holds exactly these entries, big-endian ("MM"), as Apple's cameras write.
///
/// Wraps `exif_data_new_mem`, `exif_entry_new_mem`, `exif_content_add_entry`, `exif_data_save_data`; every
/// libexif object is released before a call returns.
///
/// Stateless; safe to use from any thread.
package enum ExifWriter {
    /// The APP1 payload: "Exif\0\0" and the TIFF structure.
    package static func app1Payload(for metadata: StillImageMetadata) throws(MediaCodecsError) -> [UInt8] {
        guard let memory = exif_mem_new_default() else {
            throw MediaCodecsError(.allocationFailed, while: "writing EXIF", message: "exif_mem_new_default failed")
        }
        defer { exif_mem_unref(memory) }
        guard let data = exif_data_new_mem(memory) else {
            throw MediaCodecsError(.allocationFailed, while: "writing EXIF", message: "exif_data_new_mem failed")
        }
        defer { exif_data_unref(data) }
        exif_data_unset_option(data, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION)
        exif_data_unset_option(data, EXIF_DATA_OPTION_IGNORE_UNKNOWN_TAGS)
        exif_data_set_byte_order(data, EXIF_BYTE_ORDER_MOTOROLA)
        exif_data_set_data_type(data, EXIF_DATA_TYPE_COMPRESSED)
        var writer = EntryWriter(data: data, memory: memory)
        writer.fill(with: metadata)

        var bytes: UnsafeMutablePointer<UInt8>?
        var count: UInt32 = 0
        exif_data_save_data(data, &bytes, &count)
        guard let bytes, count > 0 else {
            throw MediaCodecsError(.allocationFailed, while: "writing EXIF", message: "exif_data_save_data failed")
        }
        defer { exif_mem_free(memory, bytes) }
        guard count <= UInt32(JPEGEncoder.maximumExifPayload) else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: "writing EXIF", message: "\(count) bytes exceed one APP1 segment")
        }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(count)))
    }
}

/// Adds entries of each EXIF format to one `ExifData`.
private struct EntryWriter {
    let data: UnsafeMutablePointer<ExifData>
    let memory: OpaquePointer
    let order = EXIF_BYTE_ORDER_MOTOROLA

    mutating func fill(with metadata: StillImageMetadata) {
        let date = metadata.dateTimeOriginalText
        let offset = metadata.offsetTimeOriginalText
        ascii(EXIF_IFD_0, EXIF_TAG_MAKE, metadata.make)
        ascii(EXIF_IFD_0, EXIF_TAG_MODEL, metadata.model)
        shorts(EXIF_IFD_0, EXIF_TAG_ORIENTATION, [UInt16(metadata.orientation)])
        rationals(EXIF_IFD_0, EXIF_TAG_X_RESOLUTION, [(72, 1)])
        rationals(EXIF_IFD_0, EXIF_TAG_Y_RESOLUTION, [(72, 1)])
        shorts(EXIF_IFD_0, EXIF_TAG_RESOLUTION_UNIT, [2])  // inches
        ascii(EXIF_IFD_0, EXIF_TAG_SOFTWARE, metadata.software)
        ascii(EXIF_IFD_0, EXIF_TAG_DATE_TIME, date)
        shorts(EXIF_IFD_0, EXIF_TAG_YCBCR_POSITIONING, [1])  // centred

        let exposure = metadata.exposureTimeRational
        rationals(EXIF_IFD_EXIF, EXIF_TAG_EXPOSURE_TIME, [exposure])
        shorts(EXIF_IFD_EXIF, EXIF_TAG_ISO_SPEED_RATINGS, [UInt16(clamping: metadata.iso)])
        undefined(EXIF_IFD_EXIF, EXIF_TAG_EXIF_VERSION, Array("0231".utf8))
        ascii(EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_ORIGINAL, date)
        ascii(EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_DIGITIZED, date)
        ascii(EXIF_IFD_EXIF, EXIF_TAG_OFFSET_TIME, offset)
        ascii(EXIF_IFD_EXIF, EXIF_TAG_OFFSET_TIME_ORIGINAL, offset)
        ascii(EXIF_IFD_EXIF, EXIF_TAG_OFFSET_TIME_DIGITIZED, offset)
        ascii(EXIF_IFD_EXIF, EXIF_TAG_SUB_SEC_TIME_ORIGINAL, metadata.subSecondText)
        ascii(EXIF_IFD_EXIF, EXIF_TAG_SUB_SEC_TIME_DIGITIZED, metadata.subSecondText)
        shorts(EXIF_IFD_EXIF, EXIF_TAG_FLASH, [metadata.flash.exifValue])
        shorts(EXIF_IFD_EXIF, EXIF_TAG_COLOR_SPACE, [1])  // sRGB
        longs(EXIF_IFD_EXIF, EXIF_TAG_PIXEL_X_DIMENSION, [UInt32(metadata.pixelWidth)])
        longs(EXIF_IFD_EXIF, EXIF_TAG_PIXEL_Y_DIMENSION, [UInt32(metadata.pixelHeight)])

        guard let location = metadata.location else { return }
        bytes(EXIF_IFD_GPS, EXIF_TAG_GPS_VERSION_ID, [2, 3, 0, 0])
        ascii(EXIF_IFD_GPS, EXIF_TAG_GPS_LATITUDE_REF, location.latitude < 0 ? "S" : "N")
        rationals(EXIF_IFD_GPS, EXIF_TAG_GPS_LATITUDE, Self.degreesMinutesSeconds(abs(location.latitude)))
        ascii(EXIF_IFD_GPS, EXIF_TAG_GPS_LONGITUDE_REF, location.longitude < 0 ? "W" : "E")
        rationals(EXIF_IFD_GPS, EXIF_TAG_GPS_LONGITUDE, Self.degreesMinutesSeconds(abs(location.longitude)))
        if let altitude = location.altitude, altitude.isFinite {
            bytes(EXIF_IFD_GPS, EXIF_TAG_GPS_ALTITUDE_REF, [altitude < 0 ? 1 : 0])
            // Millimetres in a UInt32: at most 4 000 km (4e7 m, the old bound, overflowed and trapped; found by the
            // still fuzz target).
            rationals(EXIF_IFD_GPS, EXIF_TAG_GPS_ALTITUDE, [(UInt32(min(abs(altitude), 4e6) * 1000), 1000)])
        }
        if let timestamp = location.timestamp {
            let parts = Calendar(identifier: .gregorian).dateComponents(
                in: TimeZone(identifier: "UTC")!, from: timestamp)
            let seconds = Double(parts.second ?? 0) + Double(parts.nanosecond ?? 0) / 1e9
            rationals(
                EXIF_IFD_GPS, EXIF_TAG_GPS_TIME_STAMP,
                [
                    (UInt32(parts.hour ?? 0), 1), (UInt32(parts.minute ?? 0), 1),
                    (UInt32((seconds * 100).rounded()), 100),
                ])
            ascii(EXIF_IFD_GPS, EXIF_TAG_GPS_DATE_STAMP, StillImageMetadata.gpsTime(timestamp).date)
        }
    }

    /// Degrees as EXIF's three rationals: whole degrees, whole minutes, seconds in ten-thousandths. A value that is
    /// not a number within 0...360 is written as 0 (callers check positions; this only keeps EXIF writing from
    /// trapping, as a NaN latitude once did).
    static func degreesMinutesSeconds(_ value: Double) -> [(UInt32, UInt32)] {
        let value = (0...360).contains(value) ? value : 0
        let degrees = value.rounded(.down)
        let minutes = ((value - degrees) * 60).rounded(.down)
        let seconds = (value - degrees - minutes / 60) * 3600
        return [(UInt32(degrees), 1), (UInt32(minutes), 1), (UInt32((seconds * 10_000).rounded()), 10_000)]
    }

    // MARK: One entry per format

    private func ascii(_ ifd: ExifIfd, _ tag: ExifTag, _ text: String) {
        let bytes = Array(text.utf8) + [0]
        add(ifd, tag, EXIF_FORMAT_ASCII, components: bytes.count) { $0.update(from: bytes, count: bytes.count) }
    }

    private func undefined(_ ifd: ExifIfd, _ tag: ExifTag, _ bytes: [UInt8]) {
        add(ifd, tag, EXIF_FORMAT_UNDEFINED, components: bytes.count) { $0.update(from: bytes, count: bytes.count) }
    }

    private func bytes(_ ifd: ExifIfd, _ tag: ExifTag, _ bytes: [UInt8]) {
        add(ifd, tag, EXIF_FORMAT_BYTE, components: bytes.count) { $0.update(from: bytes, count: bytes.count) }
    }

    private func shorts(_ ifd: ExifIfd, _ tag: ExifTag, _ values: [UInt16]) {
        add(ifd, tag, EXIF_FORMAT_SHORT, components: values.count) { pointer in
            for (index, value) in values.enumerated() { exif_set_short(pointer + 2 * index, order, value) }
        }
    }

    private func longs(_ ifd: ExifIfd, _ tag: ExifTag, _ values: [UInt32]) {
        add(ifd, tag, EXIF_FORMAT_LONG, components: values.count) { pointer in
            for (index, value) in values.enumerated() { exif_set_long(pointer + 4 * index, order, value) }
        }
    }

    private func rationals(_ ifd: ExifIfd, _ tag: ExifTag, _ values: [(UInt32, UInt32)]) {
        add(ifd, tag, EXIF_FORMAT_RATIONAL, components: values.count) { pointer in
            for (index, value) in values.enumerated() {
                exif_set_rational(pointer + 8 * index, order, ExifRational(numerator: value.0, denominator: value.1))
            }
        }
    }

    /// A new entry of `components` values of `format`, its bytes written by `fill`, added to `ifd`.
    private func add(
        _ ifd: ExifIfd, _ tag: ExifTag, _ format: ExifFormat, components: Int,
        fill: (UnsafeMutablePointer<UInt8>) -> Void
    ) {
        guard let entry = exif_entry_new_mem(memory) else { return }
        defer { exif_entry_unref(entry) }
        let size = Int(exif_format_get_size(format)) * components
        guard let storage = exif_mem_alloc(memory, ExifLong(size)) else { return }
        let bytes = storage.bindMemory(to: UInt8.self, capacity: size)
        fill(bytes)
        entry.pointee.tag = tag
        entry.pointee.format = format
        entry.pointee.components = UInt(components)
        entry.pointee.size = UInt32(size)
        entry.pointee.data = bytes
        exif_content_add_entry(CExif_content(data, ifd), entry)
    }
}

/// libexif spells the GPS tags as macros of plain integers; these are them as `ExifTag`s.
private let EXIF_TAG_GPS_VERSION_ID = ExifTag(rawValue: 0x0000)
private let EXIF_TAG_GPS_LATITUDE_REF = ExifTag(rawValue: 0x0001)
private let EXIF_TAG_GPS_LATITUDE = ExifTag(rawValue: 0x0002)
private let EXIF_TAG_GPS_LONGITUDE_REF = ExifTag(rawValue: 0x0003)
private let EXIF_TAG_GPS_LONGITUDE = ExifTag(rawValue: 0x0004)
private let EXIF_TAG_GPS_ALTITUDE_REF = ExifTag(rawValue: 0x0005)
private let EXIF_TAG_GPS_ALTITUDE = ExifTag(rawValue: 0x0006)
private let EXIF_TAG_GPS_TIME_STAMP = ExifTag(rawValue: 0x0007)
private let EXIF_TAG_GPS_DATE_STAMP = ExifTag(rawValue: 0x001d)
