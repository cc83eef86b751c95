// A/V sync of a recorded movie, measured from the file alone: the virtual camera flashes and the virtual microphone
// beeps at every whole second of the same clock, so in the file each flash frame and its beep must coincide.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import TestSupport
import Testing

@Suite("A/V sync of recorded movies", .serialized)
struct AVSyncTests {
    /// The presentation time (seconds in the file) of every decoded video frame, and whether it is a flash frame.
    static func flashTimes(_ url: URL) throws -> (flashes: [Double], frameCount: Int) {
        let probe = try FFprobeReport(url)
        let video = try #require(probe.stream("video"))
        let width = try #require(video["width"] as? Int)
        let height = try #require(video["height"] as? Int)
        let times = try MediaTool.ffprobe.run([
            "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time", "-of", "csv=p=0", url.path,
        ]).outputText.split(whereSeparator: \.isNewline).compactMap { line in
            // A frame with side data (the first: the display matrix) prints a trailing field.
            line.split(separator: ",").first.flatMap { Double($0) }
        }
        let decoded = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-i", url.path, "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "rawvideo",
            "-pix_fmt", "gray", "-",
        ])
        let flashes = try flashFrameTimes(luma: [UInt8](decoded.output), times: times, width: width, height: height)
        return (flashes, times.count)
    }

    /// The times of the flash frames among decoded 8-bit luma frames (`times[i]` is frame `i`'s).
    static func flashFrameTimes(luma bytes: [UInt8], times: [Double], width: Int, height: Int) throws -> [Double] {
        let size = width * height
        try #require(bytes.count == times.count * size, "\(bytes.count / size) frames decoded, \(times.count) timed")
        return times.indices.filter { index in
            VirtualFrameReader.isFlashFrame(
                luma: Array(bytes[index * size..<(index + 1) * size]), width: width, height: height)
        }.map { times[$0] }
    }

    /// The onset (seconds in the file) of every beep in the audio track, decoded as the player would; with `start`,
    /// only in the `seconds` from there.
    static func beepTimes(_ url: URL, from start: Double? = nil, seconds: Double? = nil) throws -> [Double] {
        let window = start.map { ["-ss", String(format: "%.3f", $0)] } ?? []
        let length = seconds.map { ["-t", String(format: "%.3f", $0)] } ?? []
        let decoded = try MediaTool.ffmpeg.run(
            ["-nostdin", "-v", "error"] + window + length + [
                "-i", url.path, "-map", "0:a:0", "-ac", "1", "-ar", "48000", "-f", "f32le", "-",
            ])
        // A file ffmpeg cannot decode is that error, not a file without beeps.
        guard decoded.status == 0 else {
            throw MediaToolFailure(
                description: "ffmpeg could not decode \(url.lastPathComponent)'s sound: \(decoded.error)")
        }
        let samples = decoded.output.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        return VirtualAudioReader.findBeeps(samples: samples, sampleRate: 48_000).map { (start ?? 0) + $0 }
    }

    @Test("Every flash frame and its beep are within 5 ms of each other in the file, and no frame is lost")
    func flashesMeetBeeps() throws {
        guard MediaTool.available(for: "AVSyncTests.flashesMeetBeeps") else { return }
        let url = try scratchURL("sync.mov", suite: "av-sync")
        let output = AVCaptureMovieFileOutput()
        output.maxRecordedDuration = CMTime(value: 7, timescale: 2)
        let delegate = try #require(try recordUntilFinished(output, to: url), "didFinish never came")
        #expect(delegate.successfullyFinished == true)

        let (flashes, frameCount) = try Self.flashTimes(url)
        let beeps = try Self.beepTimes(url)
        #expect(flashes.count >= 3, "flash frames at \(flashes)")
        var offsets: [Double] = []
        for flash in flashes {
            let beep = try #require(beeps.min { abs($0 - flash) < abs($1 - flash) }, "no beeps in \(beeps)")
            offsets.append(beep - flash)
        }
        print("A/V offsets (beep − flash), ms: \(offsets.map { String(format: "%.2f", $0 * 1000) })")
        #expect(offsets.allSatisfy { abs($0) <= 0.005 }, "offsets \(offsets) s")
        // 3.5 s at 30 fps: 105 frames, every index once (the readable ones step by one).
        #expect(frameCount == 105, "\(frameCount) frames")
        #expect(indexSteps(try decodedFrameIndices(url)).isEmpty)
    }
}
