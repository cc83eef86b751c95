// Inspecting a recorded movie before sharing it: duration, track sizes, frame rate.
import OpenAVCaptureShim

struct AssetInspector {
    let asset: AVURLAsset

    init(url: URL) {
        asset = AVURLAsset(url: url)
    }

    var durationSeconds: Double {
        CMTimeGetSeconds(asset.duration)
    }

    var videoSize: CGSize? {
        guard let track = asset.tracks(withMediaType: .video).first else { return nil }
        let size = track.naturalSize.applying(track.preferredTransform)
        return CGSize(width: abs(size.width), height: abs(size.height))
    }

    var frameRate: Float {
        asset.tracks(withMediaType: .video).first?.nominalFrameRate ?? 0
    }

    var hasAudio: Bool {
        !asset.tracks(withMediaType: .audio).isEmpty
    }

    var title: String? {
        AVMetadataItem.metadataItems(from: asset.commonMetadata, withKey: AVMetadataKey.commonKeyTitle, keySpace: .common)
            .first?.stringValue
    }
}
