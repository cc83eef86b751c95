// AVURLAsset and AVAssetTrack reading back what AVAssetWriter wrote.

import Foundation
import OpenAVCapture
import OpenCoreMedia
import TestSupport
import Testing

@Suite("AVURLAsset reads back duration, tracks and metadata", .serialized)
struct AVURLAssetTests {
    @Test("A .mov from AVAssetWriter: duration, tracks, sizes, rates, transform, formats, metadata")
    func movie() async throws {
        let url = try writerScratchURL("asset.mov")
        var recipe = MovieRecipe(fileType: .mov)
        recipe.transform = CGAffineTransform(rotationAngle: .pi / 2)
        try await writeMovie(to: url, recipe)

        let asset = AVURLAsset(url: url)
        #expect(asset.url == url)
        #expect(asset.isReadable && asset.isPlayable)
        #expect(abs(asset.duration.seconds - 2) < 0.05, "\(asset.duration.seconds) s")
        #expect(asset.tracks.count == 2)
        #expect(asset.tracks.map(\.trackID) == [1, 2])

        let video = try #require(asset.tracks(withMediaType: .video).first)
        #expect(video.naturalSize == CGSize(width: 640, height: 480))
        #expect(video.nominalFrameRate == 30)
        #expect(video.preferredTransform == CGAffineTransform(rotationAngle: .pi / 2).rounded)
        #expect(video.timeRange.start == .zero)
        #expect(abs(video.timeRange.duration.seconds - 2) <= 1.0 / 30 + 1e-6)
        #expect(video.estimatedDataRate > 100_000, "\(video.estimatedDataRate) b/s")
        let videoFormat = try #require(video.formatDescriptions.first as? CMFormatDescription)
        #expect(videoFormat.mediaSubType == .h264)
        #expect(videoFormat.dimensions.width == 640 && videoFormat.dimensions.height == 480)
        #expect(asset.track(withTrackID: video.trackID) === video)

        let audio = try #require(asset.tracks(withMediaType: .audio).first)
        #expect(audio.nominalFrameRate == 0)
        #expect(audio.naturalSize == .zero)
        let audioFormat = try #require(audio.formatDescriptions.first as? CMFormatDescription)
        #expect(audioFormat.mediaSubType == .mpeg4AAC)
        #expect(audioFormat.audioStreamBasicDescription?.mSampleRate == 48_000)
        #expect(audioFormat.audioStreamBasicDescription?.mChannelsPerFrame == 2)
        #expect(audio.estimatedDataRate > 64_000, "\(audio.estimatedDataRate) b/s")

        let common = asset.commonMetadata
        let title = AVMetadataItem.metadataItems(from: common, filteredByIdentifier: .commonIdentifierTitle)
        #expect(title.first?.stringValue == "Tour Eiffel")
        let location = AVMetadataItem.metadataItems(from: common, filteredByIdentifier: .commonIdentifierLocation)
        #expect(location.first?.stringValue == writerTestLocation)
        let quickTimeLocation = AVMetadataItem.metadataItems(
            from: asset.metadata, filteredByIdentifier: .quickTimeMetadataLocationISO6709)
        #expect(quickTimeLocation.first?.stringValue == writerTestLocation)
    }

    @Test("An audio-only .m4a: one audio track, no video")
    func audioOnly() async throws {
        let url = try writerScratchURL("asset.m4a")
        var recipe = MovieRecipe(fileType: .m4a)
        recipe.hasVideo = false
        try await writeMovie(to: url, recipe)
        let asset = AVURLAsset(url: url)
        #expect(asset.tracks(withMediaType: .video).isEmpty)
        #expect(asset.tracks(withMediaType: .audio).count == 1)
        #expect(abs(asset.duration.seconds - 2) < 0.05, "\(asset.duration.seconds) s")
    }

    @Test("AVURLAssetPreferPreciseDurationAndTimingKey: the duration is the container's exact one, as ffprobe reads it")
    func preciseTiming() async throws {
        guard MediaTool.available(for: "AVURLAssetTests.preciseTiming") else { return }
        let url = try writerScratchURL("precise.mov")
        try await writeMovie(to: url, MovieRecipe(fileType: .mov))
        let precise = AVURLAsset(url: url, options: [AVURLAssetPreferPreciseDurationAndTimingKey: true])
        let probed = try #require(FFprobeReport.number(try FFprobeReport(url).format["duration"]))
        #expect(abs(precise.duration.seconds - probed) < 0.001, "\(precise.duration.seconds) s, ffprobe \(probed) s")
        #expect(precise.duration == AVURLAsset(url: url).duration)
    }

    @Test("A file that is not there: not readable, no tracks, duration invalid")
    func missingFile() throws {
        let asset = AVURLAsset(url: try writerScratchURL("missing.mov"))
        #expect(!asset.isReadable)
        #expect(asset.tracks.isEmpty)
        #expect(!asset.duration.isValid)
        #expect(asset.metadata.isEmpty)
    }
}

extension CGAffineTransform {
    /// The transform with entries within 1e-9 of a whole number made whole (a rotation's cosine of 90°).
    fileprivate var rounded: CGAffineTransform {
        func whole(_ value: CGFloat) -> CGFloat { abs(value - value.rounded()) < 1e-9 ? value.rounded() : value }
        return CGAffineTransform(a: whole(a), b: whole(b), c: whole(c), d: whole(d), tx: whole(tx), ty: whole(ty))
    }
}
