import Foundation
import Synchronization

/// A piece of metadata: where it lives (key space and key, or an identifier), its value and its type.
///
/// Threading: immutable (`AVMutableMetadataItem` is not: mutate it before handing it to an output or writer).
open class AVMetadataItem: NSObject, @unchecked Sendable {
    fileprivate struct Fields {
        var identifier: AVMetadataIdentifier?
        var keySpace: AVMetadataKeySpace?
        var key: (any NSCopying & NSObjectProtocol)?
        var value: (any NSCopying & NSObjectProtocol)?
        var dataType: String?
        var extendedLanguageTag: String?
        var time: CMTime = .invalid
        var duration: CMTime = .invalid
        var extraAttributes: [String: Any]?
    }

    fileprivate var fields = Fields()

    public override init() { super.init() }

    /// The key space and key in one string; derived from them when not set directly.
    public var identifier: AVMetadataIdentifier? {
        if let identifier = fields.identifier { return identifier }
        guard let keySpace = fields.keySpace, let key = keyString else { return nil }
        return AVMetadataItem.identifier(forKey: key, keySpace: keySpace)
    }

    /// The key space; derived from the identifier when not set directly.
    public var keySpace: AVMetadataKeySpace? { fields.keySpace ?? fields.identifier?.keySpace }

    /// The key (a string here); derived from the identifier when not set directly.
    public var key: (any NSCopying & NSObjectProtocol)? {
        fields.key ?? fields.identifier?.key.map { NSString(string: $0) }
    }

    /// The common key this item maps to (title, location, creation date, …), if any.
    public var commonKey: AVMetadataKey? {
        guard let keySpace, let key = keyString else { return nil }
        return MetadataKeyMapping.commonKey(forKey: key, keySpace: keySpace)
    }

    /// The value: an `NSString`, `NSNumber`, `NSDate` or `NSData`.
    public var value: (any NSCopying & NSObjectProtocol)? { fields.value }
    /// The value's type (`kCMMetadataBaseDataType_UTF8` …), or nil to infer it from the value.
    public var dataType: String? { fields.dataType }
    /// The language of a text value (BCP 47), if any.
    public var extendedLanguageTag: String? { fields.extendedLanguageTag }
    /// When the item applies in the media (timed metadata); `.invalid` for the whole file.
    public var time: CMTime { fields.time }
    /// How long the item applies; `.invalid` for the whole file.
    public var duration: CMTime { fields.duration }
    /// Format-specific attributes.
    public var extraAttributes: [String: Any]? { fields.extraAttributes }

    /// The value as a string (numbers and dates are formatted), or nil.
    public var stringValue: String? {
        switch fields.value {
        case let string as NSString: String(string)
        case let number as NSNumber: number.stringValue
        case let date as NSDate: ISO8601Timestamp.string(from: date as Date)
        default: nil
        }
    }

    /// The value as a number, or nil.
    public var numberValue: NSNumber? {
        switch fields.value {
        case let number as NSNumber: number
        case let string as NSString: Double(String(string)).map { NSNumber(value: $0) }
        default: nil
        }
    }

    /// The value as a date (an `NSDate`, or an ISO 8601 string), or nil.
    public var dateValue: Date? {
        switch fields.value {
        case let date as NSDate: date as Date
        case let string as NSString: ISO8601Timestamp.date(from: String(string))
        default: nil
        }
    }

    /// The value as data, or nil.
    public var dataValue: Data? {
        switch fields.value {
        case let data as NSData: data as Data
        default: nil
        }
    }

    var keyString: String? {
        switch fields.key {
        case let string as NSString: String(string)
        case nil: fields.identifier?.key
        default: nil
        }
    }

    /// The identifier of a key in a key space (`common` + `title` → `common/title`).
    public class func identifier(forKey key: Any, keySpace: AVMetadataKeySpace) -> AVMetadataIdentifier? {
        let keyString: String? =
            switch key {
            case let string as String: string
            case let string as NSString: String(string)
            case let key as AVMetadataKey: key.rawValue
            default: nil
            }
        // Apple's identifiers spell the common key space "common", though its raw value is "comn".
        let prefix = keySpace == .common ? "common" : keySpace.rawValue
        return keyString.map { AVMetadataIdentifier("\(prefix)/\($0)") }
    }

    /// The items whose identifier is `identifier`.
    public class func metadataItems(
        from metadataItems: [AVMetadataItem], filteredByIdentifier identifier: AVMetadataIdentifier
    ) -> [AVMetadataItem] {
        metadataItems.filter { $0.identifier == identifier }
    }

    /// The items with a key in a key space (nil matches any).
    public class func metadataItems(
        from metadataItems: [AVMetadataItem], withKey key: Any?, keySpace: AVMetadataKeySpace?
    ) -> [AVMetadataItem] {
        let wanted: String? =
            switch key {
            case let string as String: string
            case let string as NSString: String(string)
            case let key as AVMetadataKey: key.rawValue
            default: nil
            }
        return metadataItems.filter { item in
            (keySpace == nil || item.keySpace == keySpace) && (wanted == nil || item.keyString == wanted)
        }
    }

    public override var description: String {
        "<AVMetadataItem \(identifier?.rawValue ?? "?") = \(stringValue ?? String(describing: value))>"
    }
}

/// A metadata item you build: set the key space and key (or the identifier) and the value.
///
/// Threading: not synchronized; build it on one thread, then hand it on.
open class AVMutableMetadataItem: AVMetadataItem, @unchecked Sendable {
    public override init() { super.init() }

    public override var identifier: AVMetadataIdentifier? {
        get { super.identifier }
        set { fields.identifier = newValue }
    }
    public override var keySpace: AVMetadataKeySpace? {
        get { super.keySpace }
        set { fields.keySpace = newValue }
    }
    public override var key: (any NSCopying & NSObjectProtocol)? {
        get { super.key }
        set { fields.key = newValue }
    }
    public override var value: (any NSCopying & NSObjectProtocol)? {
        get { super.value }
        set { fields.value = newValue }
    }
    public override var dataType: String? {
        get { super.dataType }
        set { fields.dataType = newValue }
    }
    public override var extendedLanguageTag: String? {
        get { super.extendedLanguageTag }
        set { fields.extendedLanguageTag = newValue }
    }
    public override var time: CMTime {
        get { super.time }
        set { fields.time = newValue }
    }
    public override var duration: CMTime {
        get { super.duration }
        set { fields.duration = newValue }
    }
    public override var extraAttributes: [String: Any]? {
        get { super.extraAttributes }
        set { fields.extraAttributes = newValue }
    }
}
