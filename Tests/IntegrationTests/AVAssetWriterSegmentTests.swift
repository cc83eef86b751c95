// AVAssetWriter(contentType:) handing fragmented MPEG-4 and CMAF segments to its delegate: the segments joined and
// read by ffprobe and mediainfo, written as an HLS stream and played by ffmpeg and GStreamer's hlsdemux.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Testing
import TestSupport

private func segmentWriter(_ profile: AVFileTypeProfile?, interval: CMTime, delegate: any AVAssetWriterDelegate)
    -> AVAssetWriter
{
    let writer = AVAssetWriter(contentType: UTType(AVFileType.mp4.rawValue)!)
    writer.outputFileTypeProfile = profile
    writer.preferredOutputSegmentInterval = interval
    writer.initialSegmentStartTime = CMTime(value: 10, timescale: 1)
    writer.delegate = delegate
    return writer
}

/// Checks `segments`: one initialization segment (`ftyp`+`moov`) first, then media segments (`moof`+`mdat`) whose
/// reports match what ffprobe reads from them joined: each begins with a key frame at the reported time, the first
/// video sample's bytes where the report says. Returns the joined file.
private func expectWellFormed(_ segments: [SegmentCollector.Received], in directory: URL) throws -> URL {
    try #require(segments.count >= 2, "\(segments.count) segments")
    #expect(segments[0].type == .initialization && segments[0].report == nil)
    #expect(topLevelBoxes(segments[0].data).map(\.type) == ["ftyp", "moov"])
    var starts: [Int] = []
    var joined = Data()
    for segment in segments {
        starts.append(joined.count)
        joined.append(segment.data)
    }
    let url = directory.appendingPathComponent("joined.mp4")
    try joined.write(to: url)
    let packets = try probedPackets(url)
    for (index, segment) in segments.enumerated().dropFirst() {
        #expect(segment.type == .separable)
        #expect(topLevelBoxes(segment.data).map(\.type) == ["moof", "mdat"], "segment \(index)")
        let range = starts[index]..<starts[index] + segment.data.count
        let first = try #require(packets.first { range.contains($0.position) }, "no video in segment \(index)")
        #expect(first.isKey, "segment \(index) starts with a frame that is not a key frame")
        let report = try #require(segment.report?.trackReports.first { $0.mediaType == .video })
        #expect(report.trackID == 1)
        #expect(abs(report.earliestPresentationTimeStamp.seconds - first.presentationTime) < 0.001)
        let sample = try #require(report.firstVideoSampleInformation)
        #expect(sample.isSyncSample)
        #expect(starts[index] + sample.offset == first.position, "segment \(index): the first sample's offset")
        #expect(sample.length == first.size, "segment \(index): the first sample's length")
        let inSegment = packets.filter { range.contains($0.position) }
        #expect(abs(report.duration.seconds - Double(inSegment.count) / 30) < 0.001, "segment \(index) duration")
    }
    return url
}

/// AAC at 48 kHz, stereo.
private func aacSettings() -> [String: Any] {
    [AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: 48_000, AVNumberOfChannelsKey: 2]
}

@Suite("AVAssetWriter segment output: fragmented MPEG-4 and CMAF for HLS", .serialized)
struct AVAssetWriterSegmentTests {
    @Test("HLS profile: 1 s segments at each key frame; ffprobe, mediainfo, ffmpeg and GStreamer read them")
    func hlsSegments() async throws {
        guard MediaTool.available([.ffprobe, .ffmpeg], for: "AVAssetWriterSegmentTests.hlsSegments") else { return }
        let directory = try scratchURL("hls", suite: "writer-segments")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let collector = SegmentCollector()
        let writer = segmentWriter(.mpeg4AppleHLS, interval: CMTime(value: 1, timescale: 1), delegate: collector)
        let title = AVMutableMetadataItem()
        title.identifier = .commonIdentifierTitle
        title.value = NSString(string: "Segmented")
        writer.metadata = [title]
        try await feedSegmentWriter(writer, SegmentRecipe())
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        let segments = collector.segments
        #expect(segments.count == 4, "an initialization segment and three 1 s segments of 90 frames")
        let joined = try expectWellFormed(segments, in: directory)

        // Every frame, at its source time, a key frame every 30.
        let packets = try probedPackets(joined)
        #expect(packets.count == 90)
        for (index, packet) in packets.sorted(by: { $0.presentationTime < $1.presentationTime }).enumerated() {
            #expect(abs(packet.presentationTime - (10 + Double(index) / 30)) < 0.001, "frame \(index)")
            #expect(packet.isKey == (index % 30 == 0), "frame \(index)")
        }
        let format = try MediaTool.ffprobe.run([
            "-v", "error", "-show_entries", "format_tags=major_brand,compatible_brands", "-of", "csv=p=0", joined.path,
        ]).outputText
        #expect(format.contains("iso5") && format.contains("iso6") && !format.contains("cmfc"), "\(format)")
        let tagged = try MediaTool.ffprobe.run([
            "-v", "error", "-show_entries", "format_tags=title", "-of", "csv=p=0", joined.path,
        ]).outputText
        #expect(tagged.trimmingCharacters(in: .whitespacesAndNewlines) == "Segmented", "the writer's metadata: \(tagged)")
        if MediaTool.mediainfo.isInstalled {
            let info = try MediaTool.mediainfo.run(["--Inform=Video;%Format%,%FrameCount%", joined.path]).outputText
            #expect(info.trimmingCharacters(in: .whitespacesAndNewlines) == "AVC,90", "mediainfo: \(info)")
        } else {
            print("Skipping the mediainfo check: /usr/bin/mediainfo not installed (make test installs it)")
        }

        // As an HLS stream: ffmpeg decodes every frame; GStreamer's hlsdemux shows them in order.
        let playlist = try writeHLSStream(segments, in: directory)
        let decoded = try MediaTool.ffmpeg.run([
            "-v", "error", "-i", playlist.path, "-map", "0:v", "-f", "framemd5", "-",
        ])
        try #require(decoded.status == 0, "ffmpeg: \(decoded.error)")
        #expect(decoded.outputText.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("#") }.count == 90)
        if let indices = try gstreamerFrameIndices(playlist, width: 320, height: 240) {
            #expect(indices.count == 90, "GStreamer decoded \(indices.count) pictures")
            let read = indices.compactMap { $0 }
            #expect(read == read.sorted() && Set(read).count == read.count, "frame indices out of order: \(read)")
            #expect(read.count >= 85, "\(read.count) of 90 pictures carry a readable index")
        }
    }

    @Test("CMAF profile with sound: brands iso6 and cmfc, an audio track report beside the video's")
    func cmafWithSound() async throws {
        guard MediaTool.available([.ffprobe], for: "AVAssetWriterSegmentTests.cmafWithSound") else { return }
        let directory = try scratchURL("cmaf", suite: "writer-segments")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let collector = SegmentCollector()
        let writer = segmentWriter(.mpeg4CMAFCompliant, interval: CMTime(value: 1, timescale: 1), delegate: collector)
        try await feedSegmentWriter(writer, SegmentRecipe(withAudio: true))
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        let segments = collector.segments
        let joined = try expectWellFormed(segments, in: directory)
        let format = try MediaTool.ffprobe.run([
            "-v", "error", "-show_entries", "format_tags=major_brand,compatible_brands", "-of", "csv=p=0", joined.path,
        ]).outputText
        #expect(format.hasPrefix("iso6,") && format.contains("cmfc"), "\(format)")
        for segment in segments.dropFirst() {
            let audio = try #require(segment.report?.trackReports.first { $0.mediaType == .audio })
            #expect(audio.trackID == 2 && audio.firstVideoSampleInformation == nil)
            #expect(audio.duration.seconds > 0.5, "\(audio.duration.seconds) s of sound")
        }
        let sound = try probedPackets(joined, stream: "a:0")
        #expect(sound.count >= 130, "\(sound.count) AAC packets for 3 s at 48 kHz")
    }

    @Test("preferredOutputSegmentInterval .indefinite: a segment at each flushSegment(), the rest at the finish")
    func flushedSegments() async throws {
        guard MediaTool.available([.ffprobe], for: "AVAssetWriterSegmentTests.flushedSegments") else { return }
        let directory = try scratchURL("flushed", suite: "writer-segments")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let collector = SegmentCollector()
        let writer = segmentWriter(nil, interval: .indefinite, delegate: collector)
        try await feedSegmentWriter(
            writer, SegmentRecipe(frames: 40, keyFrameInterval: 10, flushBefore: [10, 20, 30]))
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        let segments = collector.segments
        #expect(segments.count == 5, "the initialization segment and one per flush, plus the last")
        _ = try expectWellFormed(segments, in: directory)
    }

    @Test("A flush before a frame that is not a key frame fails the writer: AVError.segmentStartedWithNonSyncSample")
    func flushBeforeNonKeyFrame() async throws {
        let collector = SegmentCollector()
        let writer = segmentWriter(nil, interval: .indefinite, delegate: collector)
        try await feedSegmentWriter(writer, SegmentRecipe(frames: 40, keyFrameInterval: 30, flushBefore: [10]))
        #expect(writer.status == .failed)
        #expect((writer.error as? AVError)?.code == .segmentStartedWithNonSyncSample, "\(String(describing: writer.error))")
        #expect(collector.segments.first?.type == .initialization)
    }

    @Test("A delegate with only the method without a report receives every segment")
    func plainDelegate() async throws {
        let collector = PlainSegmentCollector()
        let writer = segmentWriter(.mpeg4AppleHLS, interval: CMTime(value: 1, timescale: 1), delegate: collector)
        try await feedSegmentWriter(writer, SegmentRecipe(frames: 60))
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        #expect(collector.types == [.initialization, .separable, .separable])
    }

    @Test("Misconfigured segment writers fail to start with AVError.incorrectlyConfigured")
    func misconfigured() {
        let noDelegate = AVAssetWriter(contentType: .mpeg4Movie)
        noDelegate.add(AVAssetWriterInput(mediaType: .audio, outputSettings: aacSettings()))
        #expect(!noDelegate.startWriting())
        #expect((noDelegate.error as? AVError)?.code == .incorrectlyConfigured)

        let collector = SegmentCollector()
        let movie = AVAssetWriter(contentType: .quickTimeMovie)
        movie.delegate = collector
        movie.add(AVAssetWriterInput(mediaType: .audio, outputSettings: aacSettings()))
        #expect(!movie.startWriting(), "QuickTime movies are not segment output")
        #expect((movie.error as? AVError)?.code == .incorrectlyConfigured)
        #expect(movie.outputFileType == .mov)
        #expect(UTType("com.example.nothing") == nil)
    }

    @Test("Traps as Apple raises: an undeclared content type, flushSegment() on a file writer or a timed interval")
    func traps() async {
        await #expect(processExitsWith: .failure) {
            _ = AVAssetWriter(contentType: .image)
        }
        await #expect(processExitsWith: .failure) {
            // A name of its own: with a leftover file of a reused process id, `try!` would trap for that instead.
            let url = URL(fileURLWithPath: NSTemporaryDirectory() + "flush-\(UUID().uuidString).mp4")
            let writer = try! AVAssetWriter(outputURL: url, fileType: .mp4)
            writer.flushSegment()
        }
        await #expect(processExitsWith: .failure) {
            let writer = AVAssetWriter(contentType: .mpeg4Movie)
            writer.preferredOutputSegmentInterval = CMTime(value: 2, timescale: 1)
            writer.flushSegment()
        }
        await #expect(processExitsWith: .failure) {
            final class Quiet: NSObject, AVAssetWriterDelegate, @unchecked Sendable {}
            let writer = AVAssetWriter(contentType: .mpeg4Movie)
            let quiet = Quiet()
            writer.delegate = quiet
            writer.add(AVAssetWriterInput(mediaType: .audio, outputSettings: aacSettings()))
            _ = writer.startWriting()
            writer.preferredOutputSegmentInterval = .indefinite
        }
    }
}
