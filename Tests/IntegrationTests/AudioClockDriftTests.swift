// A microphone whose sample clock is off: the recording resamples its sound to follow the session clock and reports
// the drift it measured. Read back from the file with ffmpeg.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import TestSupport
import Testing

@Suite("A drifting microphone's sound follows the session clock", .serialized)
struct AudioClockDriftTests {
    /// The virtual microphone's beeps are clocked by its own sample clock: one every 48 000 frames, which at `ppm`
    /// stand for 1 / (1 + ppm · 10⁻⁶) s of the session clock. Written as they come (at the nominal 48 kHz) they
    /// would sit exactly 1 s apart in the file, and the sound would run ahead of or behind the pictures by `ppm` µs
    /// per second; following the clock, they sit 1 / (1 + ppm · 10⁻⁶) s apart, where the session clock heard them.
    @Test(
        "±5000 ppm: the beeps sit where the session clock heard them, and the drift is measured",
        arguments: [5000.0, -5000.0])
    func driftIsCorrected(ppm: Double) throws {
        guard MediaTool.available(for: "AudioClockDriftTests.driftIsCorrected") else { return }
        let controller = try #require(VirtualMicrophoneController(VirtualDevices.microphone))
        controller.clockErrorPPM = ppm
        defer { controller.restoreDefaults() }
        let url = try scratchURL("drift-\(Int(ppm)).mov", suite: "audio-clock-drift")
        let (delegate, output) = try recordUntil(url) { $0.recordedDuration.seconds >= 6 }
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        let measured = try #require(output.recordingStatistics.audioClockDriftPPM, "no drift was measured")
        #expect(abs(measured - ppm) < abs(ppm) * 0.1, "measured \(measured) ppm of \(ppm)")
        let found = try AVSyncTests.beepTimes(url)
        guard found.count >= 4 else {
            let sound = try? FFprobeReport(url).stream("audio")
            Issue.record("beeps at \(found); the file's sound: \(String(describing: sound))")
            return
        }
        // The follower leaves the sound as it comes until it is 2 ms off (0.4 s at 5000 ppm), then absorbs the
        // difference over the next second (AudioClockFollower): a beep before 1.5 s can sit up to a few ms from where
        // the clock heard it, by design. The beeps from there on are where it promises them.
        let beeps = found.filter { $0 >= 1.5 }
        try #require(beeps.count >= 3, "beeps at \(found)")
        let span = beeps[beeps.count - 1] - beeps[0]
        // Whole seconds of the microphone's clock between the first and the last of them (one at the edge of a
        // buffer may be missed).
        let intervals = span.rounded()
        let expected = intervals / (1 + ppm * 1e-6)
        // Uncorrected the span would be `intervals` seconds: 5 ms a beep away from the expected one.
        print("drift \(ppm) ppm: measured \(measured) ppm; \(beeps.count) beeps span \(span) s, expected \(expected) s")
        #expect(abs(span - expected) < 0.001 * intervals, "the beeps span \(span) s, not \(expected) s")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
    }
}

/// A long recording from a camera and a microphone whose clocks disagree by ±200 ppm, as a real card's crystal
/// may: the A/V offset at the end is where it was at the start, and memory stays flat.
///
/// Both devices free-run on the virtual clock they share (`VirtualLockstep`), so the media comes faster than real
/// time: 5 minutes of it in `make test`, an hour with `OPENAV_SOAK=1` (`make soak`). The microphone's beeps are
/// whole seconds of its own clock, so on the session clock they come every 1 / (1 + ppm · 10⁻⁶) s and, against the
/// camera's flashes (whole seconds of the session clock), move by −ppm µs a second: −0.72 s over an hour at
/// 200 ppm. Written as it comes, at the nominal rate, the sound would not move against the pictures at all, which
/// is the drift uncorrected: the test measures the beep − flash offset in the first and in the last seconds of the
/// file and checks it moved by what the clocks say, within 10 ms.
@Suite("A drifting microphone over a long recording", .serialized)
struct LongDriftTests {
    static var mediaSeconds: Double { ProcessInfo.processInfo.environment["OPENAV_SOAK"] == "1" ? 3600 : 300 }

    @Test(
        "±200 ppm for minutes (an hour in make soak) of free-running media: the offset holds within 10 ms",
        arguments: [200.0, -200.0])
    func offsetHolds(ppm: Double) throws {
        guard MediaTool.available(for: "LongDriftTests.offsetHolds") else { return }
        let camera = try #require(VirtualCameraController(VirtualDevices.back))
        let microphone = try #require(VirtualMicrophoneController(VirtualDevices.microphone))
        camera.clockMode = .freeRunning
        microphone.clockMode = .freeRunning
        microphone.clockErrorPPM = ppm
        defer {
            camera.restoreDefaults()
            microphone.restoreDefaults()
        }
        let media = Self.mediaSeconds
        let url = try scratchURL("long-drift-\(Int(ppm)).mov", suite: "audio-clock-drift")
        var residentMegabytes: [(media: Int, megabytes: Double)] = []
        let started = Date()
        let (delegate, output) = try recordUntil(url, fragmentInterval: 1, timeout: media) { output in
            let recorded = output.recordedDuration.seconds
            if recorded >= Double(residentMegabytes.count) * media / 10, let resident = residentMemoryMegabytes() {
                residentMegabytes.append((Int(recorded), resident))
            }
            return recorded >= media
        }
        let elapsed = Date().timeIntervalSince(started)
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        let statistics = output.recordingStatistics
        let measured = try #require(statistics.audioClockDriftPPM, "no drift was measured")
        let duration = try #require(FFprobeReport.number(FFprobeReport(url).format["duration"]), "no duration")
        print(
            "long drift \(ppm) ppm: \(duration) s of media in \(Int(elapsed)) s; measured \(measured) ppm;"
                + " dropped video \(statistics.totalDroppedVideoFrames), audio \(statistics.droppedAudioBuffers);"
                + " RSS MB by media second: \(residentMegabytes.map { "\($0.media): \(String(format: "%.1f", $0.megabytes))" })"
        )
        #expect(abs(measured - ppm) < 20, "measured \(measured) ppm of \(ppm)")
        try #require(duration >= media - 2, "only \(duration) s were recorded")

        let first = try Self.beepMinusFlash(url, from: 1, seconds: 6)
        let last = try Self.beepMinusFlash(url, from: duration - 8, seconds: 6)
        // The beeps move by −ppm µs per second of the session clock between the two measurements.
        let expected = -(last.time - first.time) * ppm * 1e-6
        let moved = last.offset - first.offset
        // Offsets are between a flash and its nearest beep, so they compare modulo the one-second period (the
        // remainder nearest zero, in [−0.5, 0.5]).
        let error = (moved - expected).remainder(dividingBy: 1)
        print(
            "long drift \(ppm) ppm: beep − flash \(first.offset * 1000) ms at \(first.time) s, \(last.offset * 1000) ms"
                + " at \(last.time) s; moved \(moved * 1000) ms, the clocks say \(expected * 1000) ms")
        #expect(abs(error) <= 0.010, "the offset moved \(moved * 1000) ms, not \(expected * 1000) ms")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
    }

    /// The median beep − flash offset over `seconds` of `url` from `start` (seconds in the file), and the time of
    /// the first flash there.
    static func beepMinusFlash(_ url: URL, from start: Double, seconds: Double) throws -> (time: Double, offset: Double)
    {
        let window = ["-ss", String(format: "%.3f", start), "-t", String(format: "%.3f", seconds), "-i", url.path]
        let shown = try MediaTool.ffmpeg.run(
            ["-nostdin", "-v", "info"] + window + [
                "-map", "0:v:0", "-vf", "showinfo", "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray",
                "-",
            ])
        let probe = try FFprobeReport(url)
        let video = try #require(probe.stream("video"))
        let width = try #require(video["width"] as? Int)
        let height = try #require(video["height"] as? Int)
        let times = shown.error.split(whereSeparator: \.isNewline).compactMap { line -> Double? in
            guard line.contains("Parsed_showinfo"), let range = line.range(of: "pts_time:") else { return nil }
            return Double(line[range.upperBound...].prefix { !$0.isWhitespace })
        }
        let flashes = try AVSyncTests.flashFrameTimes(
            luma: [UInt8](shown.output), times: times, width: width, height: height
        ).map { start + $0 }
        let beeps = try AVSyncTests.beepTimes(url, from: start, seconds: seconds)
        try #require(flashes.count >= 3 && beeps.count >= 3, "flashes at \(flashes), beeps at \(beeps)")
        let offsets = flashes.compactMap { flash in beeps.min { abs($0 - flash) < abs($1 - flash) }.map { $0 - flash } }
        return (flashes[0], offsets.sorted()[offsets.count / 2])
    }
}

/// This process's resident set, in megabytes (VmRSS of /proc/self/status); nil where it cannot be read.
func residentMemoryMegabytes() -> Double? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kilobytes = Double(line.split(whereSeparator: \.isWhitespace).dropFirst().first ?? "")
    else { return nil }
    return kilobytes / 1024
}
