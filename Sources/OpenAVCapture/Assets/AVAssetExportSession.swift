// AVAssetExportSession: an asset or a composition written to a new file, copied as stored or re-encoded.

import Dispatch
import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// Writes an asset (a file, or a composition of edits) to a new movie or sound file with a preset.
///
/// ``AVAssetExportPresetPassthrough`` copies the samples as stored, without decoding: a composition's edits become
/// retimed samples (slowed 8×, a 240 fps recording's frames are written 1/30 s apart, every one of them). A sound
/// track with a scaled edit cannot be stretched without decoding: that track alone is decoded, stretched by
/// ``audioTimePitchAlgorithm`` and encoded again as AAC, while the video stays copied. The other presets decode, scale to the preset's size, and encode H.264 or HEVC video and AAC sound with an
/// ``AVAssetWriter``. With a ``videoComposition``, video is written at its constant ``AVVideoComposition/
/// frameDuration``: each output frame shows the source frame on screen at its time (at 30 fps from a 240 fps
/// source, every 8th frame; from an 8× slowed part, every frame). Sound in scaled edits is stretched with
/// ``audioTimePitchAlgorithm``: `.spectral` and `.timeDomain` keep the pitch (libavfilter's `atempo`),
/// `.varispeed` moves it.
///
/// The life cycle is Apple's: make one with ``init(asset:presetName:)``, set ``outputURL`` and ``outputFileType``
/// (and ``timeRange``, ``metadata``, ``videoComposition``…), then ``export()`` or
/// ``exportAsynchronously(completionHandler:)``. ``status`` goes `.waiting` → `.exporting` → `.completed`, or
/// `.failed` (``error`` says why) or `.cancelled` (``cancelExport()``). An existing file at ``outputURL`` is never
/// overwritten (`.fileAlreadyExists`), and a failed or cancelled export leaves no file. Exporting without an
/// output URL or file type, or twice, traps (Apple raises).
///
/// Threading: thread safe (`@unchecked Sendable`): the settings and status are guarded by a mutex; the export runs
/// on a queue of its own and calls the completion handler there.
open class AVAssetExportSession: NSObject, @unchecked Sendable {
    /// Where an export is; Apple's raw values.
    ///
    /// Threading: a value; `Sendable`.
    public enum Status: Int, Sendable, CustomStringConvertible {
        case unknown = 0
        case waiting = 1
        case exporting = 2
        case completed = 3
        case failed = 4
        case cancelled = 5

        /// The status's name, as in messages.
        public var description: String {
            switch self {
            case .unknown: "unknown"
            case .waiting: "waiting"
            case .exporting: "exporting"
            case .completed: "completed"
            case .failed: "failed"
            case .cancelled: "cancelled"
            }
        }
    }

    struct Settings {
        var outputURL: URL?
        var outputFileType: AVFileType?
        var timeRange = CMTimeRange(start: .zero, duration: .positiveInfinity)
        var metadata: [AVMetadataItem]?
        var videoComposition: AVVideoComposition?
        var audioTimePitchAlgorithm = AVAudioTimePitchAlgorithm.spectral
        var shouldOptimizeForNetworkUse = false
    }

    private struct State {
        var settings = Settings()
        var status = Status.unknown
        var error: AVError?
        var progress: Float = 0
    }

    /// The asset exported.
    public let asset: AVAsset
    /// The preset's name.
    public let presetName: String
    let preset: ExportPreset
    private let state = Mutex(State())
    /// Set by ``cancelExport()``; the export checks it between samples.
    let cancellation = Atomic<Bool>(false)
    private let queue = DispatchQueue(label: "AVAssetExportSession")

    /// An export of `asset` with `presetName`; nil for a preset this library does not know or cannot write (HEVC
    /// without libx265).
    public init?(asset: AVAsset, presetName: String) {
        guard let preset = ExportPreset.named(presetName), preset.isAvailable else { return nil }
        self.asset = asset
        self.presetName = presetName
        self.preset = preset
        super.init()
    }

    /// Every preset's name.
    public class func allExportPresets() -> [String] { ExportPreset.all.filter(\.isAvailable).map(\.name) }

    /// The presets that can export `asset`: video presets when it has video, AppleM4A when it has sound,
    /// passthrough when it has either.
    public class func exportPresets(compatibleWith asset: AVAsset) -> [String] {
        let hasVideo = !asset.tracks(withMediaType: .video).isEmpty
        let hasAudio = !asset.tracks(withMediaType: .audio).isEmpty
        return ExportPreset.all.filter { preset in
            guard preset.isAvailable else { return false }
            if preset.isPassthrough { return hasVideo || hasAudio }
            return preset.codec == nil ? hasAudio : hasVideo
        }.map(\.name)
    }

    /// Whether `presetName` can export `asset` to `outputFileType` (Apple's asynchronous check).
    public class func determineCompatibility(
        ofExportPreset presetName: String, with asset: AVAsset, outputFileType: AVFileType?
    ) async -> Bool {
        guard exportPresets(compatibleWith: asset).contains(presetName),
            let preset = ExportPreset.named(presetName)
        else { return false }
        return outputFileType.map(preset.fileTypes.contains) ?? true
    }

    /// The file types this preset writes.
    public var supportedFileTypes: [AVFileType] { preset.fileTypes }

    /// Where the file is written.
    public var outputURL: URL? {
        get { state.withLock { $0.settings.outputURL } }
        set { state.withLock { $0.settings.outputURL = newValue } }
    }
    /// The container, one of ``supportedFileTypes``.
    public var outputFileType: AVFileType? {
        get { state.withLock { $0.settings.outputFileType } }
        set { state.withLock { $0.settings.outputFileType = newValue } }
    }
    /// The part of the asset exported; all of it by default.
    public var timeRange: CMTimeRange {
        get { state.withLock { $0.settings.timeRange } }
        set { state.withLock { $0.settings.timeRange = newValue } }
    }
    /// The file's metadata; nil writes none (Apple copies the source's; we do not).
    public var metadata: [AVMetadataItem]? {
        get { state.withLock { $0.settings.metadata } }
        set { state.withLock { $0.settings.metadata = newValue } }
    }
    /// The frame rate and size video is rendered at; nil keeps the source's timing. Ignored by passthrough.
    public var videoComposition: AVVideoComposition? {
        get { state.withLock { $0.settings.videoComposition } }
        set { state.withLock { $0.settings.videoComposition = newValue } }
    }
    /// How sound in scaled edits is stretched (`.spectral` by default).
    public var audioTimePitchAlgorithm: AVAudioTimePitchAlgorithm {
        get { state.withLock { $0.settings.audioTimePitchAlgorithm } }
        set { state.withLock { $0.settings.audioTimePitchAlgorithm = newValue } }
    }
    /// Whether the movie's header goes first (fast start), for playback while downloading.
    public var shouldOptimizeForNetworkUse: Bool {
        get { state.withLock { $0.settings.shouldOptimizeForNetworkUse } }
        set { state.withLock { $0.settings.shouldOptimizeForNetworkUse = newValue } }
    }
    /// How far the export has come, 0 to 1.
    public var progress: Float { state.withLock { $0.progress } }
    /// Where the export is.
    public var status: Status { state.withLock { $0.status } }
    /// Why the export failed.
    public var error: (any Error)? { state.withLock { $0.error } }

    /// Starts the export on the session's queue and calls `handler` there when it has completed, failed or been
    /// cancelled. Traps without an output URL or file type, for a file type the preset does not write, or when
    /// called twice.
    public func exportAsynchronously(completionHandler handler: @escaping @Sendable () -> Void) {
        if status == .cancelled {
            // Cancelled before it started: nothing to write, the handler still runs.
            queue.async { handler() }
            return
        }
        let settings = state.withLock { state -> Settings in
            precondition(
                state.status == .unknown,
                "*** -[AVAssetExportSession exportAsynchronouslyWithCompletionHandler:] cannot be called twice")
            precondition(
                state.settings.outputURL != nil,
                "*** -[AVAssetExportSession exportAsynchronouslyWithCompletionHandler:] outputURL is nil")
            guard let type = state.settings.outputFileType else {
                preconditionFailure(
                    "*** -[AVAssetExportSession exportAsynchronouslyWithCompletionHandler:] outputFileType is nil; use "
                        + "one of \(preset.fileTypes.map(\.rawValue))")
            }
            precondition(
                preset.fileTypes.contains(type),
                "*** -[AVAssetExportSession exportAsynchronouslyWithCompletionHandler:] \(presetName) cannot write "
                    + "\(type.rawValue); use one of \(preset.fileTypes.map(\.rawValue))")
            state.status = .waiting
            return state.settings
        }
        queue.async { [self] in
            state.withLock { $0.status = .exporting }
            let outcome: Status
            do {
                try run(settings)
                outcome = cancellation.load(ordering: .acquiring) ? .cancelled : .completed
                if outcome == .cancelled, let url = settings.outputURL { try? FileManager.default.removeItem(at: url) }
            } catch let error as AVError {
                outcome = cancellation.load(ordering: .acquiring) ? .cancelled : .failed
                state.withLock { $0.error = outcome == .failed ? error : nil }
            } catch {
                outcome = .failed
                state.withLock { $0.error = AVError(.exportFailed, "Exporting failed: \(error)") }
            }
            state.withLock { state in
                state.status = outcome
                if outcome == .completed { state.progress = 1 }
            }
            handler()
        }
    }

    /// Exports and returns when done; look at ``status`` and ``error``.
    public func export() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            exportAsynchronously { continuation.resume() }
        }
    }

    /// Exports to `url` as `fileType` and throws why it failed (Apple's 2024 form).
    public func export(to url: URL, as fileType: AVFileType) async throws {
        outputURL = url
        outputFileType = fileType
        await export()
        switch status {
        case .completed: return
        case .cancelled: throw CancellationError()
        default: throw error ?? AVError(.exportFailed, "Exporting failed")
        }
    }

    /// Stops the export: ``status`` becomes `.cancelled` and the partial file is removed.
    public func cancelExport() {
        cancellation.store(true, ordering: .releasing)
        state.withLock { state in
            if state.status == .unknown { state.status = .cancelled }
        }
    }

    func reportProgress(_ fraction: Double) {
        let clamped = Float(max(0, min(1, fraction)))
        state.withLock { $0.progress = max($0.progress, clamped) }
    }

    // MARK: The export

    private func run(_ settings: Settings) throws {
        guard let url = settings.outputURL, let fileType = settings.outputFileType else { return }
        if FileManager.default.fileExists(atPath: url.path) {
            throw AVError(
                .fileAlreadyExists, "\(url.path) exists; an export never overwrites a file",
                suggestion: "Remove it or choose another URL.")
        }
        if asset.path != nil { _ = try asset.loadedContents() }
        let duration = asset.duration
        var range = settings.timeRange
        let start = range.start.isNumeric ? max(range.start, .zero) : .zero
        let end = range.duration.isNumeric ? min(range.end, duration) : duration
        guard end > start else {
            throw AVError(
                .invalidSourceMedia, "the time range holds nothing of the asset (it lasts \(duration.seconds) s)")
        }
        range = CMTimeRange(start: start, end: end)
        if preset.isPassthrough {
            try PassthroughExport(session: self, url: url, fileType: fileType, range: range, settings: settings).run()
        } else {
            try EncodingExport(session: self, url: url, fileType: fileType, range: range, settings: settings).run()
        }
    }

    var isCancelled: Bool { cancellation.load(ordering: .acquiring) }

    /// The tracks exported: enabled video and audio tracks the preset writes.
    func exportedTracks() -> [AVAssetTrack] {
        asset.tracks.filter { track in
            guard track.mediaType == .video || track.mediaType == .audio else { return false }
            if let composed = track as? AVCompositionTrack, !composed.isEnabled || composed.segments.isEmpty {
                return false
            }
            return preset.codec != nil || preset.isPassthrough || track.mediaType == .audio
        }
    }
}

/// The container tags for an export's metadata (none when nil).
func exportTags(_ metadata: [AVMetadataItem]?) -> [(key: String, value: String)] {
    guard let metadata else { return [] }
    return AVAssetWriter.fileTags(for: metadata).sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
}

/// A passthrough export: every track's stored samples, retimed through the asset's edits, copied into a new file
/// with libavformat (no encoder).
///
/// Threading: runs on the export session's queue.
struct PassthroughExport {
    let session: AVAssetExportSession
    let url: URL
    let fileType: AVFileType
    let range: CMTimeRange
    let settings: AVAssetExportSession.Settings

    /// One track's producer and the sample it has ready.
    private final class Lane {
        let producer: any SampleProducer
        let stream: Int
        var next: CMSampleBuffer?
        init(producer: any SampleProducer, stream: Int) {
            self.producer = producer
            self.stream = stream
        }
        /// The time the lane's next sample is decoded at (its presentation time when it has no decode time).
        var time: CMTime? {
            guard let next else { return nil }
            return next.decodeTimeStamp.isNumeric ? next.decodeTimeStamp : next.presentationTimeStamp
        }
    }

    func run() throws {
        guard let muxerType = AVAssetWriter.muxerFileType(fileType) else {
            throw AVError(.invalidOutputURLPathExtension, "\(fileType.rawValue) cannot be written")
        }
        let muxer: Muxer
        do {
            muxer = try Muxer(
                path: url.path, fileType: muxerType,
                options: Muxer.Options(
                    fragmentInterval: nil, fastStart: settings.shouldOptimizeForNetworkUse,
                    metadata: exportTags(settings.metadata)))
        } catch {
            throw AVError(error, writing: url.path)
        }
        do {
            try copy(into: muxer)
        } catch {
            _ = muxer.abandon()
            try? FileManager.default.removeItem(at: url)
            throw error
        }
    }

    private func copy(into muxer: Muxer) throws {
        var lanes: [Lane] = []
        for track in session.exportedTracks() {
            guard let stream = Self.sourceStream(of: track) else {
                throw AVError(
                    .operationNotSupportedForAsset,
                    "track \(track.trackID) mixes sources of different formats; passthrough cannot copy it",
                    suggestion: "Export with AVAssetExportPresetHighestQuality.")
            }
            if EncodedAudioProducer.isNeeded(for: track) {
                // Scaled sound is decoded, stretched and encoded again (see EncodedAudioProducer).
                let producer = try EncodedAudioProducer(
                    track: track, stream: stream, range: range, pitch: settings.audioTimePitchAlgorithm)
                do {
                    lanes.append(Lane(producer: producer, stream: try muxer.addAudioStream(from: producer.encoder)))
                } catch {
                    throw AVError(error, writing: url.path)
                }
                continue
            }
            let transform = track.preferredTransform
            let index: Int
            do {
                index = try muxer.addStream(
                    copying: stream,
                    transform: Muxer.TrackTransform(
                        a: Double(transform.a), b: Double(transform.b), c: Double(transform.c),
                        d: Double(transform.d), tx: Double(transform.tx), ty: Double(transform.ty)))
            } catch {
                throw AVError(error, writing: url.path)
            }
            let producer = try track.makeSampleProducer(
                timeRange: range, decoding: .passthrough, pitch: settings.audioTimePitchAlgorithm)
            lanes.append(Lane(producer: producer, stream: index))
        }
        guard !lanes.isEmpty else { throw AVError(.noDataCaptured, "the asset has no video or audio track to export") }
        do {
            try muxer.start(atSourceTime: range.start)
        } catch {
            throw AVError(error, writing: url.path)
        }
        for lane in lanes { lane.next = try lane.producer.next() }
        let total = range.duration.seconds
        while !session.isCancelled {
            // The lane whose next sample comes first: packets go in in decode order across tracks.
            guard let lane = lanes.filter({ $0.next != nil }).min(by: { $0.time! < $1.time! }),
                let sample = lane.next
            else { break }
            try write(sample, to: muxer, stream: lane.stream)
            lane.next = try lane.producer.next()
            session.reportProgress((sample.presentationTimeStamp - range.start).seconds / total)
        }
        if session.isCancelled {
            _ = muxer.abandon()
            try? FileManager.default.removeItem(at: url)
            return
        }
        do {
            try muxer.finish()
        } catch {
            throw AVError(error, writing: url.path)
        }
    }

    private func write(_ sample: CMSampleBuffer, to muxer: Muxer, stream: Int) throws {
        guard let data = sample.dataBuffer else { return }
        var duration = sample.duration
        if sample.numSamples > 1, let rate = sample.formatDescription?.audioStreamBasicDescription?.mSampleRate {
            duration = CMTime(value: Int64(sample.numSamples), timescale: Int32(rate))
        }
        let isKey = CMGetAttachment(sample, key: kCMSampleAttachmentKey_NotSync, attachmentModeOut: nil) == nil
        let packet = EncodedPacket(
            data: data, presentationTime: sample.presentationTimeStamp, decodeTime: sample.decodeTimeStamp,
            duration: duration, isKeyFrame: isKey)
        do {
            try muxer.write(packet, stream: stream)
        } catch {
            throw AVError(error, writing: url.path)
        }
    }

    /// The stream a track's packets are copied from: the file's, or for a composition the one stream every
    /// segment shares the format of; nil when its segments' formats differ.
    static func sourceStream(of track: AVAssetTrack) -> Demuxer.Stream? {
        if let source = track.source { return source.stream }
        guard let composed = track as? AVCompositionTrack else { return nil }
        let streams = composed.sourceTracks.compactMap { $0.source?.stream }
        guard let first = streams.first else { return nil }
        let same = streams.allSatisfy {
            $0.codecName == first.codecName && $0.extradata == first.extradata && $0.width == first.width
                && $0.height == first.height && $0.sampleRate == first.sampleRate
                && $0.channelCount == first.channelCount
        }
        return same ? first : nil
    }
}
