import Foundation

extension AVCaptureMovieFileOutput {
    /// Starts a recording cut into consecutive files, as `segments` describes (beyond Apple: ours). Returns at once;
    /// the first segment begins as ``startRecording(to:recordingDelegate:)`` would begin a recording, and each cut
    /// is a file switch made at a video frame on the output's queue, so no frame or sample is lost or repeated
    /// (see ``AVCaptureRecordingSegments``). ``stopRecording()`` ends the segment under way and the series.
    ///
    /// `delegate` (held strongly until the series is complete) hears every segment as a recording of its own.
    /// A `segments` object records one series: it traps when given a second time, as its names and pruning
    /// belong to one recording. Starting another recording (segmented or not) while the series records switches
    /// to it and ends the series.
    public func startRecording(
        segments: AVCaptureRecordingSegments, recordingDelegate delegate: any AVCaptureFileOutputRecordingDelegate
    ) {
        precondition(
            segments.currentFile == nil && segments.finishedFiles.isEmpty && !segments.isComplete,
            "AVCaptureMovieFileOutput: this AVCaptureRecordingSegments already recorded a series; make a new one")
        let url = segments.firstURL()
        startRecording(to: url, fileType: recordingFileType(for: url), delegate: delegate, segments: segments)
    }
}
