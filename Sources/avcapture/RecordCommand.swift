import ArgumentParser
import Foundation
import OpenAVCapture

/// `avcapture record OUTPUT`: a movie from a camera and a microphone (or either alone).
struct RecordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record a movie (.mov .mp4 .m4v) or, with --video none, audio (.m4a .wav .aiff .aifc .caf).",
        discussion: """
            Ctrl-C or SIGTERM stops the recording cleanly; SIGUSR1 pauses and resumes it. The file is readable up \
            to its last fragment (--fragment-interval) even if the process is killed.

            A movie file plays as a camera with --video file:PATH (PATH relative to the working directory), in real \
            time; its sound is the microphone unless --audio says otherwise. The recording stops at the end of the \
            file ("stopped: end of input", exit 0), or plays it again and again with --loop.
            """)

    @Argument(help: "The file to write; its extension chooses the container.") var output: String
    @Option(help: "Camera: an index, uniqueID, 'virtual', part of its name, or 'none'.") var video: String?
    @Option(help: "Microphone: an index, uniqueID, 'virtual', part of its name, or 'none'.") var audio: String?
    @Option(help: "Session preset: high, medium, low, photo, 320x240, 352x288, 640x480, 960x540, 1280x720, 1920x1080, 3840x2160.")
    var preset: String?
    @Option(help: "Exact camera format, e.g. 1280x720@60.") var format: String?
    @Option(help: "Video codec: h264, hevc, prores, jpeg.") var codec: String?
    @Option(help: "Video bit rate in bits per second (H.264 and HEVC).") var bitrate: Int?
    @Option(help: "Stop after this many seconds.") var duration: Double?
    @Option(name: .customLong("max-size"), help: "Stop before the file passes this many bytes.") var maxSize: Int64?
    @Option(name: .customLong("min-free"), help: "Stop when the disk has fewer free bytes than this.")
    var minFree: Int64?
    @Option(
        name: .customLong("fragment-interval"),
        help: "Longest time in seconds between movie fragments (crash safety; sooner at high bit rates); 0 for none.")
    var fragmentInterval: Double = 10
    @Option(help: "Orientation of the picture: portrait, portrait-upside-down, landscape-left, landscape-right.")
    var orientation: String?
    @Flag(help: "Mirror the picture left to right.") var mirror = false
    @Option(name: .customLong("metadata"), parsing: .singleValue, help: "KEY=VALUE metadata (title, author, …); repeatable.")
    var metadata: [String] = []
    @Option(parsing: .unconditional, help: "Where it was recorded: LAT,LON in degrees.") var location: String?
    @Flag(help: "Replace an existing file (it survives a failed recording).") var overwrite = false
    @Flag(help: "Play file: sources again and again instead of stopping at their end.") var loop = false
    @OptionGroup var logging: LoggingOptions

    static let movieExtensions = ["mov", "mp4", "m4v"]
    static let codecs: [String: AVVideoCodecType] = ["h264": .h264, "hevc": .hevc, "prores": .proRes422, "jpeg": .jpeg]

    func validate() throws {
        if preset != nil && format != nil { throw ValidationError("--preset and --format conflict; give one") }
        if video?.lowercased() == "none" && audio?.lowercased() == "none" {
            throw ValidationError("--video none and --audio none leave nothing to record")
        }
        if let codec, Self.codecs[codec.lowercased()] == nil {
            throw ValidationError("unknown --codec '\(codec)'; use h264, hevc, prores or jpeg")
        }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be positive") }
        if fragmentInterval < 0 { throw ValidationError("--fragment-interval cannot be negative") }
        if let format, Self.parseFormat(format) == nil {
            throw ValidationError("--format '\(format)' is not WIDTHxHEIGHT@FPS, e.g. 1280x720@30")
        }
        if let preset, Self.parsePreset(preset) == nil {
            throw ValidationError("unknown --preset '\(preset)'; use high, medium, low, photo or a size like 1280x720")
        }
        if let orientation, Self.parseOrientation(orientation) == nil {
            throw ValidationError("unknown --orientation '\(orientation)'; use portrait, portrait-upside-down, landscape-left or landscape-right")
        }
        if let location, Self.parseLocation(location) == nil {
            throw ValidationError("--location '\(location)' is not LAT,LON in degrees, e.g. 48.8584,2.2945")
        }
        for entry in metadata where !entry.contains("=") {
            throw ValidationError("--metadata '\(entry)' is not KEY=VALUE")
        }
        let isAudioOnly = video?.lowercased() == "none"
        if isAudioOnly && (codec != nil || bitrate != nil || format != nil || orientation != nil || mirror) {
            throw ValidationError("--codec, --bitrate, --format, --orientation and --mirror need a camera")
        }
    }

    func run() throws {
        try reportingFailures {
            let isAudioOnly = video?.lowercased() == "none"
            let extensions = isAudioOnly ? AudioCommand.extensions : Self.movieExtensions
            let target = try OutputTarget(path: output, allowedExtensions: extensions, overwrite: overwrite)
            DeviceSelector.loopsMovieFiles = loop
            let camera = try DeviceSelector.device(video, for: .video)
            // A movie file's sound goes with its picture unless --audio names another microphone.
            let companion = audio == nil ? try DeviceSelector.companionMicrophone(of: camera, named: video) : nil
            let microphone = try companion ?? DeviceSelector.device(audio, for: .audio)
            let fileOutput: AVCaptureFileOutput = isAudioOnly ? AVCaptureAudioFileOutput() : AVCaptureMovieFileOutput()
            let formatChoice: CaptureSetup.FormatChoice? =
                if let preset { .preset(Self.parsePreset(preset)!) } else if let format {
                    Self.parseFormat(format).map { .exact(width: $0.0, height: $0.1, framesPerSecond: $0.2) }
                } else { nil }
            let setup = try CaptureSetup(
                video: camera, audio: microphone, format: formatChoice, outputs: [fileOutput])
            configure(fileOutput)
            try Recorder(output: fileOutput, setup: setup, target: target).run(
                startAs: isAudioOnly ? AudioCommand.fileType(for: target.url) : nil)
        }
    }

    private func configure(_ output: AVCaptureFileOutput) {
        if let duration { output.maxRecordedDuration = CMTime(seconds: duration, preferredTimescale: 1000) }
        if let maxSize { output.maxRecordedFileSize = maxSize }
        if let minFree { output.minFreeDiskSpaceLimit = minFree }
        let items = metadataItems()
        if let audioOutput = output as? AVCaptureAudioFileOutput {
            audioOutput.metadata = items
            return
        }
        guard let movie = output as? AVCaptureMovieFileOutput else { return }
        movie.metadata = items
        movie.movieFragmentInterval =
            fragmentInterval > 0 ? CMTime(seconds: fragmentInterval, preferredTimescale: 1000) : .invalid
        guard let connection = movie.connection(with: .video) else { return }
        if codec != nil || bitrate != nil {
            var settings: [String: Any] = [:]
            if let codec { settings[AVVideoCodecKey] = Self.codecs[codec.lowercased()]! }
            if let bitrate { settings[AVVideoCompressionPropertiesKey] = [AVVideoAverageBitRateKey: bitrate] }
            movie.setOutputSettings(settings, for: connection)
        }
        if let orientation, let angle = Self.parseOrientation(orientation), connection.isVideoRotationAngleSupported(angle) {
            connection.videoRotationAngle = angle
        }
        if mirror, connection.isVideoMirroringSupported {
            connection.automaticallyAdjustsVideoMirroring = false
            connection.isVideoMirrored = true
        }
    }

    private func metadataItems() -> [AVMetadataItem] {
        var items: [AVMetadataItem] = metadata.map { entry in
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            let item = AVMutableMetadataItem()
            item.keySpace = .quickTimeMetadata
            let key = parts[0].contains(".") ? parts[0] : "com.apple.quicktime." + parts[0].lowercased()
            item.key = NSString(string: key)
            item.value = NSString(string: parts.count > 1 ? parts[1] : "")
            return item
        }
        if let location, let (latitude, longitude) = Self.parseLocation(location) {
            let item = AVMutableMetadataItem()
            item.identifier = .quickTimeMetadataLocationISO6709
            item.value = NSString(string: String(format: "%+08.4f%+09.4f/", latitude, longitude))
            items.append(item)
        }
        return items
    }

    // MARK: Parsing

    static func parseFormat(_ text: String) -> (Int32, Int32, Double)? {
        guard let match = text.wholeMatch(of: /(\d+)x(\d+)@(\d+(?:\.\d+)?)/),
            let width = Int32(match.1), let height = Int32(match.2), let rate = Double(match.3), rate > 0
        else { return nil }
        return (width, height, rate)
    }

    static func parsePreset(_ text: String) -> AVCaptureSession.Preset? {
        let presets: [String: AVCaptureSession.Preset] = [
            "high": .high, "medium": .medium, "low": .low, "photo": .photo, "320x240": .qvga320x240,
            "352x288": .cif352x288, "640x480": .vga640x480, "960x540": .qHD960x540, "1280x720": .hd1280x720,
            "1920x1080": .hd1920x1080, "3840x2160": .hd4K3840x2160,
        ]
        return presets[text.lowercased()]
    }

    static func parseOrientation(_ text: String) -> CGFloat? {
        ["portrait": 90, "portrait-upside-down": 270, "landscape-right": 0, "landscape-left": 180][text.lowercased()]
    }

    static func parseLocation(_ text: String) -> (Double, Double)? {
        let parts = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2, let latitude = parts[0], let longitude = parts[1], abs(latitude) <= 90,
            abs(longitude) <= 180
        else { return nil }
        return (latitude, longitude)
    }
}
