// What the segment writer tests share: a delegate that keeps every segment, a writer fed with the virtual camera's
// numbered frames (and the virtual microphone's sound), a walk over ISO BMFF boxes, and an HLS playlist on disk.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import TestSupport
import Testing

/// Keeps every segment an `AVAssetWriter` hands over, in order.
final class SegmentCollector: NSObject, AVAssetWriterDelegate, @unchecked Sendable {
    struct Received {
        var data: Data
        var type: AVAssetSegmentType
        var report: AVAssetSegmentReport?
    }

    private let received = Mutex<[Received]>([])
    var segments: [Received] { received.withLock { $0 } }

    func assetWriter(
        _ writer: AVAssetWriter, didOutputSegmentData segmentData: Data, segmentType: AVAssetSegmentType,
        segmentReport: AVAssetSegmentReport?
    ) {
        received.withLock { $0.append(Received(data: segmentData, type: segmentType, report: segmentReport)) }
    }
}

/// A delegate that implements only the method without a report, as some apps do.
final class PlainSegmentCollector: NSObject, AVAssetWriterDelegate, @unchecked Sendable {
    private let received = Mutex<[AVAssetSegmentType]>([])
    var types: [AVAssetSegmentType] { received.withLock { $0 } }

    func assetWriter(_ writer: AVAssetWriter, didOutputSegmentData segmentData: Data, segmentType: AVAssetSegmentType) {
        received.withLock { $0.append(segmentType) }
    }
}

/// How a segment writer test feeds its writer.
struct SegmentRecipe {
    var frames = 90
    var width = 320
    var height = 240
    var keyFrameInterval = 30
    var withAudio = false
    /// The source time of frame 0 (and the session's start).
    var start = CMTime(value: 10, timescale: 1)
    /// Calls `flushSegment()` before each of these frames.
    var flushBefore: Set<Int> = []
}

/// Makes inputs on `writer`, starts it and appends `recipe`'s frames (30 fps, the virtual camera's numbered pictures)
/// and, when asked, the virtual microphone's sound as AAC; finishes the writer.
func feedSegmentWriter(_ writer: AVAssetWriter, _ recipe: SegmentRecipe) async throws {
    let video = AVAssetWriterInput(
        mediaType: .video,
        outputSettings: [
            AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: recipe.width, AVVideoHeightKey: recipe.height,
            AVVideoCompressionPropertiesKey: [AVVideoMaxKeyFrameIntervalKey: recipe.keyFrameInterval],
        ])
    let adaptor = AVAssetWriterInputPixelBufferAdaptor(
        assetWriterInput: video,
        sourcePixelBufferAttributes: [
            kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
            kCVPixelBufferWidthKey: recipe.width, kCVPixelBufferHeightKey: recipe.height,
        ])
    writer.add(video)
    var audio: AVAssetWriterInput?
    if recipe.withAudio {
        let input = AVAssetWriterInput(
            mediaType: .audio,
            outputSettings: [
                AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: 48_000, AVNumberOfChannelsKey: 2,
                AVEncoderBitRateKey: 96_000,
            ])
        writer.add(input)
        audio = input
    }
    try #require(writer.startWriting(), "\(String(describing: writer.error))")
    writer.startSession(atSourceTime: recipe.start)
    let frames = VirtualFrameSource(width: recipe.width, height: recipe.height, frameRate: 30)
    let sound = VirtualSoundSource(sampleRate: 48_000, channelCount: 2)
    let pool = try #require(adaptor.pixelBufferPool)
    var samples: Int64 = 0
    for index in 0..<recipe.frames {
        if recipe.flushBefore.contains(index) { writer.flushSegment() }
        var created: CVPixelBuffer?
        CVPixelBufferPoolCreatePixelBuffer(nil, pool, &created)
        let buffer = try #require(created)
        frames.render(frameIndex: UInt32(index), into: buffer)
        // A writer that failed never gets ready again: stop feeding it.
        _ = await waitUntil(timeout: 5) { video.isReadyForMoreMediaData || writer.status != .writing }
        guard writer.status == .writing else { break }
        // A writer that fails between the check above and this append (a flush's fault is found on the writer's own
        // queue, as the frame after it is written) refuses the frame, as Apple's does; any other refusal is a fault.
        let appended = adaptor.append(
            buffer, withPresentationTime: recipe.start + CMTime(value: Int64(index), timescale: 30))
        #expect(appended || writer.status == .failed, "frame \(index) refused: \(String(describing: writer.error))")
        if let audio {
            let until = Int64(index + 1) * 1600
            while samples < until {
                let count = Int(min(1024, until - samples))
                waitUntilReady(audio)
                let time = recipe.start + CMTime(value: samples, timescale: 48_000)
                let appended = audio.append(try makeSoundBuffer(sound, first: samples, count: count, at: time))
                #expect(appended || writer.status == .failed, "sound at \(samples) refused")
                samples += Int64(count)
            }
        }
    }
    video.markAsFinished()
    audio?.markAsFinished()
    await writer.finishWriting()
}

/// The top-level boxes of ISO BMFF bytes: type and byte range.
func topLevelBoxes(_ data: Data) -> [(type: String, range: Range<Int>)] {
    let bytes = [UInt8](data)
    var boxes: [(type: String, range: Range<Int>)] = []
    var at = 0
    while at + 8 <= bytes.count {
        let size = bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
        guard size >= 8, at + size <= bytes.count else { break }
        boxes.append((String(decoding: bytes[at + 4..<at + 8], as: UTF8.self), at..<at + size))
        at += size
    }
    return boxes
}

/// One packet as ffprobe reads it from a file.
struct ProbedPacket {
    var presentationTime: Double
    var position: Int
    var size: Int
    var isKey: Bool
}

/// The packets of `stream` ("v:0", "a:0") of `url`, in file order, as ffprobe reads them.
func probedPackets(_ url: URL, stream: String = "v:0") throws -> [ProbedPacket] {
    let result = try MediaTool.ffprobe.run([
        "-v", "error", "-select_streams", stream, "-show_entries", "packet=pts_time,pos,size,flags", "-of", "csv=p=0",
        url.path,
    ])
    try #require(result.status == 0, "ffprobe failed: \(result.error)")
    return result.outputText.split(whereSeparator: \.isNewline).compactMap { line in
        let fields = line.split(separator: ",").map(String.init)
        guard fields.count >= 4, let time = Double(fields[0]), let size = Int(fields[1]), let position = Int(fields[2])
        else { return nil }
        return ProbedPacket(presentationTime: time, position: position, size: size, isKey: fields[3].hasPrefix("K"))
    }
}

/// Writes `segments` (initialization first) as an HLS stream in `directory`: `init.mp4`, `segment-N.m4s` and a
/// playlist whose durations come from the segment reports; returns the playlist's URL.
func writeHLSStream(_ segments: [SegmentCollector.Received], in directory: URL) throws -> URL {
    try segments[0].data.write(to: directory.appendingPathComponent("init.mp4"))
    var lines = [
        "#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:2", "#EXT-X-PLAYLIST-TYPE:VOD",
        "#EXT-X-INDEPENDENT-SEGMENTS", "#EXT-X-MAP:URI=\"init.mp4\"",
    ]
    for (index, segment) in segments.dropFirst().enumerated() {
        let name = "segment-\(index).m4s"
        try segment.data.write(to: directory.appendingPathComponent(name))
        let video = segment.report?.trackReports.first { $0.mediaType == .video }
        lines += ["#EXTINF:\(String(format: "%.5f", video?.duration.seconds ?? 1)),", name]
    }
    lines.append("#EXT-X-ENDLIST")
    let playlist = directory.appendingPathComponent("stream.m3u8")
    try (lines.joined(separator: "\n") + "\n").write(to: playlist, atomically: true, encoding: .utf8)
    return playlist
}

/// The virtual camera's frame indices GStreamer decodes from `playlist` (filesrc → hlsdemux → qtdemux → avdec_h264,
/// as GRAY8 pictures); nil when gst-launch-1.0 is not installed.
func gstreamerFrameIndices(_ playlist: URL, width: Int, height: Int) throws -> [UInt32?]? {
    let launch = "/usr/bin/gst-launch-1.0"
    guard FileManager.default.isExecutableFile(atPath: launch) else {
        print("Skipping the GStreamer read-back: \(launch) not installed (make test installs gstreamer1.0-tools)")
        return nil
    }
    let raw = playlist.deletingLastPathComponent().appendingPathComponent("gstreamer.gray")
    let result = try ToolResult.run(
        executable: launch,
        [
            "-q", "filesrc", "location=\(playlist.path)", "!", "hlsdemux", "!", "qtdemux", "!", "h264parse", "!",
            "avdec_h264", "!", "videoconvert", "!", "video/x-raw,format=GRAY8", "!", "filesink", "location=\(raw.path)",
        ])
    try #require(result.status == 0, "gst-launch-1.0 failed: \(result.error)")
    let pictures = [UInt8](try Data(contentsOf: raw))
    let size = width * height
    return stride(from: 0, to: pictures.count - size + 1, by: size).map { start in
        VirtualFrameReader.readFrameIndex(fromLuma: Array(pictures[start..<start + size]), width: width, height: height)
    }
}
