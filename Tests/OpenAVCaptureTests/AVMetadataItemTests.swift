import Foundation
@testable import OpenAVCapture
import Testing

/// Metadata items: identifiers, typed values, and the mapping to container tags and back.
@Suite struct AVMetadataItemTests {
    @Test func identifiersJoinKeySpaceAndKey() {
        #expect(AVMetadataItem.identifier(forKey: AVMetadataKey.commonKeyTitle, keySpace: .common) == .commonIdentifierTitle)
        #expect(
            AVMetadataItem.identifier(forKey: "com.apple.quicktime.location.ISO6709", keySpace: .quickTimeMetadata)
                == .quickTimeMetadataLocationISO6709)
        let item = AVMutableMetadataItem()
        item.identifier = .quickTimeMetadataLocationISO6709
        #expect(item.keySpace == .quickTimeMetadata)
        #expect(item.key as? NSString == "com.apple.quicktime.location.ISO6709")
        #expect(item.commonKey == .commonKeyLocation)
    }

    @Test func valuesReadAsEveryType() {
        let item = AVMutableMetadataItem()
        item.keySpace = .common
        item.key = AVMetadataKey.commonKeyCreationDate.rawValue as NSString
        item.value = "2026-11-21T21:47:45Z" as NSString
        #expect(item.dateValue == Date(timeIntervalSince1970: 1_795_297_665))
        #expect(item.identifier == .commonIdentifierCreationDate)
        item.value = NSNumber(value: 42.5)
        #expect(item.numberValue == 42.5 && item.stringValue == "42.5" && item.dataValue == nil)
        item.value = NSData(data: Data([1, 2]))
        #expect(item.dataValue == Data([1, 2]) && item.stringValue == nil)
    }

    @Test func filteringByIdentifierAndKey() {
        let title = AVMutableMetadataItem()
        title.identifier = .commonIdentifierTitle
        title.value = "Robot run" as NSString
        let location = AVMutableMetadataItem()
        location.identifier = .quickTimeMetadataLocationISO6709
        location.value = ISO6709String(latitude: 48.8584, longitude: 2.2945) as NSString
        let items = [title, location]
        #expect(AVMetadataItem.metadataItems(from: items, filteredByIdentifier: .commonIdentifierTitle) == [title])
        #expect(AVMetadataItem.metadataItems(from: items, withKey: nil, keySpace: .quickTimeMetadata) == [location])
        #expect(location.stringValue == "+48.8584+002.2945/")
    }

    @Test func tagsCarryBothNamesAndReadBack() {
        let title = AVMutableMetadataItem()
        title.keySpace = .common
        title.key = "title" as NSString
        title.value = "Robot run" as NSString
        let location = AVMutableMetadataItem()
        location.identifier = .quickTimeMetadataLocationISO6709
        location.value = "+48.8584+002.2945/" as NSString
        let tags = MetadataKeyMapping.tags(for: [title, location])
        #expect(tags["title"] == "Robot run" && tags["com.apple.quicktime.title"] == "Robot run")
        #expect(tags["location"] == "+48.8584+002.2945/" && tags["com.apple.quicktime.location.ISO6709"] == "+48.8584+002.2945/")
        // A file written by another tool may carry only the user-data name.
        let items = MetadataKeyMapping.items(fromTags: ["location": "+48.8584+002.2945/", "title": "Robot run", "custom": "x"])
        #expect(items.first { $0.commonKey == .commonKeyLocation }?.stringValue == "+48.8584+002.2945/")
        #expect(items.first { $0.commonKey == .commonKeyTitle }?.stringValue == "Robot run")
        #expect(items.contains { $0.keyString == "custom" })
    }
}
