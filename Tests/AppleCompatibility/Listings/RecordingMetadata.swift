// Stamping a recording with title, creation date and location metadata.
import OpenAVCaptureShim

enum RecordingMetadata {
    static func items(title: String, latitude: Double, longitude: Double) -> [AVMetadataItem] {
        let titleItem = AVMutableMetadataItem()
        titleItem.identifier = .commonIdentifierTitle
        titleItem.value = title as NSString
        titleItem.extendedLanguageTag = "und"

        let dateItem = AVMutableMetadataItem()
        dateItem.keySpace = .common
        dateItem.key = AVMetadataKey.commonKeyCreationDate.rawValue as NSString
        dateItem.value = ISO8601DateFormatter().string(from: Date()) as NSString

        let locationItem = AVMutableMetadataItem()
        locationItem.identifier = .quickTimeMetadataLocationISO6709
        locationItem.value = String(format: "%+08.4f%+09.4f/", latitude, longitude) as NSString
        return [titleItem, dateItem, locationItem]
    }

    static func apply(to output: AVCaptureMovieFileOutput, title: String) {
        output.metadata = items(title: title, latitude: 0, longitude: 0)
    }
}
