// EncodingExport: an export that decodes, scales, retimes and encodes, through an AVAssetWriter.

import Dispatch
import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// An export with an encoding preset: the first video track decoded and scaled to the preset's size, written at
/// the video composition's constant frame rate (or at the source frames' own times without one) and encoded with
/// the preset's codec; every audio track decoded (stretched in scaled edits), mixed into one AAC track.
///
/// Each track is fed to an ``AVAssetWriter`` input from `requestMediaDataWhenReady(on:using:)`, Apple's pull model:
/// the writer asks for more when its encoder can take it, so memory stays bounded whatever the length.
///
/// Threading: ``run()`` blocks the export session's queue; the feeds run on a serial queue of their own.
final class EncodingExport: @unchecked Sendable {
    let session: AVAssetExportSession
    let url: URL
    let fileType: AVFileType
    let range: CMTimeRange
    let settings: AVAssetExportSession.Settings
    private let feedQueue = DispatchQueue(label: "AVAssetExportSession.feeds")
    private let failure = Mutex<AVError?>(nil)

    init(
        session: AVAssetExportSession, url: URL, fileType: AVFileType, range: CMTimeRange,
        settings: AVAssetExportSession.Settings
    ) {
        self.session = session
        self.url = url
        self.fileType = fileType
        self.range = range
        self.settings = settings
    }

    /// One writer input and what feeds it. Touched only on the feed queue.
    private final class Feed: @unchecked Sendable {
        let input: AVAssetWriterInput
        let next: () throws(AVError) -> Bool
        var isDone = false
        init(input: AVAssetWriterInput, next: @escaping () throws(AVError) -> Bool) {
            self.input = input
            self.next = next
        }
    }

    func run() throws {
        let writer: AVAssetWriter
        do {
            writer = try AVAssetWriter(outputURL: url, fileType: fileType)
        } catch let error as AVError {
            throw error
        }
        writer.metadata = settings.metadata ?? []
        writer.shouldOptimizeForNetworkUse = settings.shouldOptimizeForNetworkUse
        let tracks = session.exportedTracks()
        var feeds: [Feed] = []
        if let video = tracks.first(where: { $0.mediaType == .video }), session.preset.codec != nil {
            feeds.append(try videoFeed(video, writer: writer))
        }
        let audioTracks = tracks.filter { $0.mediaType == .audio }
        if !audioTracks.isEmpty {
            feeds.append(try audioFeed(audioTracks, writer: writer))
        }
        guard !feeds.isEmpty else {
            try? FileManager.default.removeItem(at: url)
            throw AVError(.noDataCaptured, "the asset has nothing this preset exports")
        }
        guard writer.startWriting() else {
            throw writer.error as? AVError ?? AVError(.exportFailed, "the writer could not start")
        }
        writer.startSession(atSourceTime: range.start)
        let group = DispatchGroup()
        for feed in feeds {
            group.enter()
            feed.input.requestMediaDataWhenReady(on: feedQueue) { [self] in
                pump(feed, group: group)
            }
        }
        group.wait()
        if session.isCancelled {
            writer.cancelWriting()
            try? FileManager.default.removeItem(at: url)
            return
        }
        if let error = failure.withLock({ $0 }) {
            writer.cancelWriting()
            try? FileManager.default.removeItem(at: url)
            throw error
        }
        let finished = DispatchSemaphore(value: 0)
        writer.finishWriting { finished.signal() }
        finished.wait()
        guard writer.status == .completed else {
            throw writer.error as? AVError ?? AVError(.exportFailed, "finishing \(url.path) failed")
        }
    }

    /// Appends while the input is ready; marks it finished at the end, a failure or a cancellation.
    private func pump(_ feed: Feed, group: DispatchGroup) {
        guard !feed.isDone else { return }
        while feed.input.isReadyForMoreMediaData {
            var more = false
            if !session.isCancelled, failure.withLock({ $0 == nil }) {
                do throws(AVError) {
                    more = try feed.next()
                } catch {
                    failure.withLock { $0 = $0 ?? error }
                }
            }
            if !more {
                feed.isDone = true
                feed.input.markAsFinished()
                group.leave()
                return
            }
        }
    }

    // MARK: Video

    /// The pictures between the decoder and the encoder: 4:2:0 planar, what H.264 and HEVC decoders make and both
    /// encoders take, so a picture goes from one to the other uncopied (the decoder lends it; the encoder only
    /// reads it).
    static let pictureFormat = kCVPixelFormatType_420YpCbCr8Planar

    private func videoFeed(_ track: AVAssetTrack, writer: AVAssetWriter) throws -> Feed {
        guard let codec = session.preset.codec else { throw AVError(.exportFailed, "the preset writes no video") }
        let composition = settings.videoComposition
        var size = track.naturalSize
        if let renderSize = composition?.renderSize, renderSize.width > 0, renderSize.height > 0 {
            let turned = abs(track.preferredTransform.b) > abs(track.preferredTransform.a)
            // The composition's size is the displayed one; the encoded picture keeps the track's orientation.
            size = turned ? CGSize(width: renderSize.height, height: renderSize.width) : renderSize
        }
        let (width, height) = session.preset.outputSize(for: size)
        let frameDuration = composition?.frameDuration ?? .invalid
        let rate =
            frameDuration.isNumeric && frameDuration > .zero
            ? 1 / frameDuration.seconds : Double(track.nominalFrameRate > 0 ? track.nominalFrameRate : 30)
        let fps = max(1, Int(rate.rounded()))
        let videoCodec: VideoEncoder.Codec = codec == .hevc ? .hevc : .h264
        let bitRate = Int(
            Double(VideoEncoder.defaultBitRate(codec: videoCodec, width: width, height: height, frameRate: fps))
                * session.preset.bitRateFraction)
        let input = AVAssetWriterInput(
            mediaType: .video,
            outputSettings: [
                AVVideoCodecKey: codec, AVVideoWidthKey: width, AVVideoHeightKey: height,
                AVVideoCompressionPropertiesKey: [
                    AVVideoAverageBitRateKey: bitRate, AVVideoExpectedSourceFrameRateKey: fps,
                    AVVideoMaxKeyFrameIntervalKey: fps,
                ] as [String: Any],
            ])
        input.transform = track.preferredTransform
        input.expectsMediaDataInRealTime = false
        let adaptor = AVAssetWriterInputPixelBufferAdaptor(
            assetWriterInput: input,
            sourcePixelBufferAttributes: [
                kCVPixelBufferPixelFormatTypeKey as String: Self.pictureFormat,
                kCVPixelBufferWidthKey as String: width, kCVPixelBufferHeightKey as String: height,
            ])
        guard writer.canAdd(input) else { throw AVError(.exportFailed, "the writer refused the video input") }
        writer.add(input)
        let producer = try track.makeSampleProducer(
            timeRange: range,
            decoding: .video(pixelFormat: Self.pictureFormat, width: width, height: height, readOnly: true),
            pitch: settings.audioTimePitchAlgorithm)
        let total = range.duration.seconds
        let start = range.start
        let end = range.end
        let session = session
        if frameDuration.isNumeric, frameDuration > .zero {
            // Constant frame rate: tick n shows the latest source frame at or before its time.
            var tick: Int64 = 0
            var current: CMSampleBuffer?
            var upcoming = try producer.next()
            return Feed(input: input) { () throws(AVError) -> Bool in
                let time = start + CMTimeMultiply(frameDuration, multiplier: Int32(clamping: tick))
                guard time < end else { return false }
                while let next = upcoming, next.presentationTimeStamp <= time {
                    current = next
                    upcoming = try producer.next()
                }
                guard let picture = (current ?? upcoming)?.imageBuffer else { return false }
                guard adaptor.append(picture, withPresentationTime: time) else {
                    throw AVError(.exportFailed, "the writer refused a frame")
                }
                tick += 1
                session.reportProgress((time - start).seconds / total)
                return true
            }
        }
        return Feed(input: input) { () throws(AVError) -> Bool in
            guard let sample = try producer.next(), let picture = sample.imageBuffer else { return false }
            guard adaptor.append(picture, withPresentationTime: sample.presentationTimeStamp) else {
                throw AVError(.exportFailed, "the writer refused a frame")
            }
            session.reportProgress((sample.presentationTimeStamp - start).seconds / total)
            return true
        }
    }

    // MARK: Sound

    private func audioFeed(_ tracks: [AVAssetTrack], writer: AVAssetWriter) throws -> Feed {
        let channels = min(
            2,
            tracks.compactMap {
                ($0.formatDescriptions.first as? CMFormatDescription)?.audioStreamBasicDescription?.mChannelsPerFrame
            }.max() ?? 2)
        let floats = AudioStreamBasicDescription.linearPCM(
            sampleRate: 48_000, channels: max(1, channels), bitsPerChannel: 32, isFloat: true)
        var inputs: [any SampleProducer] = []
        for track in tracks {
            inputs.append(
                try track.makeSampleProducer(
                    timeRange: range, decoding: .audio(floats), pitch: settings.audioTimePitchAlgorithm))
        }
        let mix = try AudioMixProducer(inputs: inputs, format: floats)
        let bitRate = session.preset.name == AVAssetExportPresetLowQuality ? 64_000 : 128_000
        let input = AVAssetWriterInput(
            mediaType: .audio,
            outputSettings: [
                AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: 48_000,
                AVNumberOfChannelsKey: Int(floats.mChannelsPerFrame), AVEncoderBitRateKey: bitRate,
            ])
        input.expectsMediaDataInRealTime = false
        guard writer.canAdd(input) else { throw AVError(.exportFailed, "the writer refused the audio input") }
        writer.add(input)
        return Feed(input: input) { () throws(AVError) -> Bool in
            guard let sample = try mix.next() else { return false }
            guard input.append(sample) else { throw AVError(.exportFailed, "the writer refused sound") }
            return true
        }
    }
}
