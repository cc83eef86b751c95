// The seeds' slow-motion flow end to end: record 240 fps, compose with the middle second slowed 8×, export
// passthrough and at 30 fps; the files are read back with ffprobe and ffmpeg (frame indices, times, the tone's pitch).

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import OpenCoreMedia
import TestSupport
import Testing

/// Where a recording's time `t` plays once 0.5 s … 1.5 s is slowed 8×.
func slowedTime(_ t: Double) -> Double {
    if t < 0.5 { return t }
    if t < 1.5 { return 0.5 + (t - 0.5) * 8 }
    return 8.5 + (t - 1.5)
}

/// The first stretch of `length` seconds between `from` and `to` that is at least 0.08 s from every beep.
func quietWindow(from: Double, to: Double, length: Double, avoiding beeps: [Double]) -> Range<Double>? {
    var start = from
    while start + length <= to {
        let window = start..<(start + length)
        if beeps.allSatisfy({ $0 + 0.08 < window.lowerBound || $0 - 0.08 > window.upperBound }) { return window }
        start += 0.01
    }
    return nil
}

@Suite("Slow motion: 240 fps recorded, the middle second slowed 8×, exported", .serialized)
struct SlowMotionTests {
    /// Records 2 s from the virtual back camera at 640x480 and 240 fps, with the microphone.
    static func record240(to url: URL) throws {
        let camera = VirtualDevices.back
        let format = try #require(
            camera.formats.first { format in
                let size = format.formatDescription.dimensions
                return size.width == 640 && size.height == 480
                    && format.videoSupportedFrameRateRanges.contains { $0.maxFrameRate >= 240 }
            }, "the virtual camera has a 480p240 format")
        let output = AVCaptureMovieFileOutput()
        output.maxRecordedDuration = CMTime(value: 2, timescale: 1)
        let session = try makeSession(
            preset: .inputPriority, devices: [camera, VirtualDevices.microphone], outputs: [output])
        let saved = (camera.activeFormat, camera.activeVideoMinFrameDuration, camera.activeVideoMaxFrameDuration)
        try camera.lockForConfiguration()
        camera.activeFormat = format
        camera.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 240)
        camera.activeVideoMaxFrameDuration = CMTime(value: 1, timescale: 240)
        camera.unlockForConfiguration()
        defer {
            // The virtual camera is shared by every test: give it back as it was.
            try? camera.lockForConfiguration()
            camera.activeFormat = saved.0
            camera.activeVideoMinFrameDuration = saved.1
            camera.activeVideoMaxFrameDuration = saved.2
            camera.unlockForConfiguration()
        }
        // Stepped a frame at a time, each written before the next: all 480 frames, however slowly a loaded
        // machine's debug build encodes 240 of them a second.
        // On to the 2 s limit, and a little past it: the file ends there by itself.
        let delegate = try recordStepping(
            session, output, to: url, devices: [camera, VirtualDevices.microphone],
            frame: CMTime(value: 1, timescale: 240), limit: 3)
        try #require(delegate.waitForFinish(timeout: 30), "didFinish never came")
        #expect(delegate.successfullyFinished == true, "\(String(describing: delegate.error))")
    }

    @Test("Passthrough keeps every recorded frame, retimed; the 30 fps export shows every slowed frame, every 8th else")
    func seedsFlow() async throws {
        guard MediaTool.available(for: "SlowMotionTests.seedsFlow") else { return }
        let recording = try scratchURL("slowmo-240.mov", suite: "slow-motion-tests")
        try Self.record240(to: recording)
        let recorded = try decodedFrames(recording)
        try #require(recorded.count > 240, "\(recorded.count) frames recorded in 2 s at 240 fps")
        let asset = AVURLAsset(url: recording)
        // Recorded at 240 fps: most frames are 1/240 s apart (a loaded machine may drop some; the checks below
        // compare against the frames the recording holds, whatever they are).
        let intervals = zip(recorded.dropFirst(), recorded).map { $0.time - $1.time }.sorted()
        #expect(
            abs(intervals[intervals.count / 2] - 1.0 / 240) < 1e-4,
            "median interval \(intervals[intervals.count / 2]) s")

        // Compose: all of it, the middle second scaled ×8.
        let composition = try await slowMotionComposition(of: asset)
        let composedDuration = try await composition.load(.duration).seconds
        let recordedDuration = try await asset.load(.duration).seconds
        #expect(abs(composedDuration - (recordedDuration + 7)) < 0.001, "\(composedDuration) s")

        // Passthrough: every recorded frame, in order, at its retimed time.
        let passthrough = try await export(composition, preset: AVAssetExportPresetPassthrough, name: "slowmo-copy.mov")
        #expect(try variableRateDecodeErrors(passthrough).isEmpty)
        let copied = try decodedFrames(passthrough)
        #expect(copied.map(\.marker) == recorded.map(\.marker))
        let lateness = zip(copied, recorded).map { abs($0.time - slowedTime($1.time)) }.max() ?? 1
        #expect(lateness < 0.001, "frames up to \(lateness) s from their retimed time")
        let copiedVideo = try #require(try FFprobeReport(passthrough).stream("video"))
        #expect(copiedVideo["codec_name"] as? String == "h264")

        // 30 fps: each output frame shows the recorded frame on screen at its time.
        let constant = try await export(composition, preset: AVAssetExportPresetHighestQuality, name: "slowmo-30.mov") {
            let video = AVMutableVideoComposition(propertiesOf: composition)
            video.frameDuration = CMTime(value: 1, timescale: 30)
            $0.videoComposition = video
            $0.audioTimePitchAlgorithm = .spectral
        }
        #expect(try ffmpegDecodeErrors(constant).isEmpty)
        let probe = try FFprobeReport(constant)
        #expect(probe.stream("video")?["avg_frame_rate"] as? String == "30/1")
        let frames = try decodedFrames(constant)
        let expectedCount = Int((composedDuration * 30).rounded(.up))
        #expect(frames.count == expectedCount, "\(frames.count) frames, \(expectedCount) expected")
        let expected = frames.indices.map { n -> Int? in
            let time = Double(n) / 30 + 1e-9
            return recorded.last { slowedTime($0.time) <= time }?.marker ?? recorded.first?.marker
        }
        #expect(frames.map(\.marker) == expected)
        // In the seeds' words: every frame of the slowed second (each recorded frame of 0.5 s … 1.5 s shown, in
        // order), every 8th frame elsewhere (at 240 fps, 8 frames a tick).
        func distinct(_ markers: [Int?]) -> [Int?] {
            markers.enumerated().filter { $0.offset == 0 || markers[$0.offset - 1] != $0.element }.map(\.element)
        }
        let slowedRecorded = recorded.filter { $0.time >= 0.5 - 1e-9 && $0.time < 1.5 - 1e-9 }.map(\.marker)
        let slowedShown = frames.filter { $0.time >= slowedTime(0.5) - 1e-6 && $0.time < slowedTime(1.5) - 1e-6 }
        #expect(distinct(slowedShown.map(\.marker)) == distinct(slowedRecorded))
        let early = frames.prefix(15).compactMap(\.marker).filter { $0 >= 0 }
        // Capture times jitter on a loaded machine, so single steps vary; on average a tick moves 8 frames.
        let meanStep = Double((early.last ?? 0) - (early.first ?? 0)) / Double(max(1, early.count - 1))
        #expect(abs(meanStep - 8) < 1, "early frames \(early)")

        // The sound lasts as long as the picture, and the slowed tone is still 440 Hz.
        let sound = try decodedSound(constant)
        let soundDuration = Double(sound.count) / 48_000
        #expect(
            abs(soundDuration - composedDuration) < 0.05, "\(soundDuration) s of sound, \(composedDuration) s composed")
        // Windows clear of the beeps (the microphone beeps at the device clock's whole seconds, with the flashes).
        let beeps = VirtualAudioReader.findBeeps(
            samples: try decodedSound(recording).map(Float.init), sampleRate: 48_000)
        // Anywhere before the slowed part, after a beep cut short by the start: a beep (0.16 s with its margins)
        // leaves 0.14 s clear on one side of it wherever it falls in 0.05 … 0.5 s (it fell at 0.25 s once, with no
        // 0.15 s left in 0.05 … 0.45).
        let quietBefore = try #require(quietWindow(from: 0.05, to: 0.5, length: 0.14, avoiding: beeps))
        let quietSlowed = try #require(quietWindow(from: 0.55, to: 1.45, length: 0.25, avoiding: beeps))
        func tone(_ window: Range<Double>, mapped: Bool) -> Double {
            let from = mapped ? slowedTime(window.lowerBound) : window.lowerBound
            let to = mapped ? slowedTime(window.upperBound) : window.upperBound
            return zeroCrossingFrequency(sound[Int(from * 48_000)..<Int(to * 48_000)], sampleRate: 48_000)
        }
        let slowedTone = tone(quietSlowed, mapped: true)
        #expect(abs(slowedTone - 440) < 4.4, "the slowed tone is \(slowedTone) Hz")
        let toneBefore = tone(quietBefore, mapped: false)
        #expect(abs(toneBefore - 440) < 2, "the tone before is \(toneBefore) Hz")
    }
}
