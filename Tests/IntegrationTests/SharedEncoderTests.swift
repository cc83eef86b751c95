// One H.264 encoder for a publishing output and a movie file output on the same camera: the movie's video packets
// are the publishing output's own (byte for byte, read back by ffprobe from both files), the movie starts at a key
// frame the recording asked for, and it records on when the publishing output leaves the session.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import TestSupport
import Testing

/// The video packets of `url`, in decode order: the MD5 of each packet's bytes and whether it is a key frame.
private func videoPackets(_ url: URL) throws -> [(hash: String, isKey: Bool)] {
    let result = try MediaTool.ffprobe.run([
        "-v", "error", "-select_streams", "v:0", "-show_data_hash", "MD5", "-show_entries", "packet=flags,data_hash",
        "-of", "csv=p=0", url.path,
    ])
    try #require(result.status == 0, "ffprobe failed: \(result.error)")
    return result.outputText.split(separator: "\n").compactMap { line in
        let fields = line.split(separator: ",").map(String.init)
        guard let flags = fields.first(where: { $0.hasPrefix("K") || $0.hasPrefix("_") }),
            let hash = fields.first(where: { $0.hasPrefix("MD5:") })
        else { return nil }
        return (hash, flags.hasPrefix("K"))
    }
}

/// Where `part` appears in `whole` as one contiguous run, or nil.
private func position(of part: [String], in whole: [String]) -> Int? {
    guard !part.isEmpty, part.count <= whole.count else { return nil }
    return (0...(whole.count - part.count)).first { Array(whole[$0..<$0 + part.count]) == part }
}

@Suite("A movie file output sharing a publishing output's encoder", .serialized)
struct SharedEncoderTests {
    /// A session publishing HLS (with the whole published stream kept in `published.mov`) and recording `movie`.
    private struct Rig {
        let directory: URL
        let publisher: AVCapturePublishingOutput
        let movie = AVCaptureMovieFileOutput()
        let session: AVCaptureSession
        var published: URL { directory.appendingPathComponent("published.mov") }

        init(_ name: String) throws {
            directory = try scratchURL(name, suite: "shared-encoder-tests")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            publisher = AVCapturePublishingOutput(url: directory.appendingPathComponent("live.m3u8").path)
            publisher.segmentDuration = 1
            publisher.playlistSize = 100
            // A rate of its own, unlike the movie output's defaults: the movie carries it only if it shares.
            publisher.videoBitRate = 300_000
            publisher.recordingURL = directory.appendingPathComponent("published.mov")
            session = try makeSession(
                preset: .qvga320x240, devices: [VirtualDevices.back, VirtualDevices.microphone],
                outputs: [publisher, movie])
        }

        /// Publishes for a while (past the stream's first GOP), then records `frames` frames into `name`.
        func record(_ name: String, frames: Int, whileRecording: () -> Void = {}) throws -> URL {
            session.startRunning()
            #expect(waitUntil(timeout: 15, every: 0.02) { publisher.statistics.videoPacketsSent >= 45 })
            let url = directory.appendingPathComponent(name)
            let delegate = MovieRecordingDelegate()
            movie.startRecording(to: url, recordingDelegate: delegate)
            #expect(delegate.waitForStart())
            whileRecording()
            #expect(waitUntil(timeout: 20, every: 0.02) { movie.recordingStatistics.videoFramesWritten >= frames })
            movie.stopRecording()
            #expect(delegate.waitForFinish())
            #expect(delegate.error == nil, "\(String(describing: delegate.error))")
            publisher.stopPublishing()
            session.stopRunning()
            #expect(publisher.recordingError == nil, "\(String(describing: publisher.recordingError))")
            return url
        }
    }

    @Test("The movie's video is the published stream's packets, from a key frame forced at the recording's start")
    func movieTakesThePublishedPackets() throws {
        guard MediaTool.available(for: "SharedEncoderTests.movieTakesThePublishedPackets") else { return }
        let rig = try Rig("shared")
        let url = try rig.record("movie.mov", frames: 60)
        let moviePackets = try videoPackets(url)
        let publishedPackets = try videoPackets(rig.published)
        try #require(moviePackets.count >= 60, "\(moviePackets.count) packets in the movie")
        #expect(moviePackets[0].isKey, "the movie does not start at a key frame")
        let start = try #require(
            position(of: moviePackets.map(\.hash), in: publishedPackets.map(\.hash)),
            "the movie's packets are not a run of the published stream's")
        // The published stream has a key frame where the movie starts: the recording asked the shared encoder for it.
        #expect(publishedPackets[start].isKey)
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        let indices = try decodedFrameIndices(url)
        #expect(indexSteps(indices).isEmpty, "the movie's frame indices jump: \(indexSteps(indices))")
        let probe = try FFprobeReport(url)
        #expect(probe.stream("audio")?["codec_name"] as? String == "aac")
    }

    @Test("A movie asking for compression properties of its own encodes its own stream")
    func ownSettingsKeepAnOwnEncoder() throws {
        guard MediaTool.available(for: "SharedEncoderTests.ownSettingsKeepAnOwnEncoder") else { return }
        let rig = try Rig("own")
        let connection = try #require(rig.movie.connection(with: .video))
        rig.movie.setOutputSettings(
            [
                AVVideoCodecKey: AVVideoCodecType.h264,
                AVVideoCompressionPropertiesKey: [AVVideoAverageBitRateKey: 1_000_000],
            ], for: connection)
        let url = try rig.record("movie.mov", frames: 30)
        let moviePackets = try videoPackets(url).map(\.hash)
        let publishedPackets = try videoPackets(rig.published).map(\.hash)
        #expect(moviePackets.count >= 30)
        #expect(position(of: moviePackets, in: publishedPackets) == nil, "the movie is a run of the published stream")
        // A still picture's frame can come out byte for byte the same from two encoders; most cannot.
        let published = Set(publishedPackets)
        let alike = moviePackets.filter { published.contains($0) }.count
        #expect(alike < moviePackets.count / 2, "\(alike) of \(moviePackets.count) packets are the published ones")
    }

    @Test("The movie records on, without a gap, when the publishing output leaves the session")
    func recordsOnWithoutThePublisher() throws {
        guard MediaTool.available(for: "SharedEncoderTests.recordsOnWithoutThePublisher") else { return }
        let rig = try Rig("removed")
        let url = try rig.record("movie.mov", frames: 90) {
            #expect(waitUntil(timeout: 15, every: 0.02) { rig.movie.recordingStatistics.videoFramesWritten >= 30 })
            rig.session.beginConfiguration()
            rig.session.removeOutput(rig.publisher)
            rig.session.commitConfiguration()
        }
        let moviePackets = try videoPackets(url)
        let publishedPackets = try videoPackets(rig.published).map(\.hash)
        #expect(moviePackets.count >= 90)
        // Its first packets were published; the published stream ends soon after (the publisher left once 30 frames
        // were written), and the movie goes on.
        let start = try #require(position(of: Array(moviePackets.prefix(10).map(\.hash)), in: publishedPackets))
        #expect(
            publishedPackets.count - start < moviePackets.count - 20,
            "\(publishedPackets.count - start) of the movie's \(moviePackets.count) packets were published")
        // The packets after it left are the movie's own. Not one by one: the virtual camera's pictures repeat (seen:
        // frames 29 and 89 decode the same), and a cheap P frame of one can come out byte for byte the same (69 bytes).
        let published = Set(publishedPackets)
        let after = moviePackets.suffix(30).map(\.hash)
        let alike = after.filter { published.contains($0) }.count
        #expect(alike < after.count / 2, "\(alike) of the movie's last \(after.count) packets are published ones")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        let indices = try decodedFrameIndices(url)
        #expect(indexSteps(indices).isEmpty, "the movie's frame indices jump: \(indexSteps(indices))")
    }
}
