// Keeping a portrait clip upright when it is copied into a composition (the usual "fix orientation" helper).
import OpenAVCaptureShim

enum CompositionOrientation {
    static func uprightComposition(of asset: AVAsset) async throws -> AVMutableComposition {
        let composition = AVMutableComposition()
        guard let source = try await asset.loadTracks(withMediaType: .video).first,
            let track = composition.addMutableTrack(
                withMediaType: .video, preferredTrackID: kCMPersistentTrackID_Invalid)
        else { return composition }
        let duration = try await asset.load(.duration)
        try track.insertTimeRange(CMTimeRange(start: .zero, duration: duration), of: source, at: .zero)
        track.preferredTransform = try await source.load(.preferredTransform)
        return composition
    }

    static func turnQuarter(_ track: AVMutableCompositionTrack) {
        track.preferredTransform = track.preferredTransform.rotated(by: .pi / 2)
    }
}
