import Foundation
import MediaCodecs

// ImageIO's property names, which Apple's still outputs use for the EXIF they attach to sample buffers and put in
// `AVCapturePhoto.metadata`. Foundation on Linux has no ImageIO, so the names the capture API needs live here, with
// Apple's values (CFString is String here).

/// The `{Exif}` dictionary of a still's properties.
public let kCGImagePropertyExifDictionary: CFString = "{Exif}"
/// The `{TIFF}` dictionary of a still's properties.
public let kCGImagePropertyTIFFDictionary: CFString = "{TIFF}"
/// The `{GPS}` dictionary of a still's properties.
public let kCGImagePropertyGPSDictionary: CFString = "{GPS}"
/// The orientation of the stored pixels, 1...8 (EXIF's meaning).
public let kCGImagePropertyOrientation: CFString = "Orientation"
/// The stored width in pixels.
public let kCGImagePropertyPixelWidth: CFString = "PixelWidth"
/// The stored height in pixels.
public let kCGImagePropertyPixelHeight: CFString = "PixelHeight"

/// `{Exif}`: when the picture was taken, "yyyy:MM:dd HH:mm:ss" in local time.
public let kCGImagePropertyExifDateTimeOriginal: CFString = "DateTimeOriginal"
/// `{Exif}`: when the picture was digitized.
public let kCGImagePropertyExifDateTimeDigitized: CFString = "DateTimeDigitized"
/// `{Exif}`: the offset of `DateTimeOriginal` from UTC, "+01:00".
public let kCGImagePropertyExifOffsetTimeOriginal: CFString = "OffsetTimeOriginal"
/// `{Exif}`: the offset of `DateTimeDigitized` from UTC.
public let kCGImagePropertyExifOffsetTimeDigitized: CFString = "OffsetTimeDigitized"
/// `{Exif}`: milliseconds of `DateTimeOriginal`, "042".
public let kCGImagePropertyExifSubsecTimeOriginal: CFString = "SubsecTimeOriginal"
/// `{Exif}`: the exposure time in seconds (a `Double`).
public let kCGImagePropertyExifExposureTime: CFString = "ExposureTime"
/// `{Exif}`: the ISO speeds, an array of `Int`.
public let kCGImagePropertyExifISOSpeedRatings: CFString = "ISOSpeedRatings"
/// `{Exif}`: EXIF's `Flash` value: bit 0 fired, bits 3–4 the mode, 0x20 no flash.
public let kCGImagePropertyExifFlash: CFString = "Flash"
/// `{Exif}`: the width of the stored image.
public let kCGImagePropertyExifPixelXDimension: CFString = "PixelXDimension"
/// `{Exif}`: the height of the stored image.
public let kCGImagePropertyExifPixelYDimension: CFString = "PixelYDimension"
/// `{Exif}`: the EXIF version, as an array of `Int` (`[2, 3, 1]`).
public let kCGImagePropertyExifVersion: CFString = "ExifVersion"

/// `{TIFF}`: the camera's maker.
public let kCGImagePropertyTIFFMake: CFString = "Make"
/// `{TIFF}`: the camera's model.
public let kCGImagePropertyTIFFModel: CFString = "Model"
/// `{TIFF}`: the software that made the image.
public let kCGImagePropertyTIFFSoftware: CFString = "Software"
/// `{TIFF}`: when the file was written, "yyyy:MM:dd HH:mm:ss".
public let kCGImagePropertyTIFFDateTime: CFString = "DateTime"
/// `{TIFF}`: the orientation, 1...8.
public let kCGImagePropertyTIFFOrientation: CFString = "Orientation"

/// `{GPS}`: latitude in degrees, always positive (see `LatitudeRef`).
public let kCGImagePropertyGPSLatitude: CFString = "Latitude"
/// `{GPS}`: "N" or "S".
public let kCGImagePropertyGPSLatitudeRef: CFString = "LatitudeRef"
/// `{GPS}`: longitude in degrees, always positive (see `LongitudeRef`).
public let kCGImagePropertyGPSLongitude: CFString = "Longitude"
/// `{GPS}`: "E" or "W".
public let kCGImagePropertyGPSLongitudeRef: CFString = "LongitudeRef"
/// `{GPS}`: altitude in metres, always positive (see `AltitudeRef`).
public let kCGImagePropertyGPSAltitude: CFString = "Altitude"
/// `{GPS}`: 0 above sea level, 1 below.
public let kCGImagePropertyGPSAltitudeRef: CFString = "AltitudeRef"
/// `{GPS}`: the fix's UTC time, "HH:mm:ss.SS".
public let kCGImagePropertyGPSTimeStamp: CFString = "TimeStamp"
/// `{GPS}`: the fix's UTC date, "yyyy:MM:dd".
public let kCGImagePropertyGPSDateStamp: CFString = "DateStamp"

extension StillImageMetadata {
    /// The metadata as ImageIO's properties: the top-level orientation and size, `{Exif}`, `{TIFF}`, and `{GPS}`
    /// with a location. The same value the file's EXIF is written from, so the two agree.
    package var imageProperties: [String: Any] {
        let exposure = exposureTimeRational
        let exif: [String: Any] = [
            kCGImagePropertyExifDateTimeOriginal: dateTimeOriginalText,
            kCGImagePropertyExifDateTimeDigitized: dateTimeOriginalText,
            kCGImagePropertyExifOffsetTimeOriginal: offsetTimeOriginalText,
            kCGImagePropertyExifOffsetTimeDigitized: offsetTimeOriginalText,
            kCGImagePropertyExifSubsecTimeOriginal: subSecondText,
            kCGImagePropertyExifExposureTime: Double(exposure.numerator) / Double(exposure.denominator),
            kCGImagePropertyExifISOSpeedRatings: [iso],
            kCGImagePropertyExifFlash: Int(flash.exifValue),
            kCGImagePropertyExifPixelXDimension: pixelWidth,
            kCGImagePropertyExifPixelYDimension: pixelHeight,
            kCGImagePropertyExifVersion: [2, 3, 1],
        ]
        var properties: [String: Any] = [
            kCGImagePropertyOrientation: orientation,
            kCGImagePropertyPixelWidth: pixelWidth,
            kCGImagePropertyPixelHeight: pixelHeight,
            kCGImagePropertyExifDictionary: exif,
            kCGImagePropertyTIFFDictionary: [
                kCGImagePropertyTIFFMake: make, kCGImagePropertyTIFFModel: model,
                kCGImagePropertyTIFFSoftware: software, kCGImagePropertyTIFFDateTime: dateTimeOriginalText,
                kCGImagePropertyTIFFOrientation: orientation,
            ] as [String: Any],
        ]
        if let location {
            var gps: [String: Any] = [
                kCGImagePropertyGPSLatitude: abs(location.latitude),
                kCGImagePropertyGPSLatitudeRef: location.latitude < 0 ? "S" : "N",
                kCGImagePropertyGPSLongitude: abs(location.longitude),
                kCGImagePropertyGPSLongitudeRef: location.longitude < 0 ? "W" : "E",
            ]
            if let altitude = location.altitude {
                gps[kCGImagePropertyGPSAltitude] = abs(altitude)
                gps[kCGImagePropertyGPSAltitudeRef] = altitude < 0 ? 1 : 0
            }
            if let timestamp = location.timestamp {
                let utc = Self.gpsTime(timestamp)
                gps[kCGImagePropertyGPSTimeStamp] = utc.time
                gps[kCGImagePropertyGPSDateStamp] = utc.date
            }
            properties[kCGImagePropertyGPSDictionary] = gps
        }
        return properties
    }

    /// A location from an ImageIO `{GPS}` dictionary (Apple's way to give a photo a location:
    /// `AVCapturePhotoSettings.metadata[kCGImagePropertyGPSDictionary]`), or nil without latitude and longitude or
    /// when either is not a number within ±90° and ±180° (a NaN latitude trapped in EXIF writing); an altitude that
    /// is not finite is left out. `TimeStamp` and `DateStamp` are read as UTC.
    package static func location(fromGPS gps: [String: Any]) -> Location? {
        func number(_ key: String) -> Double? { doubleSetting(gps[key]) }
        guard let latitude = number(kCGImagePropertyGPSLatitude), let longitude = number(kCGImagePropertyGPSLongitude),
            abs(latitude) <= 90, abs(longitude) <= 180
        else { return nil }
        let south = (gps[kCGImagePropertyGPSLatitudeRef] as? String)?.uppercased() == "S"
        let west = (gps[kCGImagePropertyGPSLongitudeRef] as? String)?.uppercased() == "W"
        let below = number(kCGImagePropertyGPSAltitudeRef) == 1
        var timestamp: Date?
        if let time = gps[kCGImagePropertyGPSTimeStamp] as? String,
            let date = gps[kCGImagePropertyGPSDateStamp] as? String
        {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = time.contains(".") ? "yyyy:MM:dd HH:mm:ss.SS" : "yyyy:MM:dd HH:mm:ss"
            timestamp = formatter.date(from: date + " " + time)
        }
        return Location(
            latitude: south ? -abs(latitude) : latitude, longitude: west ? -abs(longitude) : longitude,
            altitude: number(kCGImagePropertyGPSAltitude).flatMap { $0.isFinite ? (below ? -abs($0) : $0) : nil },
            timestamp: timestamp)
    }
}
