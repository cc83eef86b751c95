// The sample rate and channel count asked of a file output (AVSampleRateKey, AVNumberOfChannelsKey) are what the
// file holds: the virtual microphone's 48 kHz sound converted with libswresample on the way to the encoder. Judged by
// ffprobe (rate, channels, length against the output's recordedDuration) and by the microphone's 440 Hz tone and its
// level measured in ffmpeg's decode of the file.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import TestSupport
import Testing

@Suite("Audio settings converted: the sample rate and channels asked of the file outputs", .serialized)
struct AudioSettingsConversionTests {
    /// What one recording asks, from which microphone format.
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let sourceChannels: Int
        let fileType: AVFileType
        let fileExtension: String
        let formatID: AudioFormatID
        let sampleRate: Int
        let channels: Int
        var testDescription: String {
            "48 kHz \(sourceChannels) ch → \(sampleRate) Hz \(channels) ch .\(fileExtension)"
        }
    }

    static let cases: [Case] = [
        Case(
            name: "44k1-mono", sourceChannels: 2, fileType: .m4a, fileExtension: "m4a",
            formatID: kAudioFormatMPEG4AAC, sampleRate: 44_100, channels: 1),
        Case(
            name: "16k-mono", sourceChannels: 2, fileType: .wav, fileExtension: "wav",
            formatID: kAudioFormatLinearPCM, sampleRate: 16_000, channels: 1),
        Case(
            name: "16k-aac", sourceChannels: 1, fileType: .m4a, fileExtension: "m4a",
            formatID: kAudioFormatMPEG4AAC, sampleRate: 16_000, channels: 1),
        Case(
            name: "upmix", sourceChannels: 1, fileType: .wav, fileExtension: "wav",
            formatID: kAudioFormatLinearPCM, sampleRate: 48_000, channels: 2),
        Case(
            name: "upmix-44k1", sourceChannels: 1, fileType: .m4a, fileExtension: "m4a",
            formatID: kAudioFormatMPEG4AAC, sampleRate: 44_100, channels: 2),
    ]

    @Test(
        "AVCaptureAudioFileOutput records the asked rate and channels, as long as the recording, with the tone",
        arguments: cases)
    func audioFileOutput(_ asked: Case) throws {
        guard MediaTool.available(for: "AudioSettingsConversionTests.audioFileOutput") else { return }
        let url = try scratchURL("asked-\(asked.name).\(asked.fileExtension)", suite: "audio-settings-tests")
        let output = AVCaptureAudioFileOutput()
        output.audioSettings = [
            AVFormatIDKey: asked.formatID, AVSampleRateKey: asked.sampleRate, AVNumberOfChannelsKey: asked.channels,
        ]
        output.maxRecordedDuration = CMTime(value: 2, timescale: 1)
        let delegate = try withMicrophone(channels: asked.sourceChannels) { microphone in
            let session = try makeSession(devices: [microphone], outputs: [output])
            return try recordStepped(session, output, devices: [microphone]) { delegate in
                output.startRecording(to: url, outputFileType: asked.fileType, recordingDelegate: delegate)
            }
        }
        #expect(delegate.avError?.code == .maximumDurationReached, "\(String(describing: delegate.error))")
        #expect(delegate.successfullyFinished == true)
        try checkSound(of: url, asked: asked, recorded: output.recordedDuration, tolerance: tolerance(asked))
    }

    @Test("AVCaptureMovieFileOutput records the asked rate and channels beside the picture, ending with it")
    func movieFileOutput() throws {
        guard MediaTool.available(for: "AudioSettingsConversionTests.movieFileOutput") else { return }
        let url = try scratchURL("asked-movie.mov", suite: "audio-settings-tests")
        let output = AVCaptureMovieFileOutput()
        output.maxRecordedDuration = CMTime(value: 2, timescale: 1)
        let asked = Case(
            name: "movie", sourceChannels: 2, fileType: .mov, fileExtension: "mov", formatID: kAudioFormatMPEG4AAC,
            sampleRate: 44_100, channels: 1)
        let delegate = try withMicrophone(channels: asked.sourceChannels) { microphone in
            let session = try makeSession(
                preset: .qvga320x240, devices: [VirtualDevices.back, microphone], outputs: [output])
            let connection = try #require(output.connection(with: .audio))
            output.setOutputSettings(
                [AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: 44_100, AVNumberOfChannelsKey: 1],
                for: connection)
            // What a caller reads back is what it asked for.
            #expect(output.outputSettings(for: connection)[AVSampleRateKey] as? Int == 44_100)
            return try recordStepped(session, output, devices: [VirtualDevices.back, microphone]) { delegate in
                output.startRecording(to: url, recordingDelegate: delegate)
            }
        }
        #expect(delegate.avError?.code == .maximumDurationReached, "\(String(describing: delegate.error))")
        let report = try FFprobeReport(url)
        let video = try #require(report.stream("video"))
        let videoDuration = try #require(FFprobeReport.number(video["duration"]))
        let audio = try #require(report.stream("audio"))
        let audioDuration = try #require(FFprobeReport.number(audio["duration"]))
        // The sound ends with the last frame, to within an AAC frame (1024 samples, 23 ms at 44.1 kHz).
        #expect(abs(audioDuration - videoDuration) <= 1024.0 / 44_100 + 1e-3, "\(audioDuration) vs \(videoDuration)")
        try checkSound(of: url, asked: asked, recorded: output.recordedDuration, tolerance: tolerance(asked))
    }

    @Test("Without AVSampleRateKey and AVNumberOfChannelsKey the file has the source's rate and channels")
    func sourceLayoutWhenNotAsked() throws {
        guard MediaTool.available(for: "AudioSettingsConversionTests.sourceLayoutWhenNotAsked") else { return }
        let url = try scratchURL("not-asked.m4a", suite: "audio-settings-tests")
        let output = AVCaptureAudioFileOutput()
        output.audioSettings = [AVFormatIDKey: kAudioFormatMPEG4AAC]
        output.maxRecordedDuration = CMTime(value: 1, timescale: 1)
        let delegate = try withMicrophone(channels: 2) { microphone in
            let session = try makeSession(devices: [microphone], outputs: [output])
            return try recordStepped(session, output, devices: [microphone]) { delegate in
                output.startRecording(to: url, outputFileType: .m4a, recordingDelegate: delegate)
            }
        }
        #expect(delegate.successfullyFinished == true)
        let audio = try #require(try FFprobeReport(url).stream("audio"))
        #expect(FFprobeReport.number(audio["sample_rate"]) == 48_000)
        #expect(audio["channels"] as? Int == 2)
    }

    // MARK: Checks

    /// The virtual microphone's continuous tone (CaptureDrivers' `VirtualMicrophoneSynth`): 440 Hz at −30 dBFS peak.
    let toneFrequency = 440.0
    let tonePeakDBFS = -30.0

    /// How far the file's length may be from the recorded duration. PCM: to the sample, plus the last output
    /// sample's rounding. AAC: the movie's edit list, which is in whole milliseconds, plus that rounding. (Until the
    /// rewrite of the fragmented movie kept the last packet's duration, AAC files came out up to a frame short.)
    func tolerance(_ asked: Case) -> Double {
        asked.formatID == kAudioFormatMPEG4AAC ? 0.001 + 2.0 / Double(asked.sampleRate) : 2.0 / Double(asked.sampleRate)
    }

    /// ffprobe's rate, channels and length of `url`'s sound, the tone's pitch, and its level in every channel.
    func checkSound(of url: URL, asked: Case, recorded: CMTime, tolerance: Double) throws {
        let report = try FFprobeReport(url)
        let audio = try #require(report.stream("audio"))
        #expect(FFprobeReport.number(audio["sample_rate"]) == Double(asked.sampleRate), "\(audio)")
        #expect(audio["channels"] as? Int == asked.channels, "\(audio)")
        let duration = try #require(
            FFprobeReport.number(audio["duration"]) ?? FFprobeReport.number(report.format["duration"]))
        #expect(recorded.seconds > 1.9, "recordedDuration \(recorded.seconds) s")
        #expect(
            abs(duration - recorded.seconds) <= tolerance, "the file's \(duration) s, recorded \(recorded.seconds) s")
        #expect(try ffmpegDecodeErrors(url) == "")
        let frequency = try dominantFrequency(of: url)
        #expect(abs(frequency - toneFrequency) < 2, "\(frequency) Hz")
        // Between the beeps the tone's peak is −30 dBFS in every channel: one copied to two sides at unity gain,
        // two averaged to one.
        for (channel, peak) in try channelPeaks(of: url, channels: asked.channels, sampleRate: asked.sampleRate)
            .enumerated()
        {
            let level = 20 * log10(Double(peak))
            #expect(abs(level - tonePeakDBFS) < 1, "channel \(channel): \(level) dBFS")
        }
    }

    /// The tone's peak in each channel, as ffmpeg decodes the file to floats: the median of the peaks of its 10 ms
    /// stretches, so the 50 ms beep each second (5 % of the stretches) does not count, wherever the file starts.
    func channelPeaks(of url: URL, channels: Int, sampleRate: Int) throws -> [Float] {
        let decoded = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-ss", "0.1", "-i", url.path, "-f", "f32le", "-acodec", "pcm_f32le", "-",
        ])
        try #require(decoded.status == 0, "\(decoded.error)")
        let samples = decoded.output.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let stretch = sampleRate / 100
        try #require(samples.count > channels * stretch * 50, "only \(samples.count) samples decoded")
        return (0..<channels).map { channel in
            let values = stride(from: channel, to: samples.count, by: channels).map { abs(samples[$0]) }
            let peaks = stride(from: 0, to: values.count - stretch + 1, by: stretch).map {
                values[$0..<$0 + stretch].max() ?? 0
            }
            return peaks.sorted()[peaks.count / 2]
        }
    }

    /// Runs `session` on the manual clock a frame (1/30 s) at a time, each step's buffers handled by `output` before
    /// the next, until the recording `start` begins ends by itself (at most 10 s of the devices' time): the file
    /// holds what a machine that keeps up records, however loaded this one is.
    func recordStepped(
        _ session: AVCaptureSession, _ output: AVCaptureFileOutput, devices: [AVCaptureDevice],
        start: (MovieRecordingDelegate) -> Void
    ) throws -> MovieRecordingDelegate {
        let delegate = MovieRecordingDelegate()
        try withManualClock(devices) { clock in
            session.startRunning()
            defer { session.stopRunning() }
            start(delegate)
            let step = CMTime(value: 1, timescale: 30)
            while !delegate.events.contains("willFinish"), clock.elapsed.seconds < 10 {
                guard clock.advance(by: step, step: step, settling: [output]) else {
                    Issue.record("the recording stopped keeping up at \(clock.elapsed.seconds) s")
                    break
                }
            }
            #expect(delegate.waitForFinish(), "didFinish never came")
        }
        return delegate
    }

    /// Runs `body` with the virtual microphone in its 48 kHz float format of `channels`, and puts its format back.
    func withMicrophone<Result>(channels: Int, _ body: (AVCaptureDevice) throws -> Result) throws -> Result {
        let microphone = VirtualDevices.microphone
        let original = microphone.activeFormat
        let format = try #require(
            microphone.formats.first { format in
                guard let description = format.formatDescription.audioStreamBasicDescription else { return false }
                return description.mChannelsPerFrame == UInt32(channels)
                    && description.mFormatFlags & kAudioFormatFlagIsFloat != 0
            })
        try microphone.lockForConfiguration()
        microphone.activeFormat = format
        microphone.unlockForConfiguration()
        defer {
            try? microphone.lockForConfiguration()
            microphone.activeFormat = original
            microphone.unlockForConfiguration()
        }
        return try body(microphone)
    }
}
