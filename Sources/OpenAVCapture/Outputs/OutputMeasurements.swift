import Foundation

// What an output has done so far, as cumulative counts and current levels, for a monitor (the metrics endpoint of
// OpenAVCaptureWeb) to read without knowing each output's type. Package API: the public face of the same numbers is
// each output's own statistics (AVCaptureRecordingStatistics, AVCapturePublishingStatistics).

/// One output's counts since it was created (or its last idle period) and its levels now.
///
/// Counts only grow while a recording or a publication goes on; a new recording after the output was idle starts
/// them at zero again and changes ``epoch``, which a monitor takes as a restart. Threading: a value; `Sendable`.
package struct OutputMeasurements: Sendable, Equatable {
    /// Changes whenever the counts start again from zero.
    package var epoch = 0
    /// Video frames handed to the output by its connection.
    package var framesCaptured = 0
    /// Video frames the output's encoder (or its writer, for frames kept compressed) took into the file or the stream.
    package var framesWritten = 0
    /// Video frames lost before the encoder, by `kCMSampleBufferDroppedFrameReason_…` value (`FrameWasLate`,
    /// `OutOfBuffers`, `Discontinuity`).
    package var framesDropped: [String: Int] = [:]
    /// Encoded packets the network side left out, by reason (`disconnected`, `waitingForKeyFrame`, `networkBehind`).
    package var packetsDropped: [String: Int] = [:]
    /// Bytes written to files (a recording's files so far, file switches and segments included; the movie beside a
    /// publication) and sent to servers.
    package var bytesWritten: Int64 = 0
    /// Video frames waiting for the encoder now.
    package var encoderQueueDepth = 0
    /// The microphone's clock error measured by the recording, in ppm; nil before it was measured.
    package var audioClockDriftPPM: Double?
    /// Connections made after the first (publishing outputs).
    package var reconnections = 0
    /// Whether a publication's connection is open now; nil for outputs that have none.
    package var isConnected: Bool?
    /// The file being written, if any: where free disk space matters.
    package var fileURL: URL?

    package init() {}
}
