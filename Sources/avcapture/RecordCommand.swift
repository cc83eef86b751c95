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

            Segments (a movie cut into consecutive files, no frame or sample lost or repeated at a cut, each file \
            starting on a key frame): --segment-duration SECONDS and/or --segment-size BYTES, with OUTPUT a pattern \
            whose strftime escapes name each file, e.g. 'cam-%Y%m%d-%H%M%S.mov'; --keep N keeps the newest N files, \
            --keep 2G the newest that fit in 2 GiB (K, M, G, T: powers of 1024). --duration bounds the whole series.

            Pre-event recording (--pre-roll SECONDS): the last SECONDS are kept encoded in memory (at most \
            --ring-size bytes, default 24M) and each trigger writes a movie that starts a key frame at or before \
            SECONDS earlier, named by OUTPUT's strftime escapes: --trigger signal (SIGUSR2), stdin (a line), \
            level:DBFS (the sound's peak reaching it, e.g. level:-20), or several, comma separated. The file goes on \
            --post-roll seconds after its trigger, or until the next signal or line. Runs until Ctrl-C, --duration \
            or the end of a file source.

            --screen records an X11 display (the server DISPLAY names) instead of a camera: N is its index in \
            'avcapture devices' (the main display when left out); --crop X,Y,W,H (display pixels from its top-left), \
            --fps (at most; default 30), --cursor and --clicks choose what is captured.

            --reconnect keeps a movie recording when its camera or microphone is unplugged: when the same device \
            comes back, the recording goes on in the same file, the time it was away left as a gap (no frames; \
            silence for a microphone away up to 10 s), the sound after it in sync with the picture. Without it, an \
            unplugged device ends the recording (exit status 69).
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
    @Option(
        name: .customLong("segment-duration"),
        help: "Cut the movie into files of this many seconds; OUTPUT is a strftime pattern.")
    var segmentDuration: Double?
    @Option(
        name: .customLong("segment-size"),
        help: "Cut the movie into files once one holds this many bytes of media (suffix K, M, G allowed).")
    var segmentSize: String?
    @Option(help: "With segments: keep the newest N files, or the newest that fit in SIZE (e.g. 2G); older are deleted.")
    var keep: String?
    @Option(
        name: .customLong("pre-roll"), help: "Keep this many seconds in memory and write a file on each --trigger.")
    var preRoll: Double?
    @Option(name: .customLong("post-roll"), help: "With --pre-roll: seconds a file goes on after its trigger.")
    var postRoll: Double?
    @Option(help: "With --pre-roll: signal (SIGUSR2), stdin (a line), level:DBFS, or several, comma separated.")
    var trigger: String = "signal"
    @Option(name: .customLong("ring-size"), help: "With --pre-roll: the most bytes kept in memory (default 24M).")
    var ringSize: String?
    @Option(help: "Orientation of the picture: portrait, portrait-upside-down, landscape-left, landscape-right.")
    var orientation: String?
    @Flag(help: "Mirror the picture left to right.") var mirror = false
    @Option(name: .customLong("metadata"), parsing: .singleValue, help: "KEY=VALUE metadata (title, author, …); repeatable.")
    var metadata: [String] = []
    @Option(parsing: .unconditional, help: "Where it was recorded: LAT,LON in degrees.") var location: String?
    @Flag(help: "Replace an existing file (it survives a failed recording).") var overwrite = false
    @Flag(help: "Play file: sources again and again instead of stopping at their end.") var loop = false
    @Flag(help: "Keep recording through an unplugged camera or microphone; it goes on in the same file when back.")
    var reconnect = false
    @Option(help: "Record display N of the X server (an index from 'avcapture devices'; 'main' or left out: the main one).")
    var screen: String?
    @Option(help: "With --screen: the area X,Y,W,H in display pixels.") var crop: String?
    @Option(help: "With --screen: the highest frame rate (default 30).") var fps: Double?
    @Flag(help: "With --screen: draw the cursor.") var cursor = false
    @Flag(help: "With --screen: highlight mouse clicks.") var clicks = false
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
        if screen != nil {
            if video != nil && video?.lowercased() != "none" { throw ValidationError("--screen and --video conflict; give one") }
            if preset != nil || format != nil { throw ValidationError("--preset and --format are for cameras; use --crop and --fps") }
            if screen != "main" && Int(screen!) == nil {
                throw ValidationError("--screen '\(screen!)' is not a display index from 'avcapture devices'")
            }
        } else if crop != nil || fps != nil || cursor || clicks {
            throw ValidationError("--crop, --fps, --cursor and --clicks need --screen")
        }
        if let crop, Self.parseCrop(crop) == nil {
            throw ValidationError("--crop '\(crop)' is not X,Y,WIDTH,HEIGHT in pixels, e.g. 0,0,1280,720")
        }
        if let fps, !(fps > 0) { throw ValidationError("--fps must be positive") }
        if let segmentDuration, !(segmentDuration > 0) { throw ValidationError("--segment-duration must be positive") }
        if let segmentSize, (Self.parseBytes(segmentSize) ?? 0) <= 0 {
            throw ValidationError("--segment-size '\(segmentSize)' is not a size in bytes, e.g. 50000000 or 50M")
        }
        if let keep, Self.parseKeep(keep) == nil {
            throw ValidationError("--keep '\(keep)' is not a count (e.g. 10) or a size (e.g. 2G)")
        }
        if keep != nil && !isSegmented { throw ValidationError("--keep needs --segment-duration or --segment-size") }
        if let preRoll, !(preRoll >= 0) { throw ValidationError("--pre-roll must be 0 or more seconds") }
        if let postRoll, !(postRoll > 0) { throw ValidationError("--post-roll must be positive") }
        if EventRecorder.Trigger.parse(trigger) == nil {
            throw ValidationError("--trigger '\(trigger)' is not signal, stdin or level:DBFS (e.g. level:-20)")
        }
        if let ringSize, (Self.parseBytes(ringSize) ?? 0) <= 0 {
            throw ValidationError("--ring-size '\(ringSize)' is not a size in bytes, e.g. 24M")
        }
        if preRoll == nil && (postRoll != nil || ringSize != nil) {
            throw ValidationError("--post-roll and --ring-size need --pre-roll")
        }
        if preRoll != nil && (isSegmented || overwrite || maxSize != nil) {
            throw ValidationError("--pre-roll writes one file per trigger: no segments, --overwrite or --max-size")
        }
        if preRoll != nil && video?.lowercased() == "none" && screen == nil {
            throw ValidationError("--pre-roll needs a camera or a screen")
        }
        if reconnect && (preRoll != nil || (video?.lowercased() == "none" && screen == nil)) {
            throw ValidationError("--reconnect is for movies from a camera: not with --pre-roll or --video none")
        }
        if isSegmented && overwrite { throw ValidationError("--overwrite does not apply to segments (they never replace a file)") }
        let isAudioOnly = video?.lowercased() == "none" && screen == nil
        if isAudioOnly && isSegmented { throw ValidationError("segments need a camera or a screen: they cut at video frames") }
        if isAudioOnly && (codec != nil || bitrate != nil || format != nil || orientation != nil || mirror) {
            throw ValidationError("--codec, --bitrate, --format, --orientation and --mirror need a camera")
        }
    }

    func run() throws {
        try reportingFailures {
            let isAudioOnly = video?.lowercased() == "none" && screen == nil
            let extensions = isAudioOnly ? AudioCommand.extensions : Self.movieExtensions
            // A segment pattern is checked as a path (its extension, its directory); segments never replace a file.
            let target = try OutputTarget(
                path: output, allowedExtensions: extensions, overwrite: overwrite || isSegmented)
            DeviceSelector.loopsMovieFiles = loop
            let screenInput = try screen.map(makeScreenInput)
            let camera = screenInput == nil ? try DeviceSelector.device(video, for: .video) : nil
            // A movie file's sound goes with its picture unless --audio names another microphone.
            let companion = audio == nil ? try DeviceSelector.companionMicrophone(of: camera, named: video) : nil
            let microphone = try companion ?? DeviceSelector.device(audio, for: .audio)
            let fileOutput: AVCaptureFileOutput =
                isAudioOnly ? AVCaptureAudioFileOutput()
                : preRoll != nil ? AVCapturePreEventFileOutput() : AVCaptureMovieFileOutput()
            let formatChoice: CaptureSetup.FormatChoice? =
                if let preset { .preset(Self.parsePreset(preset)!) } else if let format {
                    Self.parseFormat(format).map { .exact(width: $0.0, height: $0.1, framesPerSecond: $0.2) }
                } else { nil }
            let setup = try CaptureSetup(
                video: camera, audio: microphone, screen: screenInput, format: formatChoice, outputs: [fileOutput])
            if let events = fileOutput as? AVCapturePreEventFileOutput, let preRoll {
                events.preRollDuration = CMTime(seconds: preRoll, preferredTimescale: 1000)
                events.postRollDuration = postRoll.map { CMTime(seconds: $0, preferredTimescale: 1000) } ?? .invalid
                if let size = ringSize.flatMap(Self.parseBytes) { events.maximumBufferedBytes = Int(size) }
                events.videoBitRate = bitrate
                try EventRecorder(
                    output: events, setup: setup, pattern: URL(fileURLWithPath: output).path,
                    triggers: EventRecorder.Trigger.parse(trigger)!, duration: duration
                ).run()
                return
            }
            configure(fileOutput)
            try Recorder(output: fileOutput, setup: setup, target: target, segments: makeSegments()).run(
                startAs: isAudioOnly ? AudioCommand.fileType(for: target.url) : nil)
        }
    }

    private var isSegmented: Bool { segmentDuration != nil || segmentSize != nil }

    /// The segment series --segment-duration, --segment-size and --keep ask for, or nil for one file.
    private func makeSegments() -> AVCaptureRecordingSegments? {
        guard isSegmented else { return nil }
        let kept = keep.flatMap(Self.parseKeep)
        return AVCaptureRecordingSegments(
            pattern: URL(fileURLWithPath: output).path,
            duration: segmentDuration.map { CMTime(seconds: $0, preferredTimescale: 1000) } ?? .invalid,
            maxFileSize: segmentSize.flatMap(Self.parseBytes) ?? 0, keepCount: kept?.count ?? 0,
            keepBytes: kept?.bytes ?? 0)
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
        movie.survivesDisconnection = reconnect
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

    /// The screen input `--screen N` names, set up as --crop, --fps, --cursor and --clicks say.
    private func makeScreenInput(_ choice: String) throws -> AVCaptureScreenInput {
        let displays: [AVCaptureScreenInput.Display]
        do {
            displays = try AVCaptureScreenInput.displays()
        } catch {
            throw ToolFailure(.unavailable, "cannot record the screen: \(CaptureSetup.describe(error))")
        }
        let index = choice == "main" ? 0 : Int(choice)!
        guard displays.indices.contains(index), let input = AVCaptureScreenInput(displayID: displays[index].displayID)
        else {
            throw ToolFailure(
                .unavailable, "no screen \(choice): the X server has \(displays.count); see 'avcapture devices'")
        }
        if let crop, let (x, y, width, height) = Self.parseCrop(crop) {
            let bounds = displays[index].bounds
            guard x + width <= Int(bounds.width), y + height <= Int(bounds.height) else {
                throw ToolFailure(
                    .usage, "--crop \(crop) leaves screen \(choice), which is \(Int(bounds.width))x\(Int(bounds.height))")
            }
            input.cropRect = CGRect(x: x, y: y, width: width, height: height)
        }
        if let fps { input.minFrameDuration = CMTime(seconds: 1 / fps, preferredTimescale: 600_000) }
        input.capturesCursor = cursor
        input.capturesMouseClicks = clicks
        return input
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

    /// "50000000", "500K", "50M", "2G", "1T" (powers of 1024) as bytes.
    static func parseBytes(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        let trimmed = text.uppercased().hasSuffix("B") ? String(text.dropLast()) : text
        if let unit = trimmed.last.flatMap({ units[Character($0.uppercased())] }) {
            return Double(trimmed.dropLast()).map { Int64($0 * Double(unit)) }
        }
        return Int64(trimmed)
    }

    /// `--keep`: a plain number is a count of files; a number with a unit (K, M, G, T, B) a total size.
    static func parseKeep(_ text: String) -> (count: Int, bytes: Int64)? {
        if let count = Int(text) { return count > 0 ? (count, 0) : nil }
        guard let bytes = parseBytes(text), bytes > 0 else { return nil }
        return (0, bytes)
    }

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

    static func parseCrop(_ text: String) -> (Int, Int, Int, Int)? {
        let parts = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 4, let x = parts[0], let y = parts[1], let width = parts[2], let height = parts[3],
            x >= 0, y >= 0, width > 0, height > 0
        else { return nil }
        return (x, y, width, height)
    }

    /// `--screen` may stand alone (the main display): ArgumentParser options take a value, so a `--screen` not
    /// followed by an index or `main` gets `main` put after it.
    static func givingScreenItsValue(_ arguments: [String]) -> [String] {
        var result: [String] = []
        for (position, argument) in arguments.enumerated() {
            result.append(argument)
            guard argument == "--screen" else { continue }
            let next = arguments.indices.contains(position + 1) ? arguments[position + 1] : nil
            if next.map({ Int($0) == nil && $0 != "main" }) ?? true { result.append("main") }
        }
        return result
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
