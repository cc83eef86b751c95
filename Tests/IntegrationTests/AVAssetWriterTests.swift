// AVAssetWriter, its inputs and the pixel buffer adaptor, checked with ffprobe and a full ffmpeg decode.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import OpenCoreMedia
import OpenCoreVideo
import Testing
import TestSupport

// MARK: - Helpers

/// A fresh URL in a per-process scratch directory (nothing is there yet).
func writerScratchURL(_ name: String) throws -> URL { try scratchURL(name, suite: "avassetwriter-tests") }

/// The source clock's time of the first sample: a host-clock-like 1000.5 s.
let writerSourceStart = CMTime(value: 2001, timescale: 2)
/// The location the tests write (the Eiffel Tower), in ISO 6709.
let writerTestLocation = "+48.8584+002.2945/"

/// `count` frames of the virtual microphone's sound at `first`, as interleaved Float32 PCM in a sample buffer.
func makeSoundBuffer(
    _ source: VirtualSoundSource, first: Int64, count: Int, at time: CMTime
) throws -> CMSampleBuffer {
    let channels = source.channelCount
    let block = CMBlockBuffer(length: count * channels * 4)
    block.withUnsafeMutableBytes { bytes in
        source.render(startingAt: first, frameCount: count, into: bytes.bindMemory(to: Float.self))
    }
    let description = try CMFormatDescription(
        audioStreamBasicDescription: .linearPCM(
            sampleRate: Float64(source.sampleRate), channels: UInt32(channels), bitsPerChannel: 32, isFloat: true))
    return try CMSampleBuffer(
        dataBuffer: block, formatDescription: description, numSamples: count,
        sampleTimings: [
            CMSampleTimingInfo(
                duration: CMTime(value: 1, timescale: Int32(source.sampleRate)), presentationTimeStamp: time,
                decodeTimeStamp: .invalid)
        ], sampleSizes: [channels * 4])
}

/// Waits (polling) until `input` takes more data: back-pressure as an offline writer honours it.
func waitUntilReady(_ input: AVAssetWriterInput) {
    _ = waitUntil(timeout: 5, every: 0.0005) { input.isReadyForMoreMediaData }
}

/// What one test movie holds.
struct MovieRecipe: Sendable {
    var fileType: AVFileType
    var frames = 60
    var frameRate = 30
    var width = 640
    var height = 480
    var hasVideo = true
    var audioFormat: UInt32? = kAudioFormatMPEG4AAC
    var audioSourceRate = 48_000
    var transform = CGAffineTransform.identity
    var naturalSize = CGSize.zero
    var title: String? = "Tour Eiffel"
    var location: String? = writerTestLocation
    var fragmentInterval = CMTime.invalid
}

/// Writes `recipe` with the virtual camera's frames (through the adaptor's pool) and the virtual microphone's
/// sound, honouring back-pressure; returns the finished writer.
@discardableResult
func writeMovie(to url: URL, _ recipe: MovieRecipe) async throws -> AVAssetWriter {
    let writer = try AVAssetWriter(outputURL: url, fileType: recipe.fileType)
    var items: [AVMetadataItem] = []
    if let title = recipe.title {
        let item = AVMutableMetadataItem()
        item.identifier = .commonIdentifierTitle
        item.value = NSString(string: title)
        items.append(item)
    }
    if let location = recipe.location {
        let item = AVMutableMetadataItem()
        item.identifier = .quickTimeMetadataLocationISO6709
        item.value = NSString(string: location)
        items.append(item)
    }
    writer.metadata = items
    writer.movieFragmentInterval = recipe.fragmentInterval
    var video: AVAssetWriterInput?
    var adaptor: AVAssetWriterInputPixelBufferAdaptor?
    if recipe.hasVideo {
        let input = AVAssetWriterInput(
            mediaType: .video,
            outputSettings: [
                AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: recipe.width, AVVideoHeightKey: recipe.height,
                AVVideoCompressionPropertiesKey: [
                    AVVideoExpectedSourceFrameRateKey: recipe.frameRate, AVVideoAverageBitRateKey: 2_000_000,
                    AVVideoMaxKeyFrameIntervalKey: recipe.frameRate, AVVideoAllowFrameReorderingKey: false,
                    AVVideoProfileLevelKey: AVVideoProfileLevelH264HighAutoLevel,
                ] as [String: Any],
            ])
        input.transform = recipe.transform
        input.naturalSize = recipe.naturalSize
        adaptor = AVAssetWriterInputPixelBufferAdaptor(
            assetWriterInput: input,
            sourcePixelBufferAttributes: [
                kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
                kCVPixelBufferWidthKey: recipe.width, kCVPixelBufferHeightKey: recipe.height,
            ])
        #expect(writer.canAdd(input))
        writer.add(input)
        video = input
    }
    var audio: AVAssetWriterInput?
    if let format = recipe.audioFormat {
        var settings: [String: Any] = [AVFormatIDKey: format, AVSampleRateKey: 48_000, AVNumberOfChannelsKey: 2]
        if format == kAudioFormatMPEG4AAC { settings[AVEncoderBitRateKey] = 128_000 }
        if format == kAudioFormatLinearPCM { settings[AVLinearPCMBitDepthKey] = 16 }
        let input = AVAssetWriterInput(mediaType: .audio, outputSettings: settings)
        writer.add(input)
        audio = input
    }
    #expect(adaptor?.pixelBufferPool == nil, "no pool before startWriting")
    #expect(writer.startWriting(), "startWriting failed: \(String(describing: writer.error))")
    #expect(writer.status == .writing)
    writer.startSession(atSourceTime: writerSourceStart)

    let frameSource = VirtualFrameSource(width: recipe.width, height: recipe.height, frameRate: Int32(recipe.frameRate))
    let sound = VirtualSoundSource(sampleRate: recipe.audioSourceRate, channelCount: 2)
    let pool: CVPixelBufferPool? = recipe.hasVideo ? try #require(adaptor?.pixelBufferPool, "the adaptor's pool") : nil
    let durationFrames = recipe.frames
    var samplesWritten: Int64 = 0
    for index in 0..<durationFrames {
        if let video, let adaptor, let pool {
            var buffer: CVPixelBuffer?
            CVPixelBufferPoolCreatePixelBuffer(nil, pool, &buffer)
            let pixelBuffer = try #require(buffer)
            frameSource.render(frameIndex: UInt32(index), into: pixelBuffer)
            waitUntilReady(video)
            let time = writerSourceStart + CMTime(value: Int64(index), timescale: Int32(recipe.frameRate))
            #expect(adaptor.append(pixelBuffer, withPresentationTime: time))
        }
        if let audio {
            let until = Int64(index + 1) * Int64(recipe.audioSourceRate) / Int64(recipe.frameRate)
            while samplesWritten < until {
                let count = Int(min(1024, until - samplesWritten))
                let time = writerSourceStart + CMTime(value: samplesWritten, timescale: Int32(recipe.audioSourceRate))
                waitUntilReady(audio)
                #expect(audio.append(try makeSoundBuffer(sound, first: samplesWritten, count: count, at: time)))
                samplesWritten += Int64(count)
            }
        }
    }
    video?.markAsFinished()
    audio?.markAsFinished()
    #expect(video?.isReadyForMoreMediaData != true, "not ready once finished")
    await writer.finishWriting()
    #expect(writer.status == .completed, "finishing failed: \(String(describing: writer.error))")
    return writer
}

// MARK: - Movies

@Suite("AVAssetWriter, checked with ffprobe and ffmpeg", .serialized)
struct AVAssetWriterTests {
    struct MovieCase: CustomTestStringConvertible, Sendable {
        var fileType: AVFileType
        var fileExtension: String
        var fragmentInterval: CMTime
        var testDescription: String {
            ".\(fileExtension)" + (fragmentInterval.isNumeric ? ", 1 s fragments" : ", no fragments")
        }
    }

    @Test(
        "2 s of 640x480 at 30 fps with AAC, rotated 90°, with a title and a location",
        arguments: [
            MovieCase(fileType: .mov, fileExtension: "mov", fragmentInterval: CMTime(value: 1, timescale: 1)),
            MovieCase(fileType: .mp4, fileExtension: "mp4", fragmentInterval: .invalid),
        ])
    func movie(_ movie: MovieCase) async throws {
        guard MediaTool.available(for: "AVAssetWriterTests.movie") else { return }
        let url = try writerScratchURL("movie.\(movie.fileExtension)")
        var recipe = MovieRecipe(fileType: movie.fileType)
        recipe.transform = CGAffineTransform(rotationAngle: .pi / 2)
        recipe.fragmentInterval = movie.fragmentInterval
        try await writeMovie(to: url, recipe)

        let probe = try FFprobeReport(url)
        let video = try #require(probe.stream("video"))
        #expect(video["codec_name"] as? String == "h264")
        #expect(video["width"] as? Int == 640 && video["height"] as? Int == 480)
        #expect(video["nb_read_frames"] as? String == "60")
        #expect(video["r_frame_rate"] as? String == "30/1")
        let videoDuration = try #require(FFprobeReport.number(video["duration"]))
        #expect(abs(videoDuration - 2) <= 1.0 / 30 + 1e-6, "video lasts \(videoDuration) s")
        let sideData = video["side_data_list"] as? [[String: Any]] ?? []
        #expect(sideData.compactMap { $0["rotation"] as? Int }.first == -90, "side data: \(sideData)")
        let audio = try #require(probe.stream("audio"))
        #expect(audio["codec_name"] as? String == "aac")
        #expect(audio["sample_rate"] as? String == "48000" && audio["channels"] as? Int == 2)
        let audioDuration = try #require(FFprobeReport.number(audio["duration"]))
        #expect(abs(audioDuration - 2) <= 1024.0 / 48000 + 1e-6, "audio lasts \(audioDuration) s")
        let duration = try #require(FFprobeReport.number(probe.format["duration"]))
        #expect(abs(duration - 2) < 0.05, "the file lasts \(duration) s")
        let tags = probe.tags
        #expect(tags["title"] == "Tour Eiffel", "\(tags)")
        #expect(
            tags["com.apple.quicktime.location.ISO6709"] == writerTestLocation
                || tags["location"] == writerTestLocation,
            "\(tags)")
        #expect(try ffmpegDecodeErrors(url) == "")
    }

    struct DisplaySizeCase: CustomTestStringConvertible, Sendable {
        var movie: MovieCase
        var naturalSize: CGSize
        /// What ffprobe reports: the sample and display aspect ratios the track header's size makes of 640x480.
        var sampleAspectRatio: String
        var displayAspectRatio: String
        var testDescription: String { "\(movie.testDescription), shown at \(naturalSize.width)x\(naturalSize.height)" }
    }

    @Test(
        "naturalSize is the track header's size, independent of the encoded 640x480",
        arguments: [
            DisplaySizeCase(
                movie: MovieCase(fileType: .mov, fileExtension: "mov", fragmentInterval: CMTime(value: 1, timescale: 1)),
                naturalSize: CGSize(width: 1280, height: 720), sampleAspectRatio: "4:3", displayAspectRatio: "16:9"),
            DisplaySizeCase(
                movie: MovieCase(fileType: .mp4, fileExtension: "mp4", fragmentInterval: .invalid),
                naturalSize: CGSize(width: 320, height: 480), sampleAspectRatio: "1:2", displayAspectRatio: "2:3"),
        ])
    func naturalSize(_ display: DisplaySizeCase) async throws {
        guard MediaTool.available([.ffprobe, .ffmpeg, .mediainfo], for: "AVAssetWriterTests.naturalSize") else { return }
        let url = try writerScratchURL("natural-size.\(display.movie.fileExtension)")
        var recipe = MovieRecipe(fileType: display.movie.fileType)
        recipe.frames = 10
        recipe.fragmentInterval = display.movie.fragmentInterval
        recipe.naturalSize = display.naturalSize
        try await writeMovie(to: url, recipe)

        let video = try #require(try FFprobeReport(url).stream("video"))
        #expect(video["width"] as? Int == 640 && video["height"] as? Int == 480, "the encoded size is unchanged")
        #expect(video["sample_aspect_ratio"] as? String == display.sampleAspectRatio, "\(video)")
        #expect(video["display_aspect_ratio"] as? String == display.displayAspectRatio, "\(video)")
        #expect(try ffmpegDecodeErrors(url) == "")
        // MediaInfo reads the track header on its own: the coded size, and the header's shape as the display ratio.
        let mediaInfo = try MediaTool.mediainfo.run(["--Inform=Video;%Width%x%Height% %DisplayAspectRatio%", url.path])
        let fields = mediaInfo.outputText.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(fields.first == "640x480", "mediainfo: \(mediaInfo.outputText)")
        let ratio = try #require(fields.last.flatMap(Double.init), "mediainfo: \(mediaInfo.outputText)")
        #expect(abs(ratio - display.naturalSize.width / display.naturalSize.height) < 0.001, "mediainfo: \(ratio)")
        // Read back through Apple's API, as Apple's reads the track header.
        let track = try #require(try await AVURLAsset(url: url).loadTracks(withMediaType: .video).first)
        #expect(try await track.load(.naturalSize) == display.naturalSize)
    }

    @Test("60 fps for 1 s (HFR), fed by requestMediaDataWhenReady: a 60 fps track")
    func highFrameRate() async throws {
        guard MediaTool.available(for: "AVAssetWriterTests.highFrameRate") else { return }
        let url = try writerScratchURL("hfr.mov")
        let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
        let input = AVAssetWriterInput(
            mediaType: .video,
            outputSettings: [
                AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 640, AVVideoHeightKey: 480,
                AVVideoCompressionPropertiesKey: [AVVideoExpectedSourceFrameRateKey: 60],
            ])
        let adaptor = AVAssetWriterInputPixelBufferAdaptor(assetWriterInput: input, sourcePixelBufferAttributes: nil)
        writer.add(input)
        #expect(writer.startWriting())
        writer.startSession(atSourceTime: .zero)
        let pool = try #require(adaptor.pixelBufferPool)
        let feeder = Feeder(adaptor: adaptor, pool: pool)
        let queue = DispatchQueue(label: "hfr feeder")
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            input.requestMediaDataWhenReady(on: queue) {
                if feeder.feed() { done.resume() }
            }
        }
        await writer.finishWriting()
        #expect(writer.status == .completed, "\(String(describing: writer.error))")

        let probe = try FFprobeReport(url)
        let video = try #require(probe.stream("video"))
        #expect(video["r_frame_rate"] as? String == "60/1")
        #expect(video["nb_read_frames"] as? String == "60")
        let asset = AVURLAsset(url: url)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        #expect(track.nominalFrameRate == 60)
        #expect(abs(asset.duration.seconds - 1) < 0.02, "\(asset.duration.seconds) s")
        #expect(try ffmpegDecodeErrors(url) == "")
    }

    /// Appends the virtual camera's 60 frames at 60 fps while the input is ready; called on one queue only.
    final class Feeder: @unchecked Sendable {
        let adaptor: AVAssetWriterInputPixelBufferAdaptor
        let pool: CVPixelBufferPool
        let source = VirtualFrameSource(width: 640, height: 480, frameRate: 60)
        var next = 0
        var finished = false

        init(adaptor: AVAssetWriterInputPixelBufferAdaptor, pool: CVPixelBufferPool) {
            self.adaptor = adaptor
            self.pool = pool
        }

        /// Appends while ready; true exactly once, when the last frame was appended and the input marked finished.
        func feed() -> Bool {
            guard !finished else { return false }
            while adaptor.assetWriterInput.isReadyForMoreMediaData, next < 60 {
                var buffer: CVPixelBuffer?
                CVPixelBufferPoolCreatePixelBuffer(nil, pool, &buffer)
                guard let buffer else { return false }
                source.render(frameIndex: UInt32(next), into: buffer)
                adaptor.append(buffer, withPresentationTime: CMTime(value: Int64(next), timescale: 60))
                next += 1
            }
            guard next == 60 else { return false }
            finished = true
            adaptor.assetWriterInput.markAsFinished()
            return true
        }
    }

    struct AudioCase: CustomTestStringConvertible, Sendable {
        var fileType: AVFileType
        var fileExtension: String
        var format: UInt32
        var sourceRate: Int
        var ffmpegName: String
        var testDescription: String { "\(ffmpegName) in .\(fileExtension) from \(sourceRate) Hz" }
    }

    @Test(
        "Audio-only files: 2 s of the virtual microphone, resampled when its rate differs from the settings",
        arguments: [
            AudioCase(
                fileType: .m4a, fileExtension: "m4a", format: kAudioFormatMPEG4AAC, sourceRate: 48_000,
                ffmpegName: "aac"),
            AudioCase(
                fileType: .wav, fileExtension: "wav", format: kAudioFormatLinearPCM, sourceRate: 44_100,
                ffmpegName: "pcm_s16le"),
        ])
    func audioOnly(_ audio: AudioCase) async throws {
        guard MediaTool.available(for: "AVAssetWriterTests.audioOnly") else { return }
        let url = try writerScratchURL("audio.\(audio.fileExtension)")
        var recipe = MovieRecipe(fileType: audio.fileType)
        recipe.hasVideo = false
        recipe.audioFormat = audio.format
        recipe.audioSourceRate = audio.sourceRate
        recipe.location = nil
        try await writeMovie(to: url, recipe)
        let probe = try FFprobeReport(url)
        #expect(probe.streams.count == 1)
        let stream = try #require(probe.stream("audio"))
        #expect(stream["codec_name"] as? String == audio.ffmpegName)
        #expect(stream["sample_rate"] as? String == "48000")
        #expect(stream["channels"] as? Int == 2)
        let duration = try #require(
            FFprobeReport.number(stream["duration"]) ?? FFprobeReport.number(probe.format["duration"]))
        #expect(abs(duration - 2) <= 2048.0 / 48000, "lasts \(duration) s")
        #expect(try ffmpegDecodeErrors(url) == "")
    }

    // MARK: Files and status

    @Test("An existing file: AVError.fileAlreadyExists, the file untouched")
    func existingFile() throws {
        let url = try writerScratchURL("existing.mov")
        try Data("keep me".utf8).write(to: url)
        #expect {
            _ = try AVAssetWriter(outputURL: url, fileType: .mov)
        } throws: { error in
            guard let error = error as? AVError else { return false }
            return error.code == .fileAlreadyExists && error.userInfo[NSLocalizedDescriptionKey] != nil
        }
        #expect(try String(contentsOf: url, encoding: .utf8) == "keep me")
    }

    @Test("A directory that does not exist: a clear AVError at init")
    func missingDirectory() throws {
        let url = try writerScratchURL("no-such-directory/movie.mov")
        #expect {
            _ = try AVAssetWriter(url: url, fileType: .mov)
        } throws: { error in
            let description = (error as? AVError)?.userInfo[NSLocalizedDescriptionKey] as? String ?? ""
            return description.contains("not writable")
        }
    }

    @Test("cancelWriting removes the file and ends in .cancelled; the inputs stop taking data")
    func cancel() throws {
        let url = try writerScratchURL("cancelled.mov")
        let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
        let input = AVAssetWriterInput(
            mediaType: .video,
            outputSettings: [AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 320, AVVideoHeightKey: 240])
        let adaptor = AVAssetWriterInputPixelBufferAdaptor(assetWriterInput: input, sourcePixelBufferAttributes: nil)
        writer.add(input)
        #expect(!input.isReadyForMoreMediaData)
        var statuses: [AVAssetWriter.Status] = []
        let observation = writer.observe(\.status, options: [.new]) { _, change in
            if let status = change.newValue { statuses.append(status) }
        }
        #expect(writer.startWriting())
        #expect(input.isReadyForMoreMediaData)
        writer.startSession(atSourceTime: .zero)
        let pool = try #require(adaptor.pixelBufferPool)
        var buffer: CVPixelBuffer?
        CVPixelBufferPoolCreatePixelBuffer(nil, pool, &buffer)
        #expect(adaptor.append(try #require(buffer), withPresentationTime: .zero))
        #expect(FileManager.default.fileExists(atPath: url.path))
        writer.cancelWriting()
        #expect(writer.status == .cancelled)
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(!input.isReadyForMoreMediaData)
        #expect(!adaptor.append(try #require(buffer), withPresentationTime: CMTime(value: 1, timescale: 30)))
        observation.invalidate()
        #expect(statuses == [.writing, .cancelled])
    }

    @Test("A codec the container cannot hold: startWriting returns false, status .failed with an error")
    func containerRefusesCodec() throws {
        let url = try writerScratchURL("alac.wav")
        let writer = try AVAssetWriter(outputURL: url, fileType: .wav)
        writer.add(
            AVAssetWriterInput(
                mediaType: .audio,
                outputSettings: [
                    AVFormatIDKey: kAudioFormatAppleLossless, AVSampleRateKey: 48_000, AVNumberOfChannelsKey: 2,
                ]))
        #expect(!writer.startWriting())
        #expect(writer.status == .failed)
        #expect((writer.error as? AVError)?.code == .unsupportedOutputSettings)
        #expect(!FileManager.default.fileExists(atPath: url.path), "the claimed file is removed")
    }

    @Test("Inputs: video cannot go into an audio file; an input belongs to one writer")
    func canAdd() throws {
        let writer = try AVAssetWriter(outputURL: try writerScratchURL("can-add.m4a"), fileType: .m4a)
        let video = AVAssetWriterInput(
            mediaType: .video,
            outputSettings: [AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 320, AVVideoHeightKey: 240])
        #expect(!writer.canAdd(video))
        let audio = AVAssetWriterInput(
            mediaType: .audio,
            outputSettings: [AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: 48_000, AVNumberOfChannelsKey: 1])
        #expect(writer.canAdd(audio))
        writer.add(audio)
        #expect(!writer.canAdd(audio))
        #expect(writer.inputs.count == 1)
    }

    // MARK: Misuse traps, as Apple raises

    @Test("An unknown output settings key traps, naming it")
    func unknownKeyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = AVAssetWriterInput(
                mediaType: .video,
                outputSettings: [
                    AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 320, AVVideoHeightKey: 240,
                    "AVVideoColorPropertiesKeyTypo": 1,
                ])
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("AVVideoColorPropertiesKeyTypo"), "\(message)")
        await #expect(processExitsWith: .failure) {
            _ = AVAssetWriterInput(
                mediaType: .audio,
                outputSettings: [
                    AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: 48_000, AVNumberOfChannelsKey: 2,
                    AVLinearPCMBitDepthKey: 16,
                ])
        }
    }

    @Test("nil output settings (passthrough) trap: not supported yet")
    func passthroughTraps() async {
        await #expect(processExitsWith: .failure) {
            _ = AVAssetWriterInput(mediaType: .video, outputSettings: nil)
        }
    }

    @Test("append before startSession traps")
    func appendBeforeSessionTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            // A name of its own: the child traps before removing its file, and process ids come round again.
            let url = URL(fileURLWithPath: NSTemporaryDirectory() + "append-before-session-\(UUID().uuidString).mov")
            let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
            let input = AVAssetWriterInput(
                mediaType: .video,
                outputSettings: [AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 320, AVVideoHeightKey: 240])
            let adaptor = AVAssetWriterInputPixelBufferAdaptor(
                assetWriterInput: input, sourcePixelBufferAttributes: nil)
            writer.add(input)
            _ = writer.startWriting()
            var buffer: CVPixelBuffer?
            CVPixelBufferPoolCreatePixelBuffer(nil, adaptor.pixelBufferPool!, &buffer)
            _ = adaptor.append(buffer!, withPresentationTime: .zero)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("before startSession(atSourceTime:)"), "\(message)")
    }

    @Test("add after startWriting traps")
    func addAfterStartTraps() async {
        await #expect(processExitsWith: .failure) {
            let url = URL(fileURLWithPath: NSTemporaryDirectory() + "add-after-start-\(UUID().uuidString).m4a")
            let writer = try AVAssetWriter(outputURL: url, fileType: .m4a)
            let settings: [String: Any] = [
                AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: 48_000, AVNumberOfChannelsKey: 2,
            ]
            writer.add(AVAssetWriterInput(mediaType: .audio, outputSettings: settings))
            _ = writer.startWriting()
            writer.add(AVAssetWriterInput(mediaType: .audio, outputSettings: settings))
        }
    }
}
