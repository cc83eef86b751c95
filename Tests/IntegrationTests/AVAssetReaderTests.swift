// AVAsset's async loading, AVAssetReader's outputs and AVAssetImageGenerator, reading back what AVAssetWriter wrote:
// frame indices in the pictures, the writer's timestamps, the tone's pitch, checked against ffprobe's counts.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import OpenCoreMedia
import OpenCoreVideo
import TestSupport
import Testing

/// The movies the reader tests read, written once per process.
actor ReaderMovies {
    static let shared = ReaderMovies()
    private var written: [String: URL] = [:]

    /// 2 s of 640x480 at `frameRate` with the virtual camera's frames (index i at i/frameRate) and AAC stereo.
    func movie(frameRate: Int = 30, seconds: Int = 2) async throws -> URL {
        let key = "\(frameRate)x\(seconds)"
        if let url = written[key] { return url }
        let url = try scratchURL("reader-\(key).mov", suite: "avassetreader-tests")
        var recipe = MovieRecipe(fileType: .mov)
        recipe.frameRate = frameRate
        recipe.frames = frameRate * seconds
        recipe.title = nil
        recipe.location = nil
        try await writeMovie(to: url, recipe)
        written[key] = url
        return url
    }
}

/// What the virtual camera wrote in a picture: its frame index, or -1 for the flash frame of a whole second
/// (which carries no index).
func frameMarker(_ sample: CMSampleBuffer) -> Int? {
    guard let picture = sample.imageBuffer else { return nil }
    if VirtualFrameReader.isFlashFrame(picture) { return -1 }
    return VirtualFrameReader.readFrameIndex(from: picture).map(Int.init)
}

/// The markers of frames `indices` at `frameRate`: -1 at whole seconds, the index elsewhere.
func expectedMarkers(_ indices: some Sequence<Int>, frameRate: Int) -> [Int] {
    indices.map { $0 % frameRate == 0 ? -1 : $0 }
}

/// Every sample an output gives, until nil.
func readAll(_ output: AVAssetReaderOutput) -> [CMSampleBuffer] {
    var samples: [CMSampleBuffer] = []
    while let sample = output.copyNextSampleBuffer() { samples.append(sample) }
    return samples
}

/// The first channel of interleaved 16-bit PCM buffers, as doubles in -1...1.
func firstChannel(ofInt16 samples: [CMSampleBuffer]) -> [Double] {
    var values: [Double] = []
    for sample in samples {
        guard let data = sample.dataBuffer,
            let channels = sample.formatDescription?.audioStreamBasicDescription?.mChannelsPerFrame
        else { continue }
        data.withUnsafeBytes { bytes in
            let ints = bytes.bindMemory(to: Int16.self)
            for index in stride(from: 0, to: sample.numSamples * Int(channels), by: Int(channels)) {
                values.append(Double(ints[index]) / 32768)
            }
        }
    }
    return values
}

/// The frequency of the strongest steady sine from its rising zero crossings, interpolated between samples.
func zeroCrossingFrequency(_ samples: ArraySlice<Double>, sampleRate: Double) -> Double {
    var crossings: [Double] = []
    var index = samples.startIndex
    while index + 1 < samples.endIndex {
        let (a, b) = (samples[index], samples[index + 1])
        if a < 0 && b >= 0 { crossings.append(Double(index) + a / (a - b)) }
        index += 1
    }
    guard let first = crossings.first, let last = crossings.last, crossings.count > 1 else { return 0 }
    return Double(crossings.count - 1) / ((last - first) / sampleRate)
}

@Suite("AVAssetReader and AVAssetImageGenerator read back what AVAssetWriter wrote", .serialized)
struct AVAssetReaderTests {
    @Test("load(.duration, .tracks) gives what ffprobe reads; a missing file throws")
    func asyncLoading() async throws {
        guard MediaTool.available(for: "AVAssetReaderTests.asyncLoading") else { return }
        let url = try await ReaderMovies.shared.movie()
        let asset = AVURLAsset(url: url)
        let (duration, tracks) = try await asset.load(.duration, .tracks)
        let probe = try FFprobeReport(url)
        let probed = try #require(FFprobeReport.number(probe.format["duration"]))
        #expect(abs(duration.seconds - probed) < 0.001, "\(duration.seconds) s, ffprobe \(probed) s")
        #expect(tracks.map(\.mediaType) == [.video, .audio])
        let video = try #require(try await asset.loadTracks(withMediaType: .video).first)
        let (size, rate, formats) = try await video.load(.naturalSize, .nominalFrameRate, .formatDescriptions)
        #expect(size == CGSize(width: 640, height: 480))
        #expect(rate == 30)
        #expect(formats.first?.mediaSubType == .h264)
        #expect(video.asset === asset)
        #expect(try await asset.loadTrack(withTrackID: 2)?.mediaType == .audio)

        let missing = AVURLAsset(url: try scratchURL("missing.mov", suite: "avassetreader-tests"))
        await #expect(throws: AVError.self) { try await missing.load(.duration) }
        #expect(try await missing.load(.isReadable) == false)
        #expect(throws: AVError.self) { try AVAssetReader(asset: missing) }
    }

    @Test("Decoded video: every frame's index in order, at the writer's timestamps")
    func decodedVideo() async throws {
        let url = try await ReaderMovies.shared.movie()
        let asset = AVURLAsset(url: url)
        let track = try #require(try await asset.loadTracks(withMediaType: .video).first)
        let reader = try AVAssetReader(asset: asset)
        let output = AVAssetReaderTrackOutput(
            track: track,
            outputSettings: [
                kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            ])
        #expect(reader.canAdd(output))
        reader.add(output)
        #expect(!reader.canAdd(output), "an output is added once")
        #expect(reader.status == .unknown)
        #expect(reader.startReading())
        #expect(reader.status == .reading)
        let samples = readAll(output)
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        #expect(samples.count == 60)
        #expect(samples.map(frameMarker) == expectedMarkers(0..<60, frameRate: 30))
        let times = samples.map(\.presentationTimeStamp)
        #expect(times == (0..<60).map { CMTime(value: Int64($0), timescale: 30) })
        let picture = try #require(samples.first?.imageBuffer)
        #expect(CVPixelBufferGetWidth(picture) == 640 && CVPixelBufferGetHeight(picture) == 480)
        #expect(CVPixelBufferGetPixelFormatType(picture) == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
        #expect(output.copyNextSampleBuffer() == nil, "nothing after the end")
    }

    @Test("Passthrough (nil settings): the stored packets, as many as ffprobe counts, key frames marked")
    func passthrough() async throws {
        guard MediaTool.available(for: "AVAssetReaderTests.passthrough") else { return }
        let url = try await ReaderMovies.shared.movie()
        let asset = AVURLAsset(url: url)
        let reader = try AVAssetReader(asset: asset)
        let video = AVAssetReaderTrackOutput(track: asset.tracks(withMediaType: .video)[0], outputSettings: nil)
        let audio = AVAssetReaderTrackOutput(track: asset.tracks(withMediaType: .audio)[0], outputSettings: nil)
        reader.add(video)
        reader.add(audio)
        #expect(reader.startReading())
        // Read the audio first, then the video: the outputs do not wait for one another.
        let audioSamples = readAll(audio)
        #expect(reader.status == .reading, "one output is still to be read")
        let videoSamples = readAll(video)
        #expect(reader.status == .completed)

        let probe = try MediaTool.ffprobe.run([
            "-v", "error", "-count_packets", "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", url.path,
        ])
        let counts = probe.outputText.split(separator: "\n").compactMap { Int($0) }
        #expect(counts == [videoSamples.count, audioSamples.count], "ffprobe counts \(counts)")
        #expect(videoSamples.first?.formatDescription?.mediaSubType == .h264)
        #expect(audioSamples.first?.formatDescription?.mediaSubType == .mpeg4AAC)
        let videoBytes = videoSamples.map(\.totalSampleSize).reduce(0, +)
        #expect(videoBytes > 10_000)
        func isKey(_ sample: CMSampleBuffer) -> Bool {
            CMGetAttachment(sample, key: kCMSampleAttachmentKey_NotSync, attachmentModeOut: nil) == nil
        }
        #expect(isKey(videoSamples[0]))
        // One key frame a second (the writer's AVVideoMaxKeyFrameIntervalKey is the frame rate).
        #expect(videoSamples.filter(isKey).count == 2)
        #expect(
            videoSamples.map(\.presentationTimeStamp).sorted()
                == (0..<60).map { CMTime(value: Int64($0), timescale: 30) })
    }

    @Test("Decoded audio as 16-bit PCM: 2 s of samples, the 440 Hz tone, the beep at 1 s")
    func decodedAudio() async throws {
        let url = try await ReaderMovies.shared.movie()
        let asset = AVURLAsset(url: url)
        let reader = try AVAssetReader(asset: asset)
        let output = AVAssetReaderTrackOutput(
            track: asset.tracks(withMediaType: .audio)[0],
            outputSettings: [
                AVFormatIDKey: kAudioFormatLinearPCM, AVLinearPCMBitDepthKey: 16, AVSampleRateKey: 48_000,
                AVNumberOfChannelsKey: 2,
            ])
        reader.add(output)
        #expect(reader.startReading())
        let samples = readAll(output)
        #expect(reader.status == .completed)
        let format = try #require(samples.first?.formatDescription?.audioStreamBasicDescription)
        #expect(
            format.mFormatID == kAudioFormatLinearPCM && format.mBitsPerChannel == 16 && format.mChannelsPerFrame == 2)
        let frames = samples.map(\.numSamples).reduce(0, +)
        #expect(frames == 96_000, "\(frames) frames")
        #expect(samples.first?.presentationTimeStamp == .zero)
        let left = firstChannel(ofInt16: samples)
        let frequency = zeroCrossingFrequency(left[9_600..<43_200], sampleRate: 48_000)
        #expect(abs(frequency - 440) < 1, "\(frequency) Hz")
        let beeps = VirtualAudioReader.findBeeps(samples: left.map(Float.init), sampleRate: 48_000)
        #expect(beeps.contains { abs($0 - 1) < 0.005 }, "beeps at \(beeps)")
    }

    @Test("A time range of 0.5 s to 1.5 s: frames 15 to 44, and 48 000 audio samples from 0.5 s")
    func timeRange() async throws {
        let url = try await ReaderMovies.shared.movie()
        let asset = AVURLAsset(url: url)
        let reader = try AVAssetReader(asset: asset)
        let range = CMTimeRange(start: CMTime(value: 1, timescale: 2), duration: CMTime(value: 1, timescale: 1))
        reader.timeRange = range
        #expect(reader.timeRange == range)
        let video = AVAssetReaderTrackOutput(
            track: asset.tracks(withMediaType: .video)[0],
            outputSettings: [
                kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            ])
        let audio = AVAssetReaderTrackOutput(
            track: asset.tracks(withMediaType: .audio)[0],
            outputSettings: [
                AVFormatIDKey: kAudioFormatLinearPCM, AVLinearPCMBitDepthKey: 32, AVLinearPCMIsFloatKey: true,
            ])
        reader.add(video)
        reader.add(audio)
        #expect(reader.startReading())
        let frames = readAll(video)
        #expect(frames.map(frameMarker) == expectedMarkers(15..<45, frameRate: 30))
        #expect(frames.first?.presentationTimeStamp == CMTime(value: 15, timescale: 30))
        let sound = readAll(audio)
        #expect(sound.map(\.numSamples).reduce(0, +) == 48_000)
        #expect(sound.first?.presentationTimeStamp == CMTime(value: 1, timescale: 2))
        #expect(reader.status == .completed)
    }

    @Test("The mix output sums its tracks: a track mixed with itself is twice as loud")
    func audioMix() async throws {
        let url = try await ReaderMovies.shared.movie()
        let asset = AVURLAsset(url: url)
        let track = asset.tracks(withMediaType: .audio)[0]
        let settings: [String: Any] = [AVFormatIDKey: kAudioFormatLinearPCM, AVLinearPCMBitDepthKey: 16]
        func read(_ tracks: [AVAssetTrack]) throws -> [Double] {
            let reader = try AVAssetReader(asset: asset)
            let output = AVAssetReaderAudioMixOutput(audioTracks: tracks, audioSettings: settings)
            reader.add(output)
            #expect(reader.startReading())
            let samples = readAll(output)
            #expect(reader.status == .completed)
            return firstChannel(ofInt16: samples)
        }
        let single = try read([track])
        let double = try read([track, track])
        #expect(single.count == 96_000 && double.count == 96_000)
        // The tone alone (0.1 s to 0.9 s): -30 dBFS peak, then -24 dBFS when doubled.
        let singlePeak = single[4_800..<43_200].map(abs).max() ?? 0
        let doublePeak = double[4_800..<43_200].map(abs).max() ?? 0
        #expect(abs(doublePeak / singlePeak - 2) < 0.01, "\(singlePeak) and \(doublePeak)")
        #expect(abs(20 * log10(singlePeak) + 30) < 1, "\(20 * log10(singlePeak)) dBFS")
    }

    @Test("cancelReading stops the outputs; a file gone before startReading fails with an error")
    func cancelAndFailure() async throws {
        let url = try await ReaderMovies.shared.movie()
        let asset = AVURLAsset(url: url)
        let reader = try AVAssetReader(asset: asset)
        let output = AVAssetReaderTrackOutput(track: asset.tracks[0], outputSettings: nil)
        reader.add(output)
        #expect(reader.startReading())
        #expect(output.copyNextSampleBuffer() != nil)
        reader.cancelReading()
        #expect(reader.status == .cancelled)
        #expect(output.copyNextSampleBuffer() == nil)

        let copy = try scratchURL("gone.mov", suite: "avassetreader-tests")
        try FileManager.default.copyItem(at: url, to: copy)
        let goneAsset = AVURLAsset(url: copy)
        let goneReader = try AVAssetReader(asset: goneAsset)
        goneReader.add(AVAssetReaderTrackOutput(track: goneAsset.tracks[0], outputSettings: nil))
        try FileManager.default.removeItem(at: copy)
        #expect(!goneReader.startReading())
        #expect(goneReader.status == .failed)
        let error = try #require(goneReader.error as? AVError)
        #expect(error.code == .fileFormatNotRecognized)
    }

    @Test("image(at:) gives the frame shown at the time; maximumSize scales; jpegData is a JPEG ffprobe reads")
    func imageGenerator() async throws {
        guard MediaTool.available(for: "AVAssetReaderTests.imageGenerator") else { return }
        let url = try await ReaderMovies.shared.movie()
        let generator = AVAssetImageGenerator(asset: AVURLAsset(url: url))
        generator.requestedTimeToleranceBefore = .zero
        generator.requestedTimeToleranceAfter = .zero
        // 1.27 s is within frame 38 (1.2667 s … 1.3 s).
        let (image, actualTime) = try await generator.image(at: CMTime(value: 127, timescale: 100))
        #expect(actualTime == CMTime(value: 38, timescale: 30))
        #expect(CVPixelBufferGetPixelFormatType(image) == kCVPixelFormatType_32BGRA)
        #expect(CVPixelBufferGetWidth(image) == 640 && CVPixelBufferGetHeight(image) == 480)
        #expect(frameIndex(ofBGRA: image) == 38)

        generator.maximumSize = CGSize(width: 320, height: 320)
        let (small, _) = try await generator.image(at: .zero)
        #expect(CVPixelBufferGetWidth(small) == 320 && CVPixelBufferGetHeight(small) == 240)

        let (jpeg, jpegTime) = try await generator.jpegData(at: CMTime(value: 1, timescale: 2))
        #expect(jpegTime == CMTime(value: 15, timescale: 30))
        #expect(jpeg.prefix(2) == Data([0xFF, 0xD8]))
        let file = try scratchURL("thumbnail.jpg", suite: "avassetreader-tests")
        try jpeg.write(to: file)
        let probe = try FFprobeReport(file)
        #expect(probe.stream("video")?["codec_name"] as? String == "mjpeg")
        #expect(probe.stream("video")?["width"] as? Int == 320)

        await #expect(throws: AVError.self) { try await generator.image(at: CMTime(value: 5, timescale: 1)) }
    }

    @Test("Reader passthrough into writer inputs with nil settings: the same packets, a movie ffmpeg decodes whole")
    func readerToWriterPassthrough() async throws {
        guard MediaTool.available(for: "AVAssetReaderTests.readerToWriterPassthrough") else { return }
        let source = try await ReaderMovies.shared.movie()
        let asset = AVURLAsset(url: source)
        let reader = try AVAssetReader(asset: asset)
        let url = try scratchURL("rewritten.mov", suite: "avassetreader-tests")
        let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
        var pairs: [(AVAssetReaderTrackOutput, AVAssetWriterInput)] = []
        for track in asset.tracks {
            let output = AVAssetReaderTrackOutput(track: track, outputSettings: nil)
            reader.add(output)
            let hint = try #require(track.formatDescriptions.first as? CMFormatDescription)
            let input = AVAssetWriterInput(mediaType: track.mediaType, outputSettings: nil, sourceFormatHint: hint)
            input.expectsMediaDataInRealTime = false
            writer.add(input)
            pairs.append((output, input))
        }
        #expect(reader.startReading())
        #expect(writer.startWriting(), "\(String(describing: writer.error))")
        writer.startSession(atSourceTime: .zero)
        var counts: [Int] = []
        for (output, input) in pairs {
            var count = 0
            while let sample = output.copyNextSampleBuffer() {
                waitUntilReady(input)
                #expect(input.append(sample))
                count += 1
            }
            input.markAsFinished()
            counts.append(count)
        }
        await writer.finishWriting()
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        let probe = try MediaTool.ffprobe.run([
            "-v", "error", "-count_packets", "-show_entries", "stream=codec_name,nb_read_packets", "-of", "csv=p=0",
            url.path,
        ])
        #expect(
            probe.outputText.split(separator: "\n") == ["h264,\(counts[0])", "aac,\(counts[1])"], "\(probe.outputText)")
        #expect(try decodedFrames(url).map(\.marker) == expectedMarkers(0..<60, frameRate: 30).map(Optional.some))
    }
}

/// The virtual camera's frame index in a BGRA picture, read from its video-range luma.
func frameIndex(ofBGRA picture: CVPixelBuffer) -> UInt32? {
    let width = CVPixelBufferGetWidth(picture)
    let height = CVPixelBufferGetHeight(picture)
    var luma = [UInt8](repeating: 0, count: width * height)
    picture.withUnsafePlane(0) { bytes, bytesPerRow in
        for y in 0..<height {
            for x in 0..<width {
                let pixel = y * bytesPerRow + 4 * x
                let (b, g, r) = (Double(bytes[pixel]), Double(bytes[pixel + 1]), Double(bytes[pixel + 2]))
                luma[y * width + x] = UInt8((16 + (0.2126 * r + 0.7152 * g + 0.0722 * b) * 219 / 255).rounded())
            }
        }
    }
    return VirtualFrameReader.readFrameIndex(fromLuma: luma, width: width, height: height)
}
