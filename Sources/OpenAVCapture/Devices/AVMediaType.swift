import Foundation

/// The kind of media a device, port or track carries, with Apple's raw values (`"vide"`, `"soun"`).
///
/// Value type; safe to use from any thread.
public struct AVMediaType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let video = AVMediaType("vide")
    public static let audio = AVMediaType("soun")
    public static let muxed = AVMediaType("muxx")
    public static let metadata = AVMediaType("meta")
    public static let metadataObject = AVMediaType("mobj")
    public static let text = AVMediaType("text")
    public static let closedCaption = AVMediaType("clcp")
    public static let subtitle = AVMediaType("sbtl")
    public static let timecode = AVMediaType("tmcd")
    public static let depthData = AVMediaType("dpth")

    public var description: String { rawValue }
}
