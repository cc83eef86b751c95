import Foundation

extension AVCaptureMovieFileOutput {
    /// Whether a recording goes on through an unplugged camera or microphone (beyond Apple: ours). Default false:
    /// Apple's behaviour, the recording ends with `AVError.deviceWasDisconnected`, its file finished.
    ///
    /// When true, a device of the recording that is unplugged leaves a gap instead of ending it: the session
    /// resumes the device by itself when the same device (same `uniqueID`) comes back, and its media goes on in the
    /// same file at its own time. What the file holds:
    /// - Video: no frame for the time the camera was away. The track's timestamps jump over the gap (the frame
    ///   before it is shown until the first frame after it, as in any movie with a timestamp gap); no frame is
    ///   repeated to fill it, and the first frame after it shows the moment it was taken.
    /// - Sound: the microphone's sound goes on at its own time, so it stays in sync with the pictures after the gap.
    ///   A microphone away for up to 10 s leaves silence there (the AAC track stays continuous); a longer absence
    ///   leaves a timestamp gap in the track, as the video's.
    /// - The device that stays (the microphone when the camera is unplugged, or the reverse) records on through
    ///   the gap.
    ///
    /// A camera's H.264 recorded as it comes resumes at its first key frame after the return. A delegate that
    /// adopts ``AVCaptureFileOutputDisconnectionDelegate`` hears both events; `AVCaptureDevice`'s
    /// `wasDisconnectedNotification` and `wasConnectedNotification` and the session's interruption notifications
    /// are posted as without the option. Stopping while a device is away finishes the file normally (error nil).
    /// Other device failures (taken by another application, a driver error) still end the recording.
    ///
    /// Read when a recording starts. Thread safe.
    public var survivesDisconnection: Bool {
        get { fileState.withLock { $0.survivesDisconnection } }
        set { fileState.withLock { $0.survivesDisconnection = newValue } }
    }
}

/// A recording delegate that hears a device of the recording go away and come back when the file output
/// survives disconnection (beyond Apple: ours; see ``AVCaptureMovieFileOutput/survivesDisconnection``).
///
/// Called on the same serial queue as the other recording callbacks, in order with them: `didLoseDevice` after
/// `didStartRecordingTo`, `didRegainDevice` once the first sample of the returned device went to the file, and
/// `didFinishRecordingTo` last, whether the device came back or not.
public protocol AVCaptureFileOutputDisconnectionDelegate: AVCaptureFileOutputRecordingDelegate {
    /// `device` was unplugged while recording to `fileURL`; the recording goes on without it. `gapStart` is where
    /// its media stops in the file (file time: 0 is the file's first sample).
    func fileOutput(
        _ output: AVCaptureFileOutput, recordingTo fileURL: URL, didLoseDevice device: AVCaptureDevice,
        at gapStart: CMTime)

    /// `device` came back and its media goes on in `fileURL` after `gap` (file time: from where its media stopped
    /// to the first sample after its return, handed to the writer just before this call).
    func fileOutput(
        _ output: AVCaptureFileOutput, recordingTo fileURL: URL, didRegainDevice device: AVCaptureDevice,
        gap: CMTimeRange)
}

extension AVCaptureFileOutputDisconnectionDelegate {
    /// Default: nothing.
    public func fileOutput(
        _ output: AVCaptureFileOutput, recordingTo fileURL: URL, didLoseDevice device: AVCaptureDevice,
        at gapStart: CMTime
    ) {}

    /// Default: nothing.
    public func fileOutput(
        _ output: AVCaptureFileOutput, recordingTo fileURL: URL, didRegainDevice device: AVCaptureDevice,
        gap: CMTimeRange
    ) {}
}

// MARK: The recording engine's side

extension MovieRecordingEngine.Recording {
    /// Whether the recording's camera is unplugged while the recording goes on.
    var isMissingVideo: Bool {
        !lostConnections.isEmpty
            && request.connections.contains { connection in
                AVCaptureFileOutput.isVideo(connection) && lostConnections[ObjectIdentifier(connection)] != nil
            }
    }
}

extension MovieRecordingEngine {
    /// Whether `recording` goes on through `error` of `connection`'s device (its request survives disconnection and
    /// the device was unplugged): its media stops where it is, and the gap begins there. False: the caller ends it.
    func keepsRecording(_ recording: Recording, through error: AVError, of connection: AVCaptureConnection) -> Bool {
        guard recording.request.survivesDisconnection, error.code == .deviceWasDisconnected,
            recording.phase != .draining, recording.phase != .finished
        else { return false }
        let key = ObjectIdentifier(connection)
        guard recording.lostConnections[key] == nil else { return true }
        let isVideo = AVCaptureFileOutput.isVideo(connection)
        let edge = isVideo ? recording.timeline.videoEdge : recording.timeline.audioEdge
        recording.lostConnections[key] = edge
        // A camera's H.264 recorded as it comes can only go on at a key frame.
        if isVideo && recording.isInterFramePassthrough { recording.awaitsKeyFrame = true }
        guard recording.didStart, recording.timeline.start.isNumeric, let device = Self.device(of: connection) else {
            return true
        }
        let gapStart = edge.isNumeric ? max(edge - recording.timeline.start, .zero) : .zero
        callback(recording) { delegate, output, url, _ in
            (delegate as? any AVCaptureFileOutputDisconnectionDelegate)?.fileOutput(
                output, recordingTo: url, didLoseDevice: device, at: gapStart)
        }
        return true
    }

    /// A sample at source time `time` came from `connection`: when its device was lost, it is back, and the
    /// delegate hears where the gap lies.
    func noteReturn(of connection: AVCaptureConnection, in recording: Recording, at time: CMTime) {
        guard let edge = recording.lostConnections.removeValue(forKey: ObjectIdentifier(connection)),
            recording.didStart, recording.timeline.start.isNumeric, let device = Self.device(of: connection)
        else { return }
        let gapStart = edge.isNumeric ? max(edge - recording.timeline.start, .zero) : .zero
        let gapEnd = max(recording.timeline.elapsed(at: time), gapStart)
        let gap = CMTimeRange(start: gapStart, end: gapEnd)
        callback(recording) { delegate, output, url, _ in
            (delegate as? any AVCaptureFileOutputDisconnectionDelegate)?.fileOutput(
                output, recordingTo: url, didRegainDevice: device, gap: gap)
        }
    }

    private static func device(of connection: AVCaptureConnection) -> AVCaptureDevice? {
        connection.inputPorts.lazy.compactMap { ($0.input as? AVCaptureDeviceInput)?.device }.first
    }
}
