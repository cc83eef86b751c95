// The demuxer's probe skips decoding where the container describes its H.264 and HEVC streams, and still reports what
// ffprobe (which decodes to learn them) reports: pixel format, size, frame rate, frame count, every packet's time.

import Foundation
import Testing

@testable import MediaCodecs

@Suite("Demuxer probe without decoding", .serialized)
struct DemuxerProbeTests {
    /// A file made by ffmpeg, and whether its video should be probed from the header alone.
    struct Input: CustomTestStringConvertible, Sendable {
        var name: String
        var encoder: [String]
        var fromHeader: Bool
        var testDescription: String { name }
    }

    static let inputs: [Input] = [
        // libx264's default B-frames: the container's timestamps reorder them, no decoder delay guessed.
        Input(name: "h264-b-frames.mov", encoder: ["-c:v", "libx264", "-pix_fmt", "yuv420p"], fromHeader: true),
        Input(name: "h264-422.mkv", encoder: ["-c:v", "libx264", "-pix_fmt", "yuv422p"], fromHeader: true),
        Input(name: "h264-10bit.mp4", encoder: ["-c:v", "libx264", "-pix_fmt", "yuv420p10le"], fromHeader: true),
        Input(name: "h264-full-range.mov", encoder: ["-c:v", "libx264", "-pix_fmt", "yuvj420p"], fromHeader: true),
        // 4:4:4 is named by the decoder (gbrp for an RGB matrix): probed as before.
        Input(name: "h264-444.mov", encoder: ["-c:v", "libx264", "-pix_fmt", "yuv444p"], fromHeader: false),
        Input(
            name: "hevc.mp4",
            encoder: ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=error", "-tag:v", "hvc1"],
            fromHeader: true),
        // No header and no timestamps (Annex B): the probe must decode to learn the stream.
        Input(name: "h264-annex-b.h264", encoder: ["-c:v", "libx264", "-bf", "0"], fromHeader: false),
        // Streams found by reading (no header): probed as before.
        Input(name: "h264.ts", encoder: ["-c:v", "libx264"], fromHeader: false),
    ]

    @Test("Streams reported as ffprobe reports them, decoding only where the container does not say", arguments: inputs)
    func probe(input: Input) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/ffprobe") else {
            print("Skipping the demuxer probe test: ffmpeg and ffprobe not installed (make test installs them)")
            return
        }
        let path = try scratchPath(input.name)
        let hasSound = !input.name.hasSuffix(".h264")
        let sound = hasSound ? ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-ac", "1"] : []
        let made = try run(
            "ffmpeg",
            ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25"] + sound
                + ["-t", "1"] + input.encoder + [path])
        try #require(made.status == 0, "ffmpeg could not make \(input.name): \(made.error)")
        defer { try? FileManager.default.removeItem(atPath: path) }

        let demuxer = try Demuxer(path: path)
        let video = try #require(demuxer.streams.first { $0.mediaType == .video })
        #expect(demuxer.streamsProbedWithoutDecoding == (input.fromHeader ? [video.index] : []))

        let probe = try Probe(path)
        let expected = try #require(probe.stream("video"))
        #expect(video.pixelFormatName == expected["pix_fmt"] as? String)
        #expect(video.width == expected["width"] as? Int)
        #expect(video.height == expected["height"] as? Int)
        let rate = try #require(
            (expected["avg_frame_rate"] as? String)?.split(separator: "/").compactMap { Double($0) })
        #expect(rate.count == 2 && rate[1] > 0 ? video.frameRate == rate[0] / rate[1] : video.frameRate == 0)
        if hasSound {
            let audio = try #require(demuxer.streams.first { $0.mediaType == .audio })
            let expectedAudio = try #require(probe.stream("audio"))
            #expect(audio.sampleRate == Int(expectedAudio["sample_rate"] as? String ?? ""))
            #expect(audio.channelCount == expectedAudio["channels"] as? Int)
        }

        // Every video packet comes out after the probe (those it read are kept), at ffprobe's presentation times.
        var times: [Double] = []
        while case .packet(let packet, let stream) = try demuxer.readPacket() {
            if stream == video.index { times.append(packet.presentationTime.seconds) }
        }
        let listed = try run(
            "ffprobe",
            ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path])
        let expectedTimes = String(decoding: listed.output, as: UTF8.self).split(whereSeparator: \.isNewline)
            .compactMap { Double($0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: [","])) }
        #expect(times.count == Probe.number(expected["nb_read_frames"]).map { Int($0) })
        if input.fromHeader {
            #expect(times.count == expectedTimes.count)
            #expect(zip(times, expectedTimes).allSatisfy { abs($0 - $1) < 0.0005 }, "\(times) against \(expectedTimes)")
        }
    }
}
