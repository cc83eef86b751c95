// AVMutableComposition's edits, and an asset reader reading a composition: a 240 fps recording's middle second
// slowed 8×, its frames retimed, its sound stretched with the pitch kept (or moved, with varispeed).

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import OpenCoreMedia
import OpenCoreVideo
import TestSupport
import Testing

/// Seconds as an exact time (milliseconds).
func seconds(_ value: Double) -> CMTime { CMTime(value: Int64((value * 1000).rounded()), timescale: 1000) }

/// A range from `start` to `end` seconds.
func range(_ start: Double, _ end: Double) -> CMTimeRange { CMTimeRange(start: seconds(start), end: seconds(end)) }

/// The segments' target and source ranges in seconds, rounded to the millisecond, for comparisons.
func layout(_ track: AVCompositionTrack) -> [[Double]] {
    track.segments.map { segment in
        let mapping = segment.timeMapping
        func ms(_ time: CMTime) -> Double { (time.seconds * 1000).rounded() / 1000 }
        return segment.isEmpty
            ? [ms(mapping.target.start), ms(mapping.target.end)]
            : [ms(mapping.target.start), ms(mapping.target.end), ms(mapping.source.start), ms(mapping.source.end)]
    }
}

/// The composition of the seeds' slow-motion flow: all of `asset`, its middle second (0.5 s to 1.5 s) scaled ×8.
func slowMotionComposition(of asset: AVAsset) async throws -> AVMutableComposition {
    let composition = AVMutableComposition()
    let duration = try await asset.load(.duration)
    try await composition.insertTimeRange(CMTimeRange(start: .zero, duration: duration), of: asset, at: .zero)
    composition.scaleTimeRange(range(0.5, 1.5), toDuration: seconds(8))
    return composition
}

/// Where frame `index` of a 240 fps recording plays once its middle second is slowed ×8.
func slowMotionTime(ofFrame index: Int) -> CMTime {
    switch index {
    case ..<120: CMTime(value: Int64(index), timescale: 240)
    case ..<360: seconds(0.5) + CMTime(value: Int64(index - 120), timescale: 30)
    default: seconds(8.5) + CMTime(value: Int64(index - 360), timescale: 240)
    }
}

@Suite("AVMutableComposition edits, read back through AVAssetReader", .serialized)
struct AVCompositionTests {
    @Test("insertTimeRange, insertEmptyTimeRange, removeTimeRange and scaleTimeRange lay segments out as Apple's")
    func edits() async throws {
        let asset = AVURLAsset(url: try await ReaderMovies.shared.movie())
        let composition = AVMutableComposition()
        try await composition.insertTimeRange(range(0, 2), of: asset, at: .zero)
        #expect(composition.tracks.map(\.mediaType) == [.video, .audio])
        let video = try #require(composition.tracks.first as? AVMutableCompositionTrack)
        #expect(video.asset === composition)
        #expect(composition.duration == seconds(2))
        #expect(video.naturalSize == CGSize(width: 640, height: 480))

        try await composition.insertTimeRange(range(0, 1), of: asset, at: seconds(0.5))
        #expect(layout(video) == [[0, 0.5, 0, 0.5], [0.5, 1.5, 0, 1], [1.5, 3, 0.5, 2]])
        composition.removeTimeRange(range(0.5, 1.5))
        #expect(layout(video) == [[0, 0.5, 0, 0.5], [0.5, 2, 0.5, 2]])
        composition.insertEmptyTimeRange(range(1, 1.25))
        #expect(layout(video) == [[0, 0.5, 0, 0.5], [0.5, 1, 0.5, 1], [1, 1.25], [1.25, 2.25, 1, 2]])
        composition.scaleTimeRange(range(0.5, 1.25), toDuration: seconds(1.5))
        #expect(layout(video) == [[0, 0.5, 0, 0.5], [0.5, 1.5, 0.5, 1], [1.5, 2], [2, 3, 1, 2]])
        #expect(composition.duration == seconds(3))
        let audio = try #require(composition.tracks.last as? AVCompositionTrack)
        #expect(layout(audio) == layout(video), "composition-wide edits keep the tracks in step")

        // A track's own edits, and a new track by ID.
        let extra = try #require(composition.addMutableTrack(withMediaType: .audio, preferredTrackID: 7))
        #expect(extra.trackID == 7)
        #expect(composition.addMutableTrack(withMediaType: .audio, preferredTrackID: 7) == nil, "the ID is taken")
        try extra.insertTimeRange(range(0.25, 0.75), of: asset.tracks(withMediaType: .audio)[0], at: seconds(1))
        #expect(layout(extra) == [[0, 1], [1, 1.5, 0.25, 0.75]])
        #expect(throws: AVError.self) {
            try extra.insertTimeRange(range(0, 1), of: asset.tracks(withMediaType: .video)[0], at: .zero)
        }
        #expect(throws: AVError.self) { try extra.insertTimeRange(range(1, 3), of: asset.tracks[1], at: .zero) }
        composition.removeTrack(extra)
        #expect(composition.tracks.count == 2)

        let videoComposition = AVMutableVideoComposition(propertiesOf: composition)
        #expect(videoComposition.renderSize == CGSize(width: 640, height: 480))
        #expect(videoComposition.frameDuration == CMTime(value: 1, timescale: 30))
        videoComposition.frameDuration = CMTime(value: 1, timescale: 24)
        #expect(videoComposition.frameDuration == CMTime(value: 1, timescale: 24))
    }

    @Test("A 240 fps recording slowed 8× in its middle second: every frame once, in order, at its retimed time")
    func slowMotionVideo() async throws {
        let asset = AVURLAsset(url: try await ReaderMovies.shared.movie(frameRate: 240))
        let composition = try await slowMotionComposition(of: asset)
        #expect(composition.duration == seconds(9))
        let track = try #require(composition.tracks(withMediaType: .video).first)
        #expect(track.nominalFrameRate == 240, "the first segment plays at the recorded rate")
        let reader = try AVAssetReader(asset: composition)
        let output = AVAssetReaderTrackOutput(
            track: track,
            outputSettings: [
                kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            ])
        reader.add(output)
        #expect(reader.startReading())
        let frames = readAll(output)
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        #expect(frames.map(frameMarker) == expectedMarkers(0..<480, frameRate: 240))
        #expect(frames.map(\.presentationTimeStamp) == (0..<480).map(slowMotionTime(ofFrame:)))
        #expect(frames[200].duration == CMTime(value: 1, timescale: 30), "a slowed frame lasts 8/240 s")

        // Passthrough: the same frames as stored packets, retimed the same way.
        let passthroughReader = try AVAssetReader(asset: composition)
        let packets = AVAssetReaderTrackOutput(track: track, outputSettings: nil)
        passthroughReader.add(packets)
        #expect(passthroughReader.startReading())
        let samples = readAll(packets)
        #expect(samples.map(\.presentationTimeStamp).sorted() == (0..<480).map(slowMotionTime(ofFrame:)))
    }

    @Test(
        "The slowed sound lasts 9 s; spectral keeps the 440 Hz tone, varispeed drops it three octaves",
        arguments: [AVAudioTimePitchAlgorithm.spectral, .timeDomain, .varispeed])
    func slowMotionSound(_ algorithm: AVAudioTimePitchAlgorithm) async throws {
        let asset = AVURLAsset(url: try await ReaderMovies.shared.movie(frameRate: 240))
        let composition = try await slowMotionComposition(of: asset)
        let reader = try AVAssetReader(asset: composition)
        let output = AVAssetReaderAudioMixOutput(
            audioTracks: composition.tracks(withMediaType: .audio),
            audioSettings: [AVFormatIDKey: kAudioFormatLinearPCM, AVLinearPCMBitDepthKey: 16, AVSampleRateKey: 48_000])
        output.audioTimePitchAlgorithm = algorithm
        reader.add(output)
        #expect(reader.startReading())
        let samples = readAll(output)
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        let left = firstChannel(ofInt16: samples)
        #expect(left.count == 9 * 48_000, "\(left.count) samples")
        // The unscaled first part: the tone as recorded.
        #expect(abs(zeroCrossingFrequency(left[4_800..<19_200], sampleRate: 48_000) - 440) < 1)
        // The slowed part, away from the stretched beep at 1 s (now at 4.5 s … 4.9 s).
        let slowed = left[Int(1.0 * 48_000)..<Int(4.0 * 48_000)]
        let frequency = zeroCrossingFrequency(slowed, sampleRate: 48_000)
        let expected = algorithm == .varispeed ? 55.0 : 440.0
        #expect(abs(frequency - expected) < expected * 0.01, "\(frequency) Hz with \(algorithm.rawValue)")
        // The last, unscaled part: the tone as recorded again.
        #expect(abs(zeroCrossingFrequency(left[Int(8.55 * 48_000)..<Int(8.95 * 48_000)], sampleRate: 48_000) - 440) < 1)
    }
}
