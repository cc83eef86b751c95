// AVAssetSegmentReport: what each track put into a segment an AVAssetWriter handed to its delegate.

import Foundation
import MediaCodecs
import OpenCoreMedia

/// A report on one media segment: its type and one ``AVAssetSegmentTrackReport`` per track with samples in it.
///
/// Threading: immutable after creation; `Sendable`.
public final class AVAssetSegmentReport: NSObject, @unchecked Sendable {
    /// The segment's type.
    public let segmentType: AVAssetSegmentType
    /// Per track with samples in the segment, in track order.
    public let trackReports: [AVAssetSegmentTrackReport]

    init(_ segment: SegmentOutput.Segment, type: AVAssetSegmentType) {
        self.segmentType = type
        self.trackReports = segment.tracks.map(AVAssetSegmentTrackReport.init)
        super.init()
    }
}

/// What one track put into a segment.
///
/// Threading: immutable after creation; `Sendable`.
public final class AVAssetSegmentTrackReport: NSObject, @unchecked Sendable {
    /// The track's ID in the movie (1 for the first input added, and so on).
    public let trackID: CMPersistentTrackID
    /// `.video` or `.audio`.
    public let mediaType: AVMediaType
    /// The earliest presentation time of the track's samples in the segment (the samples' own time).
    public let earliestPresentationTimeStamp: CMTime
    /// From ``earliestPresentationTimeStamp`` to the end of the track's last sample in the segment.
    public let duration: CMTime
    /// The track's first sample in the segment, for video tracks: time, byte range in the segment, key frame or not.
    public let firstVideoSampleInformation: AVAssetSegmentReportSampleInformation?

    init(_ summary: SegmentOutput.TrackSummary) {
        trackID = summary.trackID
        mediaType = summary.isVideo ? .video : .audio
        earliestPresentationTimeStamp = summary.earliestPresentationTime
        duration = summary.duration
        firstVideoSampleInformation = summary.firstSample.map(AVAssetSegmentReportSampleInformation.init)
        super.init()
    }
}

/// A sample in a segment: when it is shown, where its bytes are in the segment data, and whether it is a sync sample.
///
/// Threading: immutable after creation; `Sendable`.
public final class AVAssetSegmentReportSampleInformation: NSObject, @unchecked Sendable {
    /// The sample's presentation time.
    public let presentationTimeStamp: CMTime
    /// Where the sample's bytes begin in the segment data (read from the segment's `trun` box).
    public let offset: Int
    /// How many bytes the sample has.
    public let length: Int
    /// Whether the sample is a sync sample (a key frame).
    public let isSyncSample: Bool

    init(_ sample: SegmentOutput.FirstSample) {
        presentationTimeStamp = sample.presentationTime
        offset = sample.offset
        length = sample.length
        isSyncSample = sample.isSync
    }
}
