import ArgumentParser
import OpenAVCapture

/// An HLS stream's options, shared by `publish` (to a `.m3u8` path) and `serve --hls`.
struct HLSOptions: ParsableArguments {
    @Option(name: .customLong("segment-duration"), help: "HLS: seconds per segment (default 2).")
    var segmentDuration: Double?
    @Option(name: .customLong("playlist-size"), help: "HLS: segments listed in the playlist (default 6).")
    var playlistSize: Int?

    /// Whether either option was given.
    var isGiven: Bool { segmentDuration != nil || playlistSize != nil }

    func validate() throws {
        if let segmentDuration, !(segmentDuration >= 1) {
            throw ValidationError("--segment-duration must be 1 or more")
        }
        if let playlistSize, playlistSize < 1 { throw ValidationError("--playlist-size must be 1 or more") }
    }

    /// Sets what was given on `output`; the output's defaults stand for the rest.
    func apply(to output: AVCapturePublishingOutput) {
        if let segmentDuration { output.segmentDuration = segmentDuration }
        if let playlistSize { output.playlistSize = playlistSize }
    }
}
