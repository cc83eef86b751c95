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
        let beeps = try AVSyncTests.beepTimes(url)
        try #require(beeps.count >= 4, "beeps at \(beeps)")
        let span = beeps[beeps.count - 1] - beeps[0]
        // Whole seconds of the microphone's clock between the first and the last beep found (one at the edge of a
        // buffer may be missed).
        let intervals = span.rounded()
        let expected = intervals / (1 + ppm * 1e-6)
        // Uncorrected the span would be `intervals` seconds: 5 ms a beep away from the expected one.
        print("drift \(ppm) ppm: measured \(measured) ppm; \(beeps.count) beeps span \(span) s, expected \(expected) s")
        #expect(abs(span - expected) < 0.001 * intervals, "the beeps span \(span) s, not \(expected) s")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
    }
}
