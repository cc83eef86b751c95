import Foundation

/// A namespace of metadata keys, with Apple's raw values.
public struct AVMetadataKeySpace: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// Keys every format maps to (`AVMetadataKey.commonKey…`).
    public static let common = Self("comn")
    /// QuickTime user data (`©nam`, `©xyz` …).
    public static let quickTimeUserData = Self("udta")
    /// QuickTime metadata (`com.apple.quicktime.…`).
    public static let quickTimeMetadata = Self("mdta")
    /// iTunes (MP4) metadata.
    public static let iTunes = Self("itsk")
    /// ID3 (MP3) metadata.
    public static let id3 = Self("org.id3")
    /// ISO user data.
    public static let isoUserData = Self("uiso")
}

/// A metadata key within a key space, with Apple's raw values.
public struct AVMetadataKey: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let commonKeyTitle = Self("title")
    public static let commonKeyCreator = Self("creator")
    public static let commonKeySubject = Self("subject")
    public static let commonKeyDescription = Self("description")
    public static let commonKeyPublisher = Self("publisher")
    public static let commonKeyContributor = Self("contributor")
    public static let commonKeyCreationDate = Self("creationDate")
    public static let commonKeyLastModifiedDate = Self("lastModifiedDate")
    public static let commonKeyType = Self("type")
    public static let commonKeyFormat = Self("format")
    public static let commonKeyIdentifier = Self("identifier")
    public static let commonKeySource = Self("source")
    public static let commonKeyLanguage = Self("language")
    public static let commonKeyRelation = Self("relation")
    public static let commonKeyLocation = Self("location")
    public static let commonKeyCopyrights = Self("copyrights")
    public static let commonKeyAlbumName = Self("albumName")
    public static let commonKeyAuthor = Self("author")
    public static let commonKeyArtist = Self("artist")
    public static let commonKeyArtwork = Self("artwork")
    public static let commonKeyMake = Self("make")
    public static let commonKeyModel = Self("model")
    public static let commonKeySoftware = Self("software")

    public static let quickTimeMetadataKeyTitle = Self("com.apple.quicktime.title")
    public static let quickTimeMetadataKeyDescription = Self("com.apple.quicktime.description")
    public static let quickTimeMetadataKeyAuthor = Self("com.apple.quicktime.author")
    public static let quickTimeMetadataKeyCopyright = Self("com.apple.quicktime.copyright")
    public static let quickTimeMetadataKeyCreationDate = Self("com.apple.quicktime.creationdate")
    public static let quickTimeMetadataKeyLocationISO6709 = Self("com.apple.quicktime.location.ISO6709")
    public static let quickTimeMetadataKeyMake = Self("com.apple.quicktime.make")
    public static let quickTimeMetadataKeyModel = Self("com.apple.quicktime.model")
    public static let quickTimeMetadataKeySoftware = Self("com.apple.quicktime.software")
}

/// A key space and key in one string (`"common/title"`, `"mdta/com.apple.quicktime.location.ISO6709"`), with
/// Apple's raw values.
public struct AVMetadataIdentifier: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let commonIdentifierTitle = Self("common/title")
    public static let commonIdentifierCreator = Self("common/creator")
    public static let commonIdentifierSubject = Self("common/subject")
    public static let commonIdentifierDescription = Self("common/description")
    public static let commonIdentifierPublisher = Self("common/publisher")
    public static let commonIdentifierCreationDate = Self("common/creationDate")
    public static let commonIdentifierLocation = Self("common/location")
    public static let commonIdentifierCopyrights = Self("common/copyrights")
    public static let commonIdentifierAuthor = Self("common/author")
    public static let commonIdentifierArtist = Self("common/artist")
    public static let commonIdentifierMake = Self("common/make")
    public static let commonIdentifierModel = Self("common/model")
    public static let commonIdentifierSoftware = Self("common/software")
    public static let commonIdentifierLanguage = Self("common/language")
    /// A track's name in QuickTime user data (written as the track's `udta`/`name`).
    public static let quickTimeUserDataTrackName = Self("udta/tnam")

    public static let quickTimeMetadataTitle = Self("mdta/com.apple.quicktime.title")
    public static let quickTimeMetadataDescription = Self("mdta/com.apple.quicktime.description")
    public static let quickTimeMetadataAuthor = Self("mdta/com.apple.quicktime.author")
    public static let quickTimeMetadataCopyright = Self("mdta/com.apple.quicktime.copyright")
    public static let quickTimeMetadataCreationDate = Self("mdta/com.apple.quicktime.creationdate")
    public static let quickTimeMetadataLocationISO6709 = Self("mdta/com.apple.quicktime.location.ISO6709")
    public static let quickTimeMetadataMake = Self("mdta/com.apple.quicktime.make")
    public static let quickTimeMetadataModel = Self("mdta/com.apple.quicktime.model")
    public static let quickTimeMetadataSoftware = Self("mdta/com.apple.quicktime.software")

    /// The key space part.
    var keySpace: AVMetadataKeySpace? {
        rawValue.split(separator: "/", maxSplits: 1).first.map { $0 == "common" ? .common : AVMetadataKeySpace(String($0)) }
    }

    /// The key part.
    var key: String? {
        let parts = rawValue.split(separator: "/", maxSplits: 1)
        return parts.count == 2 ? String(parts[1]) : nil
    }
}

/// Data types of metadata values, as Apple's `kCMMetadataBaseDataType_…` strings.
public let kCMMetadataBaseDataType_UTF8 = "com.apple.metadata.datatype.UTF-8"
public let kCMMetadataBaseDataType_SInt32 = "com.apple.metadata.datatype.int32"
public let kCMMetadataBaseDataType_Float64 = "com.apple.metadata.datatype.float64"
public let kCMMetadataBaseDataType_RawData = "com.apple.metadata.datatype.raw-data"
public let kCMMetadataDataType_QuickTimeMetadataLocation_ISO6709 = "com.apple.metadata.datatype.QuickTimeMetadataLocation_ISO6709"
