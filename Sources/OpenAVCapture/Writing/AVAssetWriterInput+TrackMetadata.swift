// Track-level metadata: what of an input's `metadata` the movie's track stores, and how it gets there.

import Foundation
import MediaCodecs

extension AVAssetWriterInput {
    /// The track tags for ``metadata``: the title (common key title, the QuickTime user data track name
    /// `udta/tnam`, the QuickTime metadata title) as the track's name, written by libavformat as the track's
    /// `udta`/`name` atom (exiftool's `Track1Name`, MediaInfo's Title), and the common key language (ISO 639-2,
    /// e.g. "fra") in the track's media header. Other items are kept on the input but not written: libavformat 5.1
    /// writes no other track-level tag.
    var trackTags: [(key: String, value: String)] {
        var tags: [(key: String, value: String)] = []
        for item in metadata {
            guard let value = item.stringValue, !value.isEmpty else { continue }
            let identifier = item.identifier?.rawValue ?? ""
            if item.commonKey == .commonKeyTitle || identifier == "udta/tnam" || identifier == "udta/name" {
                tags.removeAll { $0.key == "title" }
                tags.append((key: "title", value: value))
            } else if item.commonKey == .commonKeyLanguage, value.count == 3,
                value.allSatisfy({ $0.isASCII && $0.isLetter })
            {
                tags.removeAll { $0.key == "language" }
                tags.append((key: "language", value: value.lowercased()))
            }
        }
        return tags
    }
}

extension WriterPipeline {
    /// Gives each track its tags (one list per input, in order), before writing starts.
    func setTrackTags(_ tags: [[(key: String, value: String)]]) throws(MediaCodecsError) {
        for (index, trackTags) in tags.enumerated() where index < tracks.count && !trackTags.isEmpty {
            try muxer.setStreamMetadata(trackTags, stream: tracks[index].stream)
        }
    }
}
