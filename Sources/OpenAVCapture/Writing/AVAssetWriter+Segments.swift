// AVAssetWriter's segment output (iOS 14, macOS 11): fragmented MPEG-4 and CMAF segments for HTTP Live Streaming,
// handed to a delegate instead of written to a file.

import Foundation
import MediaCodecs
import OpenCoreMedia
import Synchronization

/// A file type profile for segment output (``AVAssetWriter/outputFileTypeProfile``); Apple's raw values.
///
/// Value type; safe to use from any thread.
public struct AVFileTypeProfile: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Fragmented MPEG-4 for Apple HTTP Live Streaming: `ftyp` brands `iso5`, `iso6`, `mp41`.
    public static let mpeg4AppleHLS = AVFileTypeProfile(rawValue: "MPEG4AppleHLS")
    /// The Common Media Application Format: `ftyp` major brand `iso6` with the compatible brand `cmfc`.
    public static let mpeg4CMAFCompliant = AVFileTypeProfile(rawValue: "MPEG4CMAFCompliant")
}

/// What a segment holds; Apple's raw values.
///
/// Value type; `Sendable`.
public enum AVAssetSegmentType: Int, Sendable {
    /// The initialization segment: `ftyp` and `moov`, which every media segment needs before it.
    case initialization = 1
    /// A media segment (`moof` and `mdat`) that a player can fetch on its own after the initialization segment.
    case separable = 2
}

/// Receives the segments of an ``AVAssetWriter`` made with ``AVAssetWriter/init(contentType:)``.
///
/// Both methods are optional, as Apple's: the default of the one with a report calls the one without, so a delegate
/// implements whichever it needs, and when it implements both only the one with the report is called.
///
/// Threading: called on the writer's serial queue, one segment at a time, in order; `Sendable`, as Apple's. The
/// writer's ``AVAssetWriter/cancelWriting()`` and ``AVAssetWriter/startWriting()`` wait for that queue, so they trap
/// when called from these methods, as from a status observer (the writer's other members may be called).
public protocol AVAssetWriterDelegate: NSObjectProtocol, Sendable {
    /// The writer output `segmentData`, with a report of its tracks (nil for the initialization segment).
    func assetWriter(
        _ writer: AVAssetWriter, didOutputSegmentData segmentData: Data, segmentType: AVAssetSegmentType,
        segmentReport: AVAssetSegmentReport?)
    /// The writer output `segmentData`.
    func assetWriter(_ writer: AVAssetWriter, didOutputSegmentData segmentData: Data, segmentType: AVAssetSegmentType)
}

extension AVAssetWriterDelegate {
    /// Default: calls ``assetWriter(_:didOutputSegmentData:segmentType:)``.
    public func assetWriter(
        _ writer: AVAssetWriter, didOutputSegmentData segmentData: Data, segmentType: AVAssetSegmentType,
        segmentReport: AVAssetSegmentReport?
    ) {
        assetWriter(writer, didOutputSegmentData: segmentData, segmentType: segmentType)
    }

    /// Default: nothing.
    public func assetWriter(_ writer: AVAssetWriter, didOutputSegmentData segmentData: Data, segmentType: AVAssetSegmentType) {}
}

/// The settings of a segment-writing ``AVAssetWriter``, set before ``AVAssetWriter/startWriting()``.
///
/// Thread safe: a mutex guards them.
final class SegmentWriting: Sendable {
    struct Settings {
        weak var delegate: (any AVAssetWriterDelegate)?
        var profile: AVFileTypeProfile?
        var interval: CMTime = .invalid
        var initialStart: CMTime = .invalid
    }

    let settings = Mutex(Settings())
    /// The interval used when ``AVAssetWriter/preferredOutputSegmentInterval`` is `.invalid` ("the writer chooses"):
    /// 6 s, the target duration Apple's HLS authoring specification recommends.
    static let defaultInterval = CMTime(value: 6, timescale: 1)
}

extension AVAssetWriter {
    /// The object that receives the segments of a writer made with ``init(contentType:)``; held weakly, as Apple's.
    /// Set it before ``startWriting()``.
    public var delegate: (any AVAssetWriterDelegate)? {
        get { segmentWriting?.settings.withLock { $0.delegate } }
        set { setSegmentSetting("delegate") { $0.delegate = newValue } }
    }

    /// The profile of the segments: `nil` (the default, the writer chooses: HLS's), ``AVFileTypeProfile/mpeg4AppleHLS``
    /// or ``AVFileTypeProfile/mpeg4CMAFCompliant``. Set it before ``startWriting()``. A writer of a file keeps the
    /// value and writes its file as it would without it.
    public var outputFileTypeProfile: AVFileTypeProfile? {
        get { segmentWriting?.settings.withLock { $0.profile } }
        set { setSegmentSetting("outputFileTypeProfile") { $0.profile = newValue } }
    }

    /// How long segments should be: `.invalid` (the default; 6 s here), a positive time, or `.indefinite`, when a
    /// segment ends only at ``flushSegment()``. A segment ends at the first video key frame at or after each boundary
    /// ``initialSegmentStartTime`` + k × interval, so segments are as long as the interval when the key frame interval
    /// divides it, longer otherwise. Set it before ``startWriting()``.
    public var preferredOutputSegmentInterval: CMTime {
        get { segmentWriting?.settings.withLock { $0.interval } ?? .invalid }
        set { setSegmentSetting("preferredOutputSegmentInterval") { $0.interval = newValue } }
    }

    /// Where segment boundaries are counted from (source time), for a positive numeric
    /// ``preferredOutputSegmentInterval``, as Apple's: set a numeric time. Left `.invalid`, boundaries count from the
    /// first sample written. Set it before ``startWriting()``.
    public var initialSegmentStartTime: CMTime {
        get { segmentWriting?.settings.withLock { $0.initialStart } ?? .invalid }
        set { setSegmentSetting("initialSegmentStartTime") { $0.initialStart = newValue } }
    }

    /// Ends the current segment now and hands it to the delegate: what has been appended and encoded so far. The next
    /// video sample must be a key frame, or the writer fails with ``AVError/Code/segmentStartedWithNonSyncSample``.
    ///
    /// Traps unless the writer was made with ``init(contentType:)`` and ``preferredOutputSegmentInterval`` is
    /// `.indefinite`, as Apple raises.
    public func flushSegment() {
        precondition(
            segmentWriting != nil,
            "AVAssetWriter.flushSegment() can be called only on a writer made with init(contentType:) whose delegate"
                + " receives segment data")
        precondition(
            preferredOutputSegmentInterval == .indefinite,
            "AVAssetWriter.flushSegment() can be called only when preferredOutputSegmentInterval is .indefinite")
        perform { pipeline throws(MediaCodecsError) in try pipeline.muxer.cutSegment() }
    }

    private func setSegmentSetting(_ name: String, _ change: (inout SegmentWriting.Settings) -> Void) {
        let status = status
        precondition(status == .unknown, "AVAssetWriter.\(name) cannot be set after startWriting() (status is \(status))")
        guard let segmentWriting else {
            // A writer of a file has no segment output; Apple documents no exception for setting these on one.
            ToleratedMisuse.report(
                "AVAssetWriter.\(name)", "AVAssetWriter.\(name) is for writers made with init(contentType:); ignored")
            return
        }
        segmentWriting.settings.withLock { change(&$0) }
    }

    /// The segment output ``startWriting()`` gives the muxer, delivering to the delegate; nil for a file writer.
    ///
    /// - Throws: ``AVError`` `.incorrectlyConfigured` without a delegate or for a container other than MPEG-4.
    func makeSegmentOutput() throws(AVError) -> SegmentOutput? {
        guard let segmentWriting else { return nil }
        let settings = segmentWriting.settings.withLock { $0 }
        guard settings.delegate != nil else {
            throw AVError(
                .incorrectlyConfigured, "AVAssetWriter(contentType:) has no delegate to receive its segments.",
                suggestion: "Set delegate to an AVAssetWriterDelegate before startWriting().")
        }
        guard muxerFileType == .mp4 else {
            throw AVError(
                .incorrectlyConfigured, "Segments are fragmented MPEG-4; \(outputFileType.rawValue) has none.",
                suggestion: "Make the writer with UTType(AVFileType.mp4.rawValue).")
        }
        var interval: CMTime? = SegmentWriting.defaultInterval
        if settings.interval == .indefinite {
            interval = nil
        } else if settings.interval.isNumeric {
            guard settings.interval > .zero else {
                throw AVError(
                    .incorrectlyConfigured, "preferredOutputSegmentInterval \(settings.interval.seconds) s is not positive.",
                    suggestion: "Set a positive time, .indefinite, or leave it .invalid.")
            }
            interval = settings.interval
        }
        let profile: SegmentOutput.Profile = settings.profile == .mpeg4CMAFCompliant ? .cmaf : .appleHLS
        return SegmentOutput(profile: profile, interval: interval, initialStart: settings.initialStart) {
            [weak self] segment in
            guard let self, let delegate = self.delegate else { return }
            let type: AVAssetSegmentType = segment.isInitialization ? .initialization : .separable
            let report = segment.isInitialization ? nil : AVAssetSegmentReport(segment, type: type)
            delegate.assetWriter(self, didOutputSegmentData: segment.data, segmentType: type, segmentReport: report)
        }
    }
}
