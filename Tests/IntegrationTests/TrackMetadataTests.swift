// Track-level metadata on AVAssetWriterInput: the track's name and language, read back by exiftool, MediaInfo and
// ffprobe from a movie copied (passthrough) from one ffmpeg made.

import Foundation
import OpenAVCapture
import OpenCoreMedia
import TestSupport
import Testing

@Suite("AVAssetWriterInput.metadata: the track's name and language", .serialized)
struct TrackMetadataTests {
    static func item(_ identifier: AVMetadataIdentifier, _ value: String) -> AVMetadataItem {
        let item = AVMutableMetadataItem()
        item.identifier = identifier
        item.value = NSString(string: value)
        return item
    }

    @Test("Titles become each track's udta name (exiftool Track1Name, MediaInfo Title); the language its mdhd's")
    func trackNamesAndLanguage() async throws {
        guard MediaTool.available([.ffprobe, .ffmpeg, .exiftool, .mediainfo], for: "TrackMetadataTests") else { return }
        let source = AVURLAsset(url: try PlayerMovie.url())
        let url = try scratchURL("track-metadata.mov", suite: "track-metadata-tests")
        let reader = try AVAssetReader(asset: source)
        let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
        var pairs: [(AVAssetReaderTrackOutput, AVAssetWriterInput)] = []
        for track in source.tracks {
            let output = AVAssetReaderTrackOutput(track: track, outputSettings: nil)
            reader.add(output)
            let hint = try #require(track.formatDescriptions.first as? CMFormatDescription)
            let input = AVAssetWriterInput(mediaType: track.mediaType, outputSettings: nil, sourceFormatHint: hint)
            input.expectsMediaDataInRealTime = false
            input.metadata =
                track.mediaType == .video
                ? [Self.item(.commonIdentifierTitle, "Camera A"), Self.item(.commonIdentifierLanguage, "fra")]
                : [Self.item(.quickTimeUserDataTrackName, "Lavalier")]
            writer.add(input)
            pairs.append((output, input))
        }
        #expect(reader.startReading())
        #expect(writer.startWriting(), "\(String(describing: writer.error))")
        writer.startSession(atSourceTime: .zero)
        for (output, input) in pairs {
            while let sample = output.copyNextSampleBuffer() {
                waitUntilReady(input)
                #expect(input.append(sample))
            }
            input.markAsFinished()
        }
        await writer.finishWriting()
        #expect(writer.status == .completed, "\(String(describing: writer.error))")

        let exif = try ExifToolReport(url)
        #expect(exif.string("Track1", "Track1Name") == "Camera A", "\(exif.tags)")
        #expect(exif.string("Track2", "Track2Name") == "Lavalier", "\(exif.tags)")
        let mediainfo = try MediaTool.mediainfo.run(["--Output=JSON", url.path])
        let json = try #require(try JSONSerialization.jsonObject(with: mediainfo.output) as? [String: Any])
        let tracks = try #require((json["media"] as? [String: Any])?["track"] as? [[String: Any]])
        let video = try #require(tracks.first { $0["@type"] as? String == "Video" })
        let audio = try #require(tracks.first { $0["@type"] as? String == "Audio" })
        #expect(video["Title"] as? String == "Camera A" && audio["Title"] as? String == "Lavalier", "\(tracks)")
        #expect(video["Language"] as? String == "fr", "\(video)")
        let probe = try FFprobeReport(url)
        #expect((probe.stream("video")?["tags"] as? [String: Any])?["language"] as? String == "fra")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
    }
}
