import ArgumentParser
import Foundation

/// `--verbose`: FFmpeg's own log lines (a damaged frame, a muxer's warning) on stderr. Without it avcapture keeps
/// them off the terminal, since its own lines already say what failed.
struct LoggingOptions: ParsableArguments {
    @Flag(help: "Show FFmpeg's own log lines (warnings and errors) on stderr.") var verbose = false

    /// Sets FFmpeg's log level through `OPENAV_FFMPEG_LOG` before anything opens an FFmpeg context: `quiet` unless
    /// `--verbose` is among `arguments` (then the variable's own value if set, else `warning`). Called by `main()`
    /// before parsing, since a device may be opened while the command line is still being read.
    static func applyFFmpegLogLevel(arguments: [String]) {
        let variable = "OPENAV_FFMPEG_LOG"
        if arguments.contains("--verbose") {
            if ProcessInfo.processInfo.environment[variable] == nil { setenv(variable, "warning", 1) }
        } else {
            setenv(variable, "quiet", 1)
        }
    }
}
