import CFFmpeg
import Foundation

/// FFmpeg's log level for this process: errors only, so a library user's terminal is not filled with x264's and
/// the muxers' informational lines. `OPENAV_FFMPEG_LOG=quiet|error|warning|info|verbose|debug` chooses another
/// level when diagnosing a codec.
package enum FFmpegLogging {
    /// Applied once, before the first FFmpeg context opens (each encoder, muxer and demuxer touches it).
    package static let configured: Void = {
        let levels: [String: Int32] = [
            "quiet": AV_LOG_QUIET, "error": AV_LOG_ERROR, "warning": AV_LOG_WARNING, "info": AV_LOG_INFO,
            "verbose": AV_LOG_VERBOSE, "debug": AV_LOG_DEBUG,
        ]
        let requested = ProcessInfo.processInfo.environment["OPENAV_FFMPEG_LOG"].flatMap { levels[$0.lowercased()] }
        av_log_set_level(requested ?? AV_LOG_ERROR)
    }()
}
