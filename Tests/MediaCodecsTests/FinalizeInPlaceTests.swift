// The in-place finish of a fragmented movie (no fast start): a `moov` appended after the fragments and one header
// write that makes them an `mdat`. Checked against the fast-start copy of the same recording with ffprobe (every
// packet's times, flags, size and bytes, every stream's start and duration), by parsing the boxes, and with ffmpeg
// decoding the file at the instant before the header write.

import Foundation
import OpenCoreMedia
import Testing

@testable import MediaCodecs

@Suite("A fragmented movie finished where it lies")
struct FinalizeInPlaceTests {
    /// What ffprobe says of every packet (stream, times, duration, flags, size, MD5 of its bytes) and stream.
    private func probe(_ path: String) throws -> (packets: [String], streams: [String], format: String) {
        func lines(_ arguments: [String]) throws -> [String] {
            let result = try run("ffprobe", ["-v", "error"] + arguments + ["-of", "compact=p=0:nk=1:s=|", path])
            try #require(result.status == 0, "ffprobe failed: \(result.error)")
            // FFmpeg 5.1 ends a discarded packet's flags ("KD") with a line break: such a line goes on the next.
            let text = String(decoding: result.output, as: UTF8.self).replacingOccurrences(of: "\n|", with: "|")
            return text.split(separator: "\n").map(String.init)
        }
        let packets = try lines([
            "-show_data_hash", "MD5", "-show_entries", "packet=stream_index,pts,dts,duration,flags,size,data_hash",
        ])
        let streams = try lines([
            "-show_entries", "stream=index,codec_name,time_base,start_pts,duration_ts,nb_frames,extradata_size",
        ])
        return (packets, streams, try lines(["-show_entries", "format=duration,start_time"]).joined())
    }

    @Test(
        "Finished in place: ftyp, mdat, moov, and the same packets and streams as the fast-start copy",
        arguments: [Muxer.FileType.mov, .mp4])
    func samePacketsAsTheCopy(fileType: Muxer.FileType) throws {
        let inPlace = try scratchPath("in-place.\(fileType.rawValue)")
        let copied = try scratchPath("copied.\(fileType.rawValue)")
        let interval = CMTime(value: 1, timescale: 1)
        try writeNoiseMovie(
            to: inPlace, seconds: 3.5, bitRate: 1_000_000,
            options: Muxer.Options(fragmentInterval: interval, fastStart: false), fileType: fileType, finish: true)
        try writeNoiseMovie(
            to: copied, seconds: 3.5, bitRate: 1_000_000,
            options: Muxer.Options(fragmentInterval: interval, fastStart: true), fileType: fileType, finish: true)
        let boxes = try topLevelBoxes(inPlace)
        #expect(boxes.map(\.type) == ["ftyp", "mdat", "moov"], "\(boxes)")
        #expect(try topLevelBoxes(copied).map(\.type).first { $0 == "moov" || $0 == "mdat" } == "moov")
        let finished = try probe(inPlace)
        let copy = try probe(copied)
        #expect(finished.packets.count > 150, "\(finished.packets.count) packets")
        // Stream by stream: the copy interleaves its tracks by time, the fragments lie a track's run at a time.
        for stream in ["0|", "1|"] {
            let inPlacePackets = finished.packets.filter { $0.hasPrefix(stream) }
            let copyPackets = copy.packets.filter { $0.hasPrefix(stream) }
            #expect(
                inPlacePackets == copyPackets,
                "\(zip(inPlacePackets, copyPackets).first { $0 != $1 }.map { "\($0)" } ?? "the counts differ")")
        }
        #expect(finished.streams == copy.streams)
        #expect(finished.format == copy.format)
        #expect(try decodeErrors(inPlace) == "")
        // GStreamer's demuxer (qtdemux) reads it too, both tracks decoded to the end.
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/gst-launch-1.0") {
            let played = try run(
                "gst-launch-1.0",
                [
                    "-q", "filesrc", "location=\(inPlace)", "!", "qtdemux", "name=d", "d.video_0", "!", "queue", "!",
                    "h264parse", "!", "avdec_h264", "!", "fakesink", "d.audio_0", "!", "queue", "!", "aacparse", "!",
                    "avdec_aac", "!", "fakesink",
                ])
            #expect(played.status == 0, "gst-launch-1.0: \(played.error)")
        }
    }

    @Test("A camera's H.264 with B-frames and AAC, copied: the same packets as the fast-start copy's")
    func reorderedFramesCopied() throws {
        let source = try scratchPath("b-frames-source.mov")
        let made = try run(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000", "-t", "3", "-c:v", "libx264", "-bf", "3", "-g", "30", "-c:a",
                "aac", "-ac", "1", source,
            ])
        try #require(made.status == 0, "ffmpeg: \(made.error)")
        func copy(to path: String, fastStart: Bool) throws {
            let demuxer = try Demuxer(path: source)
            let muxer = try Muxer(
                path: path, fileType: .mov,
                options: Muxer.Options(fragmentInterval: CMTime(value: 1, timescale: 1), fastStart: fastStart))
            for stream in demuxer.streams { _ = try muxer.addStream(copying: stream) }
            try muxer.start(atSourceTime: .zero)
            while case .packet(let packet, let stream) = try demuxer.readPacket() {
                try muxer.write(packet, stream: stream)
            }
            try muxer.finish()
        }
        let inPlace = try scratchPath("b-frames-in-place.mov")
        let copied = try scratchPath("b-frames-copied.mov")
        try copy(to: inPlace, fastStart: false)
        try copy(to: copied, fastStart: true)
        #expect(try topLevelBoxes(inPlace).map(\.type) == ["ftyp", "mdat", "moov"])
        let finished = try probe(inPlace)
        let copy = try probe(copied)
        let video = finished.packets.filter { $0.hasPrefix("0|") }
        // Frames reordered: presentation and decode times differ.
        #expect(video.contains { $0.split(separator: "|")[1] != $0.split(separator: "|")[2] })
        for stream in ["0|", "1|"] {
            #expect(finished.packets.filter { $0.hasPrefix(stream) } == copy.packets.filter { $0.hasPrefix(stream) })
        }
        #expect(finished.streams == copy.streams)
        #expect(finished.format == copy.format)
        #expect(try decodeErrors(inPlace) == "")
    }

    @Test("The instant before the header write: the fragmented movie with a moov after it reads whole")
    func beforeTheSwitchTheFragmentsStillRead() throws {
        let path = try scratchPath("switch.mov")
        let snapshot = path + ".before-switch"
        try? FileManager.default.removeItem(atPath: snapshot)
        StorageSeam.finalizeWillSwitch = { finishing in
            guard finishing == path else { return }
            try? FileManager.default.copyItem(atPath: finishing, toPath: snapshot)
        }
        defer { StorageSeam.finalizeWillSwitch = nil }
        try writeNoiseMovie(
            to: path, seconds: 3.5, bitRate: 1_000_000,
            options: Muxer.Options(fragmentInterval: CMTime(value: 1, timescale: 1), fastStart: false), finish: true)
        let types = try topLevelBoxes(snapshot).map(\.type)
        #expect(types.prefix(3) == ["ftyp", "moov", "moof"], "\(types)")
        #expect(types.last == "moov" && types.filter { $0 == "moov" }.count == 2, "\(types)")
        // Every packet of the finished movie is in the snapshot: its first moov and fragments are read.
        let finished = try probe(path).packets
        let before = try probe(snapshot).packets
        #expect(before.count == finished.count, "\(before.count) packets before the switch, \(finished.count) after")
        #expect(try decodeErrors(snapshot) == "")
    }
}
