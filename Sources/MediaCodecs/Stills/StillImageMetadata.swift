// StillImageMetadata: what a still's EXIF says, as one value both the file writer and the public dictionary read.

import Foundation

/// The facts recorded about one still: the camera, the moment, the exposure, the flash, the orientation, the size
/// and, when known, where it was taken.
///
/// ``ExifWriter`` writes it into the file; OpenAVCapture turns the same value into ImageIO's property
/// dictionaries, so the file and the dictionary cannot disagree. Fields use EXIF's units.
///
/// Value type; safe to use from any thread.
package struct StillImageMetadata: Sendable, Hashable {
    /// The flash as EXIF's `Flash` tag records it (EXIF 2.32, 4.6.5): whether it fired, and the mode it was in.
    package enum Flash: Sendable, Hashable {
        /// The camera has no flash: `0x20`.
        case noFlashFunction
        /// The flash was in `.off`: `0x10`, never fired.
        case off
        /// The flash was in `.on` ("compulsory"): `0x08`, plus 1 if it fired.
        case on(fired: Bool)
        /// The flash was in `.auto`: `0x18`, plus 1 if it fired.
        case auto(fired: Bool)

        /// The value of EXIF's `Flash` tag.
        package var exifValue: UInt16 {
            switch self {
            case .noFlashFunction: 0x20
            case .off: 0x10
            case .on(let fired): 0x08 | (fired ? 1 : 0)
            case .auto(let fired): 0x18 | (fired ? 1 : 0)
            }
        }

        /// Whether the flash fired.
        package var fired: Bool {
            switch self {
            case .on(let fired), .auto(let fired): fired
            case .noFlashFunction, .off: false
            }
        }
    }

    /// Where a still was taken (EXIF's GPS IFD).
    package struct Location: Sendable, Hashable {
        /// Degrees, north positive.
        package var latitude: Double
        /// Degrees, east positive.
        package var longitude: Double
        /// Metres above sea level (negative below), if known.
        package var altitude: Double?
        /// When the position was fixed, if known (written in UTC).
        package var timestamp: Date?

        package init(latitude: Double, longitude: Double, altitude: Double? = nil, timestamp: Date? = nil) {
            self.latitude = latitude
            self.longitude = longitude
            self.altitude = altitude
            self.timestamp = timestamp
        }
    }

    package var make: String
    package var model: String
    package var software: String
    /// When the picture was taken.
    package var dateTimeOriginal: Date
    /// The time zone `dateTimeOriginal` is written in (EXIF's local time plus `OffsetTimeOriginal`).
    package var timeZone: TimeZone
    /// Seconds.
    package var exposureTime: Double
    /// ISO speed.
    package var iso: Int
    package var flash: Flash
    /// EXIF/TIFF orientation 1...8: how to turn the stored pixels to show them upright.
    package var orientation: Int
    package var pixelWidth: Int
    package var pixelHeight: Int
    package var location: Location?

    package init(
        make: String, model: String, software: String, dateTimeOriginal: Date, timeZone: TimeZone = .current,
        exposureTime: Double, iso: Int, flash: Flash, orientation: Int, pixelWidth: Int, pixelHeight: Int,
        location: Location? = nil
    ) {
        self.make = make
        self.model = model
        self.software = software
        self.dateTimeOriginal = dateTimeOriginal
        self.timeZone = timeZone
        self.exposureTime = exposureTime
        self.iso = iso
        self.flash = flash
        self.orientation = orientation
        self.pixelWidth = pixelWidth
        self.pixelHeight = pixelHeight
        self.location = location
    }

    // MARK: The text forms EXIF and ImageIO share

    /// "2026:11:22 01:02:03" in `timeZone`: EXIF's `DateTimeOriginal`.
    package var dateTimeOriginalText: String { Self.text(dateTimeOriginal, "yyyy:MM:dd HH:mm:ss", timeZone) }

    /// "+01:00": EXIF's `OffsetTimeOriginal`.
    package var offsetTimeOriginalText: String {
        let seconds = timeZone.secondsFromGMT(for: dateTimeOriginal)
        let minutes = abs(seconds) / 60
        return String(format: "%@%02d:%02d", seconds < 0 ? "-" : "+", minutes / 60, minutes % 60)
    }

    /// Milliseconds, "042": EXIF's `SubSecTimeOriginal`.
    package var subSecondText: String {
        let fraction = dateTimeOriginal.timeIntervalSince1970 - dateTimeOriginal.timeIntervalSince1970.rounded(.down)
        return String(format: "%03d", min(999, Int(fraction * 1000)))
    }

    /// The exposure time as EXIF's rational: 1/n for exposures under a second, else in hundredths.
    package var exposureTimeRational: (numerator: UInt32, denominator: UInt32) {
        guard exposureTime > 0 else { return (0, 1) }
        if exposureTime < 1 { return (1, UInt32(min(Double(UInt32.max), (1 / exposureTime).rounded()))) }
        return (UInt32(min(Double(UInt32.max) / 100, exposureTime) * 100), 100)
    }

    /// The fix's UTC time "HH:mm:ss.SS" and date "yyyy:MM:dd", as ImageIO's `{GPS}` TimeStamp and DateStamp.
    package static func gpsTime(_ date: Date) -> (time: String, date: String) {
        let utc = TimeZone(identifier: "UTC")!
        return (text(date, "HH:mm:ss.SS", utc), text(date, "yyyy:MM:dd", utc))
    }

    private static func text(_ date: Date, _ format: String, _ zone: TimeZone) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.timeZone = zone
        formatter.dateFormat = format
        return formatter.string(from: date)
    }
}
