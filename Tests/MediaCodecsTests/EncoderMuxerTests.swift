// Encoders, muxer and demuxer, checked with outside tools: ffprobe reads what we write, ffmpeg decodes it cleanly.

import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Testing

@testable import MediaCodecs

// MARK: - Helpers

/// A fresh path in a per-process scratch directory (nothing is there yet).
func scratchPath(_ name: String) throws -> String {
    let directory = NSTemporaryDirectory() + "mediacodecs-tests-\(getpid())"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let path = directory + "/" + name
    try? FileManager.default.removeItem(atPath: path)
    return path
}

/// Runs a tool; its standard output and error.
func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: Data, error: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/" + tool)
    process.arguments = arguments
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    try process.run()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, outputData, String(decoding: errorData, as: UTF8.self))
}

/// What ffprobe says about a file, with frames counted.
struct Probe {
    var format: [String: Any]
    var streams: [[String: Any]]

    init(_ path: String) throws {
        let result = try run(
            "ffprobe", ["-v", "error", "-count_frames", "-show_streams", "-show_format", "-of", "json", path])
        try #require(result.status == 0, "ffprobe failed: \(result.error)")
        let json = try #require(try JSONSerialization.jsonObject(with: result.output) as? [String: Any])
        format = json["format"] as? [String: Any] ?? [:]
        streams = json["streams"] as? [[String: Any]] ?? []
    }

    func stream(_ type: String) -> [String: Any]? { streams.first { $0["codec_type"] as? String == type } }
    static func number(_ value: Any?) -> Double? { (value as? String).flatMap(Double.init) ?? (value as? Double) }
    var formatTags: [String: String] { format["tags"] as? [String: String] ?? [:] }
}

/// ffmpeg's complaints when decoding the whole file (empty: clean).
func decodeErrors(_ path: String) throws -> String {
    let result = try run("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-f", "null", "-"])
    return result.status == 0 ? result.error : "exit \(result.status): \(result.error)"
}

/// The top-level atoms of an ISO/QuickTime file, in order.
func topLevelAtoms(_ path: String) throws -> [String] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    var atoms: [String] = []
    var offset = 0
    while offset + 8 <= data.count {
        var size = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        atoms.append(String(decoding: data[offset + 4..<offset + 8], as: UTF8.self))
        if size == 1, offset + 16 <= data.count {
            size = data[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) }
        } else if size == 0 {
            size = data.count - offset
        }
        guard size >= 8 else { break }
        offset += size
    }
    return atoms
}

/// An NV12 frame whose luma is a gradient moving with `index` (one fill per row: fast in debug builds).
func makeMovingFrame(_ index: Int, width: Int, height: Int, pixelFormat: OSType) throws -> CVPixelBuffer {
    let buffer = try makeBuffer(pixelFormat, width: width, height: height)
    buffer.withLockedPlanes { planes in
        for (planeIndex, plane) in planes.enumerated() {
            for y in 0..<plane.height {
                let value = planeIndex == 0 ? UInt8(truncatingIfNeeded: 16 + (y + index * 4) % 200) : 128
                plane.row(y).initializeMemory(as: UInt8.self, repeating: value)
            }
        }
    }
    return buffer
}

/// A buffer of interleaved Float32 stereo sine at 440 Hz, starting at sample `first` of the tone.
func makeSine(first: Int, count: Int, sampleRate: Int = 48000, at time: CMTime) throws -> CMSampleBuffer {
    let channels = 2
    let block = CMBlockBuffer(length: count * channels * 4)
    block.withUnsafeMutableBytes { bytes in
        let samples = bytes.bindMemory(to: Float.self)
        for frame in 0..<count {
            let value = Float(0.5 * sin(2 * Double.pi * 440 * Double(first + frame) / Double(sampleRate)))
            samples[frame * channels] = value
            samples[frame * channels + 1] = value
        }
    }
    let description = try CMFormatDescription(
        audioStreamBasicDescription: .linearPCM(
            sampleRate: Float64(sampleRate), channels: UInt32(channels), bitsPerChannel: 32, isFloat: true))
    return try CMSampleBuffer(
        dataBuffer: block, formatDescription: description, numSamples: count,
        sampleTimings: [
            CMSampleTimingInfo(
                duration: CMTime(value: 1, timescale: Int32(sampleRate)), presentationTimeStamp: time,
                decodeTimeStamp: .invalid)
        ], sampleSizes: [channels * 4])
}

/// Moves every packet an encoder has into the muxer.
func drain(_ receive: () throws -> EncoderOutput, into muxer: Muxer, stream: Int) throws {
    while case .packet(let packet) = try receive() { try muxer.write(packet, stream: stream) }
}

/// The source clock's time of the first sample: a host-clock-like 1234.5 s.
let sourceStart = CMTime(value: 12345, timescale: 10)

/// Records `frames` frames at 30 fps (and the matching audio) into `path`, starting the session at
/// ``sourceStart``. Leaves the muxer unfinished when `finish` is false (a crash).
@discardableResult
func record(
    to path: String, fileType: Muxer.FileType, video: VideoEncoder.Codec?, audio: AudioEncoder.Codec?,
    frames: Int = 60, width: Int = 640, height: Int = 480, audioBufferSize: Int = 1600,
    pixelFormat: OSType = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
    options: Muxer.Options = Muxer.Options(fragmentInterval: CMTime(value: 1, timescale: 1)),
    transform: Muxer.TrackTransform = .identity, finish: Bool = true
) throws -> Muxer {
    let muxer = try Muxer(path: path, fileType: fileType, options: options)
    var videoEncoder: VideoEncoder?
    var audioEncoder: AudioEncoder?
    var videoStream = -1
    var audioStream = -1
    if let video {
        let encoder = try VideoEncoder(
            VideoEncoder.Configuration(codec: video, width: width, height: height, pixelFormat: pixelFormat))
        videoStream = try muxer.addVideoStream(from: encoder, transform: transform)
        videoEncoder = encoder
    }
    if let audio {
        let encoder = try AudioEncoder(AudioEncoder.Configuration(codec: audio))
        audioStream = try muxer.addAudioStream(from: encoder)
        audioEncoder = encoder
    }
    try muxer.start(atSourceTime: sourceStart)
    let totalSamples = frames * 1600
    var samplesSent = 0
    for index in 0..<frames {
        let time = sourceStart + CMTime(value: Int64(index), timescale: 30)
        if let videoEncoder {
            try videoEncoder.send(
                try makeMovingFrame(index, width: width, height: height, pixelFormat: pixelFormat),
                presentationTime: time)
            try drain(videoEncoder.receivePacket, into: muxer, stream: videoStream)
        }
        if let audioEncoder {
            let until = (index + 1) * 1600
            while samplesSent < min(until, totalSamples) {
                let count = min(audioBufferSize, totalSamples - samplesSent)
                let at = sourceStart + CMTime(value: Int64(samplesSent), timescale: 48000)
                try audioEncoder.send(try makeSine(first: samplesSent, count: count, at: at))
                samplesSent += count
                try drain(audioEncoder.receivePacket, into: muxer, stream: audioStream)
            }
        }
    }
    guard finish else { return muxer }
    if let videoEncoder {
        try videoEncoder.finish()
        try drain(videoEncoder.receivePacket, into: muxer, stream: videoStream)
        #expect(try videoEncoder.receivePacket().isEndOfStream)
    }
    if let audioEncoder {
        try audioEncoder.finish()
        try drain(audioEncoder.receivePacket, into: muxer, stream: audioStream)
        #expect(try audioEncoder.receivePacket().isEndOfStream)
    }
    try muxer.finish()
    return muxer
}

extension EncoderOutput {
    var isEndOfStream: Bool {
        if case .endOfStream = self { return true }
        return false
    }
    var isNeedsInput: Bool {
        if case .needsInput = self { return true }
        return false
    }
}

// MARK: - Movies

@Suite("Encoders and muxer, checked with ffprobe and ffmpeg")
struct EncoderMuxerTests {
    struct MovieCase: CustomTestStringConvertible, Sendable {
        var fileType: Muxer.FileType
        var codec: VideoEncoder.Codec
        var ffmpegName: String
        var testDescription: String { "\(codec) in .\(fileType.rawValue)" }
    }

    @Test(
        "2 s of 640x480 at 30 fps with AAC: streams, frame count, durations, clean decode, no fragments left",
        arguments: [
            MovieCase(fileType: .mov, codec: .h264, ffmpegName: "h264"),
            MovieCase(fileType: .mp4, codec: .h264, ffmpegName: "h264"),
            MovieCase(fileType: .m4v, codec: .h264, ffmpegName: "h264"),
            MovieCase(fileType: .mov, codec: .hevc, ffmpegName: "hevc"),
            MovieCase(fileType: .mov, codec: .proRes422, ffmpegName: "prores"),
            MovieCase(fileType: .mov, codec: .jpeg, ffmpegName: "mjpeg"),
        ])
    func movie(_ movie: MovieCase) throws {
        let path = try scratchPath("movie-\(movie.codec).\(movie.fileType.rawValue)")
        let muxer = try record(to: path, fileType: movie.fileType, video: movie.codec, audio: .aac)
        #expect(muxer.lastRemuxDuration != nil)
        let probe = try Probe(path)
        #expect((probe.format["format_name"] as? String)?.contains("mov") == true)
        let video = try #require(probe.stream("video"))
        #expect(video["codec_name"] as? String == movie.ffmpegName)
        #expect(video["width"] as? Int == 640)
        #expect(video["height"] as? Int == 480)
        #expect(video["nb_read_frames"] as? String == "60")
        let videoDuration = try #require(Probe.number(video["duration"]))
        #expect(abs(videoDuration - 2) <= 1.0 / 30 + 1e-6, "video lasts \(videoDuration) s")
        let audio = try #require(probe.stream("audio"))
        #expect(audio["codec_name"] as? String == "aac")
        #expect(audio["sample_rate"] as? String == "48000")
        #expect(audio["channels"] as? Int == 2)
        let audioDuration = try #require(Probe.number(audio["duration"]))
        #expect(abs(audioDuration - 2) <= 1024.0 / 48000 + 1e-6, "audio lasts \(audioDuration) s")
        let audioStart = try #require(Probe.number(audio["start_time"]))
        #expect(abs(audioStart) < 1e-6, "the priming is trimmed: audio starts at \(audioStart)")
        #expect(try decodeErrors(path) == "")
        let atoms = try topLevelAtoms(path)
        #expect(!atoms.contains("moof") && !atoms.contains("mfra"), "still fragmented: \(atoms)")
        let moov = try #require(atoms.firstIndex(of: "moov"))
        let mdat = try #require(atoms.firstIndex(of: "mdat"))
        #expect(moov < mdat, "not fast start: \(atoms)")
    }

    @Test("Track matrix, metadata and exact timestamps read back by ffprobe and the Demuxer")
    func matrixMetadataAndTimestamps() throws {
        let path = try scratchPath("portrait.mov")
        let location = "+48.8584+002.2945+035.000/"
        var options = Muxer.Options(fragmentInterval: CMTime(value: 1, timescale: 1))
        options.metadata = [
            ("title", "Tour Eiffel"), ("creation_time", "2024-05-01T12:00:00.000000Z"),
            ("com.apple.quicktime.location.ISO6709", location), ("com.apple.quicktime.make", "OpenAVCapture"),
            ("com.apple.quicktime.model", "Virtual Camera"), ("com.apple.quicktime.software", "MediaCodecsTests"),
        ]
        try record(
            to: path, fileType: .mov, video: .h264, audio: .aac, options: options,
            transform: .rotation(degrees: 90))

        let probe = try Probe(path)
        let video = try #require(probe.stream("video"))
        let sideData = try #require(video["side_data_list"] as? [[String: Any]])
        let rotation = sideData.compactMap { $0["rotation"] as? Int }.first
        #expect(rotation == -90, "ffprobe counts counterclockwise: \(sideData)")
        let tags = probe.formatTags
        #expect(tags["title"] == "Tour Eiffel")
        #expect(tags["com.apple.quicktime.location.ISO6709"] == location)
        #expect(tags["com.apple.quicktime.make"] == "OpenAVCapture")
        #expect(tags["com.apple.quicktime.model"] == "Virtual Camera")
        #expect(tags["com.apple.quicktime.software"] == "MediaCodecsTests")
        #expect(tags["creation_time"]?.hasPrefix("2024-05-01T12:00:00") == true, "\(tags)")

        let demuxer = try Demuxer(path: path)
        let videoStream = try #require(demuxer.streams.first { $0.mediaType == .video })
        let audioStream = try #require(demuxer.streams.first { $0.mediaType == .audio })
        #expect(videoStream.codecName == "h264")
        #expect(videoStream.width == 640 && videoStream.height == 480)
        #expect(abs(videoStream.frameRate - 30) < 0.01)
        #expect(videoStream.frameCount == 60)
        #expect(abs(videoStream.transform.rotationDegrees - 90) < 1e-9)
        #expect(abs(videoStream.duration.seconds - 2) <= 1.0 / 30)
        #expect(audioStream.codecName == "aac" && audioStream.sampleRate == 48000 && audioStream.channelCount == 2)
        #expect(demuxer.metadata["title"] == "Tour Eiffel")

        var videoTimes: [CMTime] = []
        var audioTimes: [CMTime] = []
        var keyFrames = 0
        readLoop: while true {
            switch try demuxer.readPacket() {
            case .packet(let packet, let stream):
                if stream == videoStream.index {
                    videoTimes.append(packet.presentationTime)
                    if packet.isKeyFrame { keyFrames += 1 }
                } else if stream == audioStream.index {
                    audioTimes.append(packet.presentationTime)
                }
            case .endOfStream: break readLoop
            }
        }
        // Frame i was sent at sourceStart + i/30 and the session started at sourceStart: it is at exactly i/30.
        #expect(videoTimes.count == 60)
        #expect(videoTimes.sorted() == (0..<60).map { CMTime(value: Int64($0), timescale: 30) })
        #expect(keyFrames == 2, "one key frame a second")
        // AAC: the priming packet sits 1024 samples before 0 (the edit list hides it); the rest follow exactly.
        #expect(audioTimes.first == CMTime(value: -1024, timescale: 48000))
        #expect(
            Array(audioTimes.prefix(4).dropFirst()) == (0..<3).map { CMTime(value: Int64($0 * 1024), timescale: 48000) }
        )
    }

    @Test("A recording killed mid-file keeps every complete fragment")
    func crashSafety() async throws {
        let path = try scratchPath("crash.mov")
        await #expect(processExitsWith: .failure) { [path = path as String] in
            // 3.5 s with 1 s fragments, then a crash: no trailer, nothing closed.
            let muxer = try record(
                to: path, fileType: .mov, video: .h264, audio: .aac, frames: 105,
                options: Muxer.Options(fragmentInterval: CMTime(value: 1, timescale: 1)), finish: false)
            withExtendedLifetime(muxer) { abort() }
        }
        let probe = try Probe(path)
        let video = try #require(probe.stream("video"))
        let frames = Int(video["nb_read_frames"] as? String ?? "") ?? 0
        #expect(frames >= 60, "only \(frames) frames survived")
        let duration = try #require(Probe.number(probe.format["duration"]))
        #expect(duration >= 2, "only \(duration) s survived")
        #expect(try topLevelAtoms(path).contains("moof"))
        #expect(try decodeErrors(path) == "")
        let demuxer = try Demuxer(path: path)
        #expect(demuxer.streams.count == 2)
    }

    @Test("An existing file is refused and left untouched")
    func existingFile() throws {
        let path = try scratchPath("existing.mov")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try Muxer(path: path, fileType: .mov)
        } throws: { ($0 as? MediaCodecsError)?.kind == .fileAlreadyExists }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "keep me")
    }

    @Test("A container that cannot hold the codec is refused when the stream is added")
    func codecNotInContainer() throws {
        let path = try scratchPath("prores.m4a")
        let muxer = try Muxer(path: path, fileType: .wav)
        let encoder = try VideoEncoder(VideoEncoder.Configuration(codec: .h264, width: 64, height: 48))
        #expect {
            _ = try muxer.addVideoStream(from: encoder)
        } throws: { ($0 as? MediaCodecsError)?.kind == .unsupportedConfiguration }
    }
}

// MARK: - Audio files

@Suite("Audio files, checked with ffprobe and ffmpeg")
struct AudioFileTests {
    struct AudioCase: CustomTestStringConvertible, Sendable {
        var fileType: Muxer.FileType
        var codec: AudioEncoder.Codec
        var ffmpegName: String
        var testDescription: String { "\(codec) in .\(fileType.rawValue)" }
    }

    @Test(
        "2 s of 48 kHz stereo in odd-sized buffers: codec, rate, channels, duration, clean decode",
        arguments: [
            AudioCase(fileType: .m4a, codec: .aac, ffmpegName: "aac"),
            AudioCase(fileType: .m4a, codec: .alac, ffmpegName: "alac"),
            AudioCase(
                fileType: .wav, codec: .linearPCM(bitsPerSample: 16, isFloat: false, isBigEndian: false),
                ffmpegName: "pcm_s16le"),
            AudioCase(
                fileType: .wav, codec: .linearPCM(bitsPerSample: 32, isFloat: true, isBigEndian: false),
                ffmpegName: "pcm_f32le"),
            AudioCase(
                fileType: .aiff, codec: .linearPCM(bitsPerSample: 16, isFloat: false, isBigEndian: true),
                ffmpegName: "pcm_s16be"),
            AudioCase(
                fileType: .caf, codec: .linearPCM(bitsPerSample: 16, isFloat: false, isBigEndian: false),
                ffmpegName: "pcm_s16le"),
            AudioCase(fileType: .caf, codec: .alac, ffmpegName: "alac"),
        ])
    func audioFile(_ audio: AudioCase) throws {
        let path = try scratchPath("audio-\(audio.ffmpegName).\(audio.fileType.rawValue)")
        try record(to: path, fileType: audio.fileType, video: nil, audio: audio.codec, audioBufferSize: 441)
        let probe = try Probe(path)
        let stream = try #require(probe.stream("audio"))
        #expect(probe.streams.count == 1)
        #expect(stream["codec_name"] as? String == audio.ffmpegName)
        #expect(stream["sample_rate"] as? String == "48000")
        #expect(stream["channels"] as? Int == 2)
        let duration = try #require(Probe.number(stream["duration"]) ?? Probe.number(probe.format["duration"]))
        // Within one codec frame: FFmpeg's ALAC muxing counts the short last packet as a whole 4096-sample frame.
        let frame = audio.codec == .alac ? 4096.0 : 1024.0
        #expect(abs(duration - 2) <= frame / 48000 + 1e-6, "lasts \(duration) s")
        #expect(try decodeErrors(path) == "")
    }
}

// MARK: - Encoder units

@Suite("Encoders' value API")
struct EncoderAPITests {
    @Test("needsInput before input, endOfStream after finish, errors for misuse")
    func videoEncoderStates() throws {
        let encoder = try VideoEncoder(VideoEncoder.Configuration(codec: .h264, width: 64, height: 48))
        #expect(!encoder.convertsInternally)
        // libx264's global header is Annex B: a start code, then the SPS (NAL type 7); muxers write avcC from it.
        #expect(encoder.extradata.starts(with: [0, 0, 0, 1]) && encoder.extradata.count > 4)
        #expect(encoder.extradata.count > 4 && encoder.extradata[4] & 0x1F == 7)
        #expect(try encoder.receivePacket().isNeedsInput)
        let frame = try makeMovingFrame(0, width: 64, height: 48, pixelFormat: encoder.configuration.pixelFormat)
        try encoder.send(frame, presentationTime: CMTime(value: 0, timescale: 30))
        guard case .packet(let packet) = try encoder.receivePacket() else {
            Issue.record("zerolatency gives the packet at once")
            return
        }
        #expect(packet.isKeyFrame && packet.presentationTime == .zero && packet.decodeTime == .zero)
        let next = try makeMovingFrame(1, width: 64, height: 48, pixelFormat: encoder.configuration.pixelFormat)
        try encoder.send(next, presentationTime: CMTime(value: 1, timescale: 30))
        guard case .packet(let second) = try encoder.receivePacket() else {
            Issue.record("zerolatency gives the packet at once")
            return
        }
        #expect(!second.isKeyFrame && second.presentationTime == CMTime(value: 1, timescale: 30))
        #expect(
            throws: MediaCodecsError.self,
            "times must increase",
            performing: { try encoder.send(frame, presentationTime: CMTime(value: 0, timescale: 30)) })
        let wrongSize = try makeMovingFrame(0, width: 32, height: 48, pixelFormat: encoder.configuration.pixelFormat)
        #expect {
            try encoder.send(wrongSize, presentationTime: CMTime(value: 1, timescale: 30))
        } throws: { ($0 as? MediaCodecsError)?.kind == .formatMismatch }
        try encoder.finish()
        while case .packet = try encoder.receivePacket() {}
        #expect(try encoder.receivePacket().isEndOfStream)
        #expect {
            try encoder.send(frame, presentationTime: CMTime(value: 2, timescale: 30))
        } throws: { ($0 as? MediaCodecsError)?.kind == .invalidState }
    }

    @Test("NV12 goes to x264 without a copy: the buffer is released and unlocked once encoded")
    func zeroCopyReleasesBuffer() throws {
        let encoder = try VideoEncoder(VideoEncoder.Configuration(codec: .h264, width: 64, height: 48))
        weak var released: CVPixelBuffer?
        try {
            let frame = try makeMovingFrame(0, width: 64, height: 48, pixelFormat: encoder.configuration.pixelFormat)
            released = frame
            try encoder.send(frame, presentationTime: .zero)
            #expect(!frame.isBaseAddressLocked)
        }()
        #expect(released == nil)
        while case .packet = try encoder.receivePacket() {}
    }

    @Test("HEVC, JPEG and ProRes convert NV12 internally to the codec's format")
    func internalConversion() throws {
        for (codec, format) in [(VideoEncoder.Codec.hevc, "yuv420p"), (.jpeg, "yuvj420p"), (.proRes422, "yuv422p10le")]
        {
            let encoder = try VideoEncoder(VideoEncoder.Configuration(codec: codec, width: 64, height: 48))
            #expect(encoder.convertsInternally)
            #expect(encoder.codecPixelFormatName == format)
        }
    }

    @Test("A buffer hours ahead moves the timeline to it instead of filling hours of silence")
    func audioClockJump() throws {
        let encoder = try AudioEncoder(AudioEncoder.Configuration(codec: .aac))
        let start = CMTime(value: 1000, timescale: 1)
        try encoder.send(try makeSine(first: 0, count: 2048, at: start))
        // A free-running source's next buffer, three hours on: filling that would be 518 million samples.
        let jump = start + CMTime(value: 3 * 3600, timescale: 1)
        try encoder.send(try makeSine(first: 2048, count: 2048, at: jump))
        try encoder.finish()
        var times: [CMTime] = []
        while case .packet(let packet) = try encoder.receivePacket() { times.append(packet.presentationTime) }
        // 4096 samples are four frames and the priming packet: nothing was added for the gap.
        #expect(times.count == 5)
        #expect(times.first == start - CMTime(value: 1024, timescale: 48000))
        #expect(times.last.map { $0 >= jump && $0 < jump + CMTime(value: 2048, timescale: 48000) } == true)
    }

    @Test("AAC reports its priming; a gap in the input is filled with silence so timestamps stay exact")
    func audioTimeline() throws {
        let encoder = try AudioEncoder(AudioEncoder.Configuration(codec: .aac))
        #expect(encoder.frameSize == 1024)
        #expect(encoder.primingFrameCount == 1024)
        #expect(encoder.primingDuration == CMTime(value: 1024, timescale: 48000))
        #expect(encoder.extradata.count >= 2, "AudioSpecificConfig")
        let start = CMTime(value: 1000, timescale: 1)
        try encoder.send(try makeSine(first: 0, count: 1000, at: start))
        // 10 ms missing, then 2000 more samples: 3000 + 480 samples in all.
        try encoder.send(try makeSine(first: 1480, count: 2000, at: start + CMTime(value: 1480, timescale: 48000)))
        try encoder.finish()
        var times: [CMTime] = []
        while case .packet(let packet) = try encoder.receivePacket() { times.append(packet.presentationTime) }
        #expect(try encoder.receivePacket().isEndOfStream)
        #expect(times.first == start - CMTime(value: 1024, timescale: 48000))
        // 3480 samples (the 480 of silence included) are four frames; AAC gives one packet more, its priming.
        #expect(times == (-1...3).map { start + CMTime(value: Int64($0 * 1024), timescale: 48000) })
    }
}
