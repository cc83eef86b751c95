// ExifTool's reading of a still: every tag as JSON, numbers as numbers (`-n`), groups kept apart (`-G1`).

import Foundation

/// What `exiftool -j -n -G1 -a` says about one file: tags keyed "Group:Name" ("IFD0:Make", "ExifIFD:Flash",
/// "GPS:GPSLatitude", "File:ImageWidth", "Composite:GPSLatitude").
public struct ExifToolReport: @unchecked Sendable {
    public let tags: [String: Any]

    /// Runs exiftool on `url`; throws when it fails or prints no JSON object.
    public init(_ url: URL) throws {
        let result = try MediaTool.exiftool.run(["-j", "-n", "-G1", "-a", url.path])
        guard result.status == 0 else { throw MediaToolFailure(description: "exiftool failed: \(result.error)") }
        guard let list = try JSONSerialization.jsonObject(with: result.output) as? [[String: Any]],
            let first = list.first
        else { throw MediaToolFailure(description: "exiftool printed no JSON object") }
        tags = first
    }

    /// The tag `name` of `group`, as text (numbers printed as exiftool prints them).
    public func string(_ group: String, _ name: String) -> String? {
        guard let value = tags[group + ":" + name] else { return nil }
        if let text = value as? String { return text }
        return "\(value)"
    }

    /// The tag `name` of `group`, as a number.
    public func number(_ group: String, _ name: String) -> Double? {
        let value = tags[group + ":" + name]
        return (value as? Double) ?? (value as? Int).map(Double.init) ?? (value as? NSNumber)?.doubleValue
            ?? (value as? String).flatMap(Double.init)
    }

    /// ExifTool's warnings about the file (a malformed segment, a bad offset); empty for a clean file.
    public var warnings: [String] {
        tags.filter { $0.key.hasSuffix(":Warning") || $0.key.hasSuffix(":Error") }.map { "\($0.key): \($0.value)" }
    }
}
