import Foundation

/// How metadata items map to the tags a container stores (FFmpeg's tag names for QuickTime/MP4 atoms) and back.
///
/// Each common key has a QuickTime user-data atom (FFmpeg's generic name, e.g. `title` → `©nam`, `location` →
/// `©xyz`) and a QuickTime metadata key (`com.apple.quicktime.…`); writing emits both so every reader finds it,
/// reading accepts either.
enum MetadataKeyMapping {
    /// One common key's names.
    struct Entry {
        let common: AVMetadataKey
        /// FFmpeg's tag name (user data atom).
        let tag: String
        /// The QuickTime metadata key, if Apple defines one.
        let quickTime: AVMetadataKey?
    }

    static let entries: [Entry] = [
        Entry(common: .commonKeyTitle, tag: "title", quickTime: .quickTimeMetadataKeyTitle),
        Entry(common: .commonKeyLocation, tag: "location", quickTime: .quickTimeMetadataKeyLocationISO6709),
        Entry(common: .commonKeyCreationDate, tag: "creation_time", quickTime: .quickTimeMetadataKeyCreationDate),
        Entry(common: .commonKeyMake, tag: "make", quickTime: .quickTimeMetadataKeyMake),
        Entry(common: .commonKeyModel, tag: "model", quickTime: .quickTimeMetadataKeyModel),
        Entry(common: .commonKeySoftware, tag: "encoder", quickTime: .quickTimeMetadataKeySoftware),
        Entry(common: .commonKeyAuthor, tag: "author", quickTime: .quickTimeMetadataKeyAuthor),
        Entry(common: .commonKeyDescription, tag: "description", quickTime: .quickTimeMetadataKeyDescription),
        Entry(common: .commonKeyCopyrights, tag: "copyright", quickTime: .quickTimeMetadataKeyCopyright),
        Entry(common: .commonKeyArtist, tag: "artist", quickTime: nil),
        Entry(common: .commonKeyAlbumName, tag: "album", quickTime: nil),
    ]

    /// The common key an item maps to.
    static func commonKey(forKey key: String, keySpace: AVMetadataKeySpace) -> AVMetadataKey? {
        switch keySpace {
        case .common: return AVMetadataKey(key)
        case .quickTimeMetadata: return entries.first { $0.quickTime?.rawValue == key }?.common
        default: return entries.first { $0.tag == key }?.common
        }
    }

    /// The container tags for a list of items: the user-data name and the QuickTime metadata key of each.
    static func tags(for items: [AVMetadataItem]) -> [String: String] {
        var tags: [String: String] = [:]
        for item in items {
            guard let value = tagValue(of: item) else { continue }
            if let common = item.commonKey, let entry = entries.first(where: { $0.common == common }) {
                tags[entry.tag] = value
                if let quickTime = entry.quickTime { tags[quickTime.rawValue] = value }
            } else if let key = item.keyString {
                tags[key] = value
            }
        }
        return tags
    }

    /// Items for the tags a file holds: one per common key (whichever name the file used), plus the rest in the
    /// QuickTime metadata key space.
    static func items(fromTags tags: [String: String]) -> [AVMetadataItem] {
        var items: [AVMetadataItem] = []
        var used: Set<String> = []
        for entry in entries {
            let names = [entry.quickTime?.rawValue, entry.tag].compactMap { $0 }
            guard let name = names.first(where: { tags[$0] != nil }), let raw = tags[name] else { continue }
            used.formUnion(names)
            let item = AVMutableMetadataItem()
            item.keySpace = entry.quickTime != nil ? .quickTimeMetadata : .quickTimeUserData
            item.key = NSString(string: entry.quickTime?.rawValue ?? entry.tag)
            item.value =
                entry.common == .commonKeyCreationDate
                ? (ISO8601Timestamp.date(from: raw).map { NSDate(timeIntervalSince1970: $0.timeIntervalSince1970) }
                    ?? NSString(string: raw))
                : NSString(string: raw)
            item.dataType =
                entry.common == .commonKeyLocation ? kCMMetadataDataType_QuickTimeMetadataLocation_ISO6709 : kCMMetadataBaseDataType_UTF8
            items.append(item)
        }
        // libavformat reports the file type box (brands) and the ISO 6709 `loci` copy of the location as tags too;
        // they are container bookkeeping, not metadata items (Apple's AVAsset does not list them).
        let bookkeeping: Set<String> = ["major_brand", "minor_version", "compatible_brands", "location-eng"]
        for (name, raw) in tags.sorted(by: { $0.key < $1.key }) where !used.contains(name) && !bookkeeping.contains(name) {
            let item = AVMutableMetadataItem()
            item.keySpace = name.hasPrefix("com.apple.quicktime.") ? .quickTimeMetadata : .quickTimeUserData
            item.key = NSString(string: name)
            item.value = NSString(string: raw)
            item.dataType = kCMMetadataBaseDataType_UTF8
            items.append(item)
        }
        return items
    }

    /// The string a container stores for an item's value; dates in ISO 8601 with a time zone.
    static func tagValue(of item: AVMetadataItem) -> String? {
        if let date = item.value as? NSDate {
            return ISO8601Timestamp.string(from: date as Date)
        }
        return item.stringValue
    }
}

/// An ISO 6709 location string (`+37.3349-122.0090/`), as QuickTime stores `©xyz` and Apple's location key.
public func ISO6709String(latitude: Double, longitude: Double, altitude: Double? = nil) -> String {
    var text = String(format: "%+08.4f%+09.4f", latitude, longitude)
    if let altitude { text += String(format: "%+.3f", altitude) }
    return text + "/"
}
