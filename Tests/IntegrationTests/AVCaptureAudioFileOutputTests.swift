// AVCaptureAudioFileOutput with the virtual microphone, files checked with ffprobe, ffmpeg and the file's own bytes.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Testing
import TestSupport

@Suite("AVCaptureAudioFileOutput, recorded from the virtual microphone", .serialized)
struct AVCaptureAudioFileOutputTests {
    /// A file type, the codec ffprobe must report, and the container's magic bytes (offset, text).
    struct FileCase: CustomTestStringConvertible, Sendable {
        let fileExtension: String
        let fileType: AVFileType
        let codec: String
        let magic: (offset: Int, text: String)
        var testDescription: String { "." + fileExtension }
    }

    static let cases: [FileCase] = [
        FileCase(fileExtension: "m4a", fileType: .m4a, codec: "aac", magic: (4, "ftyp")),
        FileCase(fileExtension: "wav", fileType: .wav, codec: "pcm_s16le", magic: (8, "WAVE")),
        FileCase(fileExtension: "aiff", fileType: .aiff, codec: "pcm_s16be", magic: (8, "AIFF")),
        FileCase(fileExtension: "aifc", fileType: .aifc, codec: "pcm_f32be", magic: (8, "AIFC")),
        FileCase(fileExtension: "caf", fileType: .caf, codec: "pcm_s16le", magic: (0, "caff")),
    ]

    /// Records `seconds` of the virtual microphone into `url` with `output`; returns the delegate once finished.
    func record(
        _ output: AVCaptureAudioFileOutput, to url: URL, as fileType: AVFileType, seconds: Double,
        withCamera: Bool = false
    ) throws -> MovieRecordingDelegate {
        output.maxRecordedDuration = CMTime(seconds: seconds, preferredTimescale: 1000)
        let devices = withCamera ? [VirtualDevices.back, VirtualDevices.microphone] : [VirtualDevices.microphone]
        let session = try makeSession(preset: .qvga320x240, devices: devices, outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, outputFileType: fileType, recordingDelegate: delegate)
        #expect(delegate.waitForFinish(), "didFinish never came")
        return delegate
    }

    @Test("maxRecordedDuration ends sound to the sample: a file source's first second, sample for sample")
    func durationIsSampleExact() throws {
        guard MediaTool.available(for: "AVCaptureAudioFileOutputTests.durationIsSampleExact") else { return }
        // PCM in a movie comes in packets of 1024 frames: the one that crosses 1 s is cut inside.
        let source = try scratchURL("exact-source.mov")
        let made = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=997:sample_rate=48000", "-t", "2",
            "-c:a", "pcm_s16le", source.path,
        ])
        try #require(made.status == 0, "\(made.error)")
        let movie = try MovieFileDevice(url: source)
        let output = AVCaptureAudioFileOutput()
        output.maxRecordedDuration = CMTime(value: 1, timescale: 1)
        let session = try makeSession(devices: [try #require(movie.microphone)], outputs: [output])
        let url = try scratchURL("exact.wav")
        let delegate = MovieRecordingDelegate()
        // Asked for before the file plays, so the recording starts at its first sample.
        output.startRecording(to: url, outputFileType: .wav, recordingDelegate: delegate)
        session.startRunning()
        #expect(delegate.waitForFinish(), "didFinish never came")
        session.stopRunning()
        #expect(delegate.avError?.code == .maximumDurationReached)
        func samples(_ file: URL, _ arguments: [String] = []) throws -> [UInt8] {
            let result = try MediaTool.ffmpeg.run(
                ["-nostdin", "-v", "error", "-i", file.path] + arguments + ["-f", "s16le", "-"])
            try #require(result.status == 0, "\(result.error)")
            return [UInt8](result.output)
        }
        let recorded = try samples(url)
        #expect(recorded.count == 48_000 * 2, "\(recorded.count / 2) samples")
        #expect(recorded == (try samples(source, ["-t", "1"])), "not the source's first second")
    }

    @Test("Every file type: the container, codec, rate and length ffprobe reads, and a clean decode", arguments: cases)
    func fileType(_ fileCase: FileCase) throws {
        guard MediaTool.available(for: "AVCaptureAudioFileOutputTests.fileType") else { return }
        #expect(AVCaptureAudioFileOutput.availableOutputFileTypes().contains(fileCase.fileType))
        let url = try scratchURL("tone." + fileCase.fileExtension, suite: "audiofileoutput-tests")
        let output = AVCaptureAudioFileOutput()
        let delegate = try record(output, to: url, as: fileCase.fileType, seconds: 0.5)
        #expect(delegate.events == ["didStart", "willFinish", "didFinish"])
        #expect(delegate.avError?.code == .maximumDurationReached, "\(String(describing: delegate.error))")
        #expect(delegate.successfullyFinished == true)

        let bytes = try Data(contentsOf: url)
        let magic = bytes.dropFirst(fileCase.magic.offset).prefix(4)
        #expect(String(decoding: magic, as: UTF8.self) == fileCase.magic.text)
        let report = try FFprobeReport(url)
        #expect(report.streams.count == 1)
        let audio = try #require(report.stream("audio"))
        #expect(audio["codec_name"] as? String == fileCase.codec)
        #expect(FFprobeReport.number(audio["sample_rate"]) == 48_000)
        let duration = try #require(FFprobeReport.number(report.format["duration"]))
        // AAC's last frame is whole (1024 samples, 21 ms); PCM ends on the last buffer within the limit.
        #expect(abs(duration - 0.5) <= 0.03, "the file lasts \(duration) s")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
    }

    @Test("Only audio connections form, so a session with a camera records sound alone")
    func audioOnlyConnections() throws {
        guard MediaTool.available(for: "AVCaptureAudioFileOutputTests.audioOnlyConnections") else { return }
        let url = try scratchURL("with-camera.m4a", suite: "audiofileoutput-tests")
        let output = AVCaptureAudioFileOutput()
        let delegate = try record(output, to: url, as: .m4a, seconds: 0.3, withCamera: true)
        #expect(output.connection(with: .video) == nil)
        #expect(delegate.successfullyFinished == true)
        let report = try FFprobeReport(url)
        #expect(report.streams.map { $0["codec_type"] as? String } == ["audio"])
    }

    @Test("audioSettings choose the codec and metadata reaches the file's tags")
    func settingsAndMetadata() throws {
        guard MediaTool.available(for: "AVCaptureAudioFileOutputTests.settingsAndMetadata") else { return }
        let url = try scratchURL("lossless.m4a", suite: "audiofileoutput-tests")
        let output = AVCaptureAudioFileOutput()
        output.audioSettings = [AVFormatIDKey: kAudioFormatAppleLossless]
        let title = AVMutableMetadataItem()
        title.identifier = .commonIdentifierTitle
        title.value = NSString(string: "Tone and beeps")
        output.metadata = [title]
        let delegate = try record(output, to: url, as: .m4a, seconds: 0.3)
        #expect(delegate.successfullyFinished == true)
        let report = try FFprobeReport(url)
        #expect(report.stream("audio")?["codec_name"] as? String == "alac")
        #expect(report.tags["title"] == "Tone and beeps", "\(report.tags)")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
    }

    /// The largest absolute sample of the file's first channel, decoded by ffmpeg to floats.
    func peak(_ url: URL) throws -> Float {
        let decoded = try MediaTool.ffmpeg.run(["-nostdin", "-v", "error", "-i", url.path, "-ac", "1", "-f", "f32le", "-"])
        return decoded.output.withUnsafeBytes { $0.bindMemory(to: Float.self).reduce(0) { max($0, abs($1)) } }
    }

    @Test("A channel's volume scales what the file output records; a disabled channel records silence")
    func channelVolume() throws {
        guard MediaTool.available(for: "AVCaptureAudioFileOutputTests.channelVolume") else { return }
        var peaks: [Float] = []
        for (name, volume, enabled) in [("full", Float(1), true), ("half", 0.5, true), ("off", 1, false)] {
            let url = try scratchURL("volume-\(name).wav", suite: "audiofileoutput-tests")
            let output = AVCaptureAudioFileOutput()
            output.maxRecordedDuration = CMTime(value: 12, timescale: 10)
            let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.microphone], outputs: [output])
            let channel = try #require(output.connection(with: .audio)?.audioChannels.first)
            channel.volume = volume
            channel.isEnabled = enabled
            session.startRunning()
            let delegate = MovieRecordingDelegate()
            output.startRecording(to: url, outputFileType: .wav, recordingDelegate: delegate)
            #expect(delegate.waitForFinish())
            session.stopRunning()
            peaks.append(try peak(url))
        }
        // 1.2 s holds a beep at −6 dBFS peak (0.5); half volume halves it; disabled is silent.
        #expect(abs(peaks[0] - 0.5) < 0.02, "\(peaks)")
        #expect(abs(peaks[1] - 0.25) < 0.01, "\(peaks)")
        #expect(peaks[2] == 0, "\(peaks)")
    }

    @Test("An existing file is refused and left byte for byte as it was")
    func existingFile() throws {
        let url = try scratchURL("existing.wav", suite: "audiofileoutput-tests")
        let original = Data("not a recording".utf8)
        try original.write(to: url)
        let output = AVCaptureAudioFileOutput()
        let delegate = try record(output, to: url, as: .wav, seconds: 0.2)
        #expect(delegate.avError?.code == .fileAlreadyExists)
        #expect(delegate.successfullyFinished == false)
        #expect(try Data(contentsOf: url) == original)
    }

    @Test("A file type the output does not write is tolerated, as Apple's: the URL's extension decides")
    func unsupportedFileTypeRecordsWhatTheExtensionNames() throws {
        guard MediaTool.available(for: "AVCaptureAudioFileOutputTests.unsupportedFileType") else { return }
        let url = try scratchURL("asked-as-mov.wav", suite: "audiofileoutput-tests")
        let delegate = try record(AVCaptureAudioFileOutput(), to: url, as: .mov, seconds: 0.2)
        #expect(delegate.successfullyFinished == true)
        let audio = try #require(try FFprobeReport(url).stream("audio"))
        #expect(audio["codec_name"] as? String == "pcm_s16le")
    }
}
