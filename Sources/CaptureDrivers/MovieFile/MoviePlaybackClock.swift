import OpenCoreMedia
import Synchronization

/// Where file time 0 falls on the host clock for the camera and microphone of one file, so that they play in sync
/// whichever starts first: the first to start sets it, and it is forgotten when both have stopped. It also lets the
/// tracks of a file end together: a track that reached its end waits until every playing track of the file has, so
/// a recording of both ends after the last frame and the last sound, not when the shorter track runs out.
///
/// Threading: thread safe (a mutex).
final class MoviePlaybackClock: Sendable {
    private struct State {
        var anchor: Int64?
        var users = 0
        var ended = 0
        var isVideoPlaying = false
        var hasVideoReportedEnd = false
    }

    private let state = Mutex(State())

    /// Host nanoseconds of file time 0, set now if no track of the file is playing.
    func join(_ media: DeviceMedia) -> Int64 {
        state.withLock { state in
            state.users += 1
            if media == .video {
                state.isVideoPlaying = true
                state.hasVideoReportedEnd = false
            }
            if let anchor = state.anchor { return anchor }
            let anchor = CMClock.hostNanosecondsNow()
            state.anchor = anchor
            return anchor
        }
    }

    /// Records that one playing track reached its end.
    func trackEnded() {
        state.withLock { $0.ended += 1 }
    }

    /// Whether a track that reached its end may report it now: once every playing track of the file has ended,
    /// the picture first, so that its last frames (a decoder's delay drained as it reports) reach a recording
    /// before the sound's end finishes the file.
    func mayReportEnd(of media: DeviceMedia) -> Bool {
        state.withLock { state in
            state.ended >= state.users && (media == .video || !state.isVideoPlaying || state.hasVideoReportedEnd)
        }
    }

    /// The picture has reported its end.
    func videoReportedEnd() {
        state.withLock { $0.hasVideoReportedEnd = true }
    }

    /// A track stops playing; `ended` says whether it had reported its end.
    func leave(_ media: DeviceMedia, ended: Bool) {
        state.withLock { state in
            state.users = max(0, state.users - 1)
            if ended { state.ended = max(0, state.ended - 1) }
            if media == .video { state.isVideoPlaying = false }
            if state.users == 0 { state.anchor = nil }
        }
    }
}
