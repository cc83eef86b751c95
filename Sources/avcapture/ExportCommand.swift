import ArgumentParser
import Dispatch
import Foundation
import OpenAVCapture

/// `avcapture export IN OUT [--preset P] [--slow-motion START-END:FACTOR] [--frame-rate N] [--pitch A]`: a file
/// (or part of one slowed down) written anew with AVAssetExportSession.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a movie anew with an export preset, optionally slowing part of it down.",
        discussion: """
            PRESET is passthrough (copy, no re-encoding), highest, medium, low, 640x480, 960x540, 1280x720, \
            1920x1080, 3840x2160, hevc, hevc-1920x1080, hevc-3840x2160 or m4a (sound only), or an Apple preset \
            name (AVAssetExportPresetHighestQuality). --slow-motion 0.5-1.5:8 plays the recording's 0.5 s to \
            1.5 s eight times slower; with passthrough every frame is kept and retimed, and the sound alone is \
            re-encoded, stretched by --pitch. --frame-rate 30 writes a constant \
            frame rate (encoding presets only): each frame shows the source frame on screen at its time.
            """)

    @OptionGroup var logging: LoggingOptions
    @Argument(help: "The movie to read.") var input: String
    @Argument(help: "The file to write: .mov, .mp4, .m4v, or .m4a with --preset m4a. It must not exist.")
    var output: String
    @Option(help: "The export preset (see below).") var preset: Preset = Preset(name: "passthrough")
    @Option(name: .customLong("slow-motion"), help: "START-END:FACTOR, in seconds: slow that range down FACTOR times.")
    var slowMotion: String?
    @Option(name: .customLong("frame-rate"), help: "A constant output frame rate (encoding presets).")
    var frameRate: Int?
    @Option(help: "How slowed sound keeps its pitch (varispeed: the pitch drops).") var pitch: PitchChoice = .spectral

    /// `--preset`: a short name from `presetNames`, or an Apple preset name (`AVAssetExportPreset…`).
    struct Preset: ExpressibleByArgument, CustomStringConvertible {
        var name: String

        init(name: String) { self.name = name }

        init?(argument: String) {
            guard ExportCommand.presetNames[argument.lowercased()] != nil || argument.hasPrefix("AVAssetExportPreset")
            else { return nil }
            name = argument.hasPrefix("AVAssetExportPreset") ? argument : argument.lowercased()
        }

        /// The Apple preset it names.
        var presetName: String { ExportCommand.presetNames[name] ?? name }
        var description: String { name }
        static var allValueStrings: [String] { ExportCommand.presetNames.keys.sorted() }
        static var defaultCompletionKind: CompletionKind { .list(allValueStrings) }
    }

    static let presetNames: [String: String] = [
        "passthrough": AVAssetExportPresetPassthrough, "highest": AVAssetExportPresetHighestQuality,
        "medium": AVAssetExportPresetMediumQuality, "low": AVAssetExportPresetLowQuality,
        "640x480": AVAssetExportPreset640x480, "960x540": AVAssetExportPreset960x540,
        "1280x720": AVAssetExportPreset1280x720, "1920x1080": AVAssetExportPreset1920x1080,
        "3840x2160": AVAssetExportPreset3840x2160, "hevc": AVAssetExportPresetHEVCHighestQuality,
        "hevc-1920x1080": AVAssetExportPresetHEVC1920x1080, "hevc-3840x2160": AVAssetExportPresetHEVC3840x2160,
        "m4a": AVAssetExportPresetAppleM4A,
    ]

    static let fileTypes: [String: AVFileType] = ["mov": .mov, "mp4": .mp4, "m4v": .m4v, "m4a": .m4a]

    /// `START-END:FACTOR` as a range and a factor.
    static func parseSlowMotion(_ text: String) throws -> (range: CMTimeRange, factor: Double) {
        let usage = "--slow-motion wants START-END:FACTOR in seconds, e.g. 0.5-1.5:8, not \(text)"
        let parts = text.split(separator: ":")
        guard parts.count == 2, let factor = Double(parts[1]), factor > 0, factor <= 100 else {
            throw ToolFailure(.usage, usage)
        }
        let bounds = parts[0].split(separator: "-")
        guard bounds.count == 2, let start = Double(bounds[0]), let end = Double(bounds[1]), start >= 0, end > start
        else { throw ToolFailure(.usage, usage) }
        func time(_ seconds: Double) -> CMTime {
            CMTime(value: Int64((seconds * 1_000_000).rounded()), timescale: 1_000_000)
        }
        return (CMTimeRange(start: time(start), end: time(end)), factor)
    }

    func run() throws {
        try reportingFailures {
            let presetName = preset.presetName
            let outputURL = URL(fileURLWithPath: output)
            guard let fileType = Self.fileTypes[outputURL.pathExtension.lowercased()] else {
                throw ToolFailure(.usage, "\(output): the extension must be .mov, .mp4, .m4v or .m4a")
            }
            let algorithm = pitch.algorithm
            if frameRate != nil, presetName == AVAssetExportPresetPassthrough {
                throw ToolFailure(.usage, "--frame-rate needs an encoding preset (passthrough keeps every frame)")
            }
            if let frameRate, !(1...480).contains(frameRate) {
                throw ToolFailure(.usage, "--frame-rate is 1 to 480, not \(frameRate)")
            }
            guard FileManager.default.isReadableFile(atPath: input) else {
                throw ToolFailure(.noInput, "\(input) does not exist or cannot be read")
            }
            if FileManager.default.fileExists(atPath: output) {
                throw ToolFailure(.cannotCreate, "\(output) exists; remove it or choose another name")
            }
            let source = AVURLAsset(url: URL(fileURLWithPath: input))
            guard source.isReadable else {
                throw ToolFailure(.dataError, "\(input) is not a movie or audio file FFmpeg can read")
            }
            var asset: AVAsset = source
            if let slowMotion {
                let (range, factor) = try Self.parseSlowMotion(slowMotion)
                guard range.end <= source.duration else {
                    throw ToolFailure(
                        .usage,
                        "--slow-motion ends after the movie (it lasts \(String(format: "%.3f", source.duration.seconds)) s)"
                    )
                }
                let composition = AVMutableComposition()
                do {
                    try composition.insertTimeRange(
                        CMTimeRange(start: .zero, duration: source.duration), of: source, at: .zero)
                } catch {
                    throw ToolFailure(.dataError, "\(input) cannot be edited: \(error.localizedDescription)")
                }
                composition.scaleTimeRange(
                    range, toDuration: CMTimeMultiplyByFloat64(range.duration, multiplier: factor))
                asset = composition
            }
            guard let session = AVAssetExportSession(asset: asset, presetName: presetName) else {
                throw ToolFailure(.usage, "\(presetName) is not available in this build (HEVC needs libx265)")
            }
            guard session.supportedFileTypes.contains(fileType) else {
                throw ToolFailure(
                    .usage,
                    "\(preset) writes \(session.supportedFileTypes.map(\.rawValue).joined(separator: ", ")), "
                        + "not .\(outputURL.pathExtension)")
            }
            session.outputURL = outputURL
            session.outputFileType = fileType
            session.audioTimePitchAlgorithm = algorithm
            if let frameRate {
                let video = AVMutableVideoComposition(propertiesOf: asset)
                video.frameDuration = CMTime(value: 1, timescale: Int32(frameRate))
                session.videoComposition = video
            }
            let done = DispatchSemaphore(value: 0)
            session.exportAsynchronously { done.signal() }
            done.wait()
            guard session.status == .completed else {
                let reason = (session.error as? AVError)?.localizedDescription ?? "\(session.status)"
                throw ToolFailure(.ioError, "exporting \(input) failed: \(reason)")
            }
            let written = AVURLAsset(url: outputURL)
            print(String(format: "%@: %.3f s", output, written.duration.seconds))
        }
    }
}
