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
            --keep 2G the newest that fit in 2 GB. --duration bounds the whole series.

            Sizes and bit rates take ffmpeg's suffixes: k, M, G, T are powers of 1000 (--bitrate 6M is 6000000 \
            bit/s, --max-size 500M is 500000000 bytes), Ki, Mi, Gi, Ti powers of 1024 (2Gi); a trailing B is \
            allowed on sizes.

            Pre-event recording (--pre-roll SECONDS): the last SECONDS are kept encoded in memory (at most \
            --ring-size bytes, default 24Mi) and each trigger writes a movie that starts a key frame at or before \
            SECONDS earlier, named by OUTPUT's strftime escapes: --trigger signal (SIGUSR2), stdin (a line), \
            level:DBFS (the sound's peak reaching it, e.g. level:-20), or several, comma separated. The file goes on \
            --post-roll seconds after its trigger, or until the next signal or line. Runs until Ctrl-C, --duration \
            or the end of a file source.

            --screen records a screen instead of a camera: in a Wayland session what the ScreenCast portal shares \
            (GNOME, KDE), else an output of the compositor WAYLAND_DISPLAY names (through wlr-screencopy: sway, \
            Hyprland, river), else an X11 display (the server DISPLAY names); N is its index in \
            'avcapture devices' (the main display when left out; write --screen=N or --screen main when OUTPUT \
            follows it and is a number); --screen window records a window chosen in the portal's dialog; --crop X,Y,W,H (display pixels from its top-left), \
            --fps (at most; default 30), --cursor and --clicks choose what is captured.

            Several --video options record the cameras at once (an AVCaptureMultiCamSession), one movie per \
            camera with the microphone in each, all on one clock: OUTPUT names the files with %c, the camera's \
            number in the order given (1 for the first; %% is a percent sign), e.g. 'cam-%c.mov' writes cam-1.mov, \
            cam-2.mov, ... --format applies to every camera. A camera unplugged ends its own file (exit status 69 \
            at the end); the others record on, and every file is finalized.

            --reconnect keeps a movie recording when its camera or microphone is unplugged: when the same device \
            comes back, the recording goes on in the same file, the time it was away left as a gap (no frames; \
            silence for a microphone away up to 10 s), the sound after it in sync with the picture. Without it, an \
            unplugged device ends the recording (exit status 69).
            """)

    @Argument(help: "The file to write; its extension chooses the container.") var output: String
    @OptionGroup var camera: RecordCameraOptions
    @OptionGroup var microphone: MicrophoneOptions
    @OptionGroup var formatOptions: FormatOptions
    @Option(help: "Video codec.") var codec: VideoCodecChoice?
    @Option(help: "Video bit rate in bits per second, e.g. 6M (H.264 and HEVC).") var bitrate: Quantity?
    @Option(help: "Stop after this many seconds.") var duration: Double?
    @Option(name: .customLong("max-size"), help: "Stop before the file passes this many bytes, e.g. 500M.")
    var maxSize: Quantity?
    @Option(name: .customLong("min-free"), help: "Stop when the disk has fewer free bytes than this, e.g. 2G.")
    var minFree: Quantity?
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
        help: "Cut the movie into files once one holds this many bytes of media, e.g. 50M.")
    var segmentSize: Quantity?
    @Option(help: "With segments: keep the newest N files, or the newest that fit in SIZE (e.g. 2G); older are deleted.")
    var keep: KeepLimit?
    @Option(
        name: .customLong("pre-roll"), help: "Keep this many seconds in memory and write a file on each --trigger.")
    var preRoll: Double?
    @Option(name: .customLong("post-roll"), help: "With --pre-roll: seconds a file goes on after its trigger.")
    var postRoll: Double?
    @Option(help: "With --pre-roll: signal (SIGUSR2), stdin (a line), level:DBFS, or several, comma separated.")
    var trigger: String = "signal"
    @Option(name: .customLong("ring-size"), help: "With --pre-roll: the most bytes kept in memory (default 24Mi).")
    var ringSize: Quantity?
    @Option(help: "Orientation of the picture.") var orientation: OrientationChoice?
    @Flag(help: "Mirror the picture left to right.") var mirror = false
    @Option(name: .customLong("metadata"), parsing: .singleValue, help: "KEY=VALUE metadata (title, author, …); repeatable.")
    var metadata: [String] = []
    @Option(parsing: .unconditional, help: "Where it was recorded: LAT,LON in degrees.") var location: String?
    @Flag(help: "Replace an existing file (it survives a failed recording).") var overwrite = false
    @Flag(help: "Play file: sources again and again instead of stopping at their end.") var loop = false
    @Flag(help: "Keep recording through an unplugged camera or microphone; it goes on in the same file when back.")
    var reconnect = false
    // An option whose value may be left out (argument-parser's defaultAsFlag): `--screen` alone, or followed by
    // another option or by a value that is not a display (OUTPUT), is the main display.
    @Option(
        defaultAsFlag: ScreenChoice.main,
        help: ArgumentHelp(
            "Record display N (an index from 'avcapture devices'; 'main' or left out: the main one; 'window': a "
                + "window the Wayland desktop's screen sharing dialog offers).",
            valueName: "N"))
    var screen: ScreenChoice? = nil
    @Option(help: "With --screen: the area X,Y,W,H in display pixels.") var crop: String?
    @Option(help: "With --screen: the highest frame rate (default 30).") var fps: Double?
    @Flag(help: "With --screen: draw the cursor.") var cursor = false
    @Flag(help: "With --screen: highlight mouse clicks.") var clicks = false
    @OptionGroup var logging: LoggingOptions
    @OptionGroup var metrics: MetricsOptions

    static let movieExtensions = ["mov", "mp4", "m4v"]

    private var video: String? { camera.video }
    private var audio: String? { microphone.audio }

    func validate() throws {
        if camera.videos.count > 1 { try validateSeveralCameras() }
        if camera.isNone && microphone.isNone {
            throw ValidationError("--video none and --audio none leave nothing to record")
        }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be positive") }
        if fragmentInterval < 0 { throw ValidationError("--fragment-interval cannot be negative") }
        if let location, Self.parseLocation(location) == nil {
            throw ValidationError("--location '\(location)' is not LAT,LON in degrees, e.g. 48.8584,2.2945")
        }
        for entry in metadata where !entry.contains("=") {
            throw ValidationError("--metadata '\(entry)' is not KEY=VALUE")
        }
        if screen != nil {
            if video != nil && video?.lowercased() != "none" { throw ValidationError("--screen and --video conflict; give one") }
            if formatOptions.isGiven {
                throw ValidationError("--preset and --format are for cameras; use --crop and --fps")
            }
        } else if crop != nil || fps != nil || cursor || clicks {
            throw ValidationError("--crop, --fps, --cursor and --clicks need --screen")
        }
        if let crop, Self.parseCrop(crop) == nil {
            throw ValidationError("--crop '\(crop)' is not X,Y,WIDTH,HEIGHT in pixels, e.g. 0,0,1280,720")
        }
        if let fps, !(fps > 0) { throw ValidationError("--fps must be positive") }
        if let segmentDuration, !(segmentDuration > 0) { throw ValidationError("--segment-duration must be positive") }
        if let segmentSize, segmentSize.value <= 0 { throw ValidationError("--segment-size must be positive") }
        if keep != nil && !isSegmented { throw ValidationError("--keep needs --segment-duration or --segment-size") }
        if let preRoll, !(preRoll >= 0) { throw ValidationError("--pre-roll must be 0 or more seconds") }
        if let postRoll, !(postRoll > 0) { throw ValidationError("--post-roll must be positive") }
        if EventRecorder.Trigger.parse(trigger) == nil {
            throw ValidationError("--trigger '\(trigger)' is not signal, stdin or level:DBFS (e.g. level:-20)")
        }
        if let ringSize, ringSize.value <= 0 { throw ValidationError("--ring-size must be positive") }
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
        let cameraOnly = codec != nil || bitrate != nil || formatOptions.format != nil || orientation != nil || mirror
        if isAudioOnly && cameraOnly {
            throw ValidationError("--codec, --bitrate, --format, --orientation and --mirror need a camera")
        }
    }

    func run() throws {
        try reportingFailures {
            if camera.videos.count > 1 { return try recordSeveralCameras() }
            let isAudioOnly = video?.lowercased() == "none" && screen == nil
            let extensions = isAudioOnly ? AudioCommand.extensions : Self.movieExtensions
            // A segment pattern is checked as a path (its extension, its directory); segments never replace a file.
            let target = try OutputTarget(
                path: output, allowedExtensions: extensions, overwrite: overwrite || isSegmented)
            DeviceSelector.loopsMovieFiles = loop
            let screenInput = try screen.map(makeScreenInput)
            let cameraDevice = screenInput == nil ? try DeviceSelector.device(video, for: .video) : nil
            // A movie file's sound goes with its picture unless --audio names another microphone.
            let companion = audio == nil ? try DeviceSelector.companionMicrophone(of: cameraDevice, named: video) : nil
            let microphoneDevice = try companion ?? DeviceSelector.device(audio, for: .audio)
            let fileOutput: AVCaptureFileOutput =
                isAudioOnly ? AVCaptureAudioFileOutput()
                : preRoll != nil ? AVCapturePreEventFileOutput() : AVCaptureMovieFileOutput()
            let setup = try CaptureSetup(
                video: cameraDevice, audio: microphoneDevice, screen: screenInput, format: formatOptions.choice,
                outputs: [fileOutput])
            let exporter = try metrics.start(watching: setup.session) {
                $0.watchFreeDisk(at: target.url.deletingLastPathComponent())
            }
            defer { exporter?.stop() }
            if let events = fileOutput as? AVCapturePreEventFileOutput, let preRoll {
                events.preRollDuration = CMTime(seconds: preRoll, preferredTimescale: 1000)
                events.postRollDuration = postRoll.map { CMTime(seconds: $0, preferredTimescale: 1000) } ?? .invalid
                if let ringSize { events.maximumBufferedBytes = Int(ringSize.value) }
                events.videoBitRate = bitrate.map { Int($0.value) }
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

    /// Several --video: one movie per camera, named by %c; nothing that needs one camera or one file.
    private func validateSeveralCameras() throws {
        guard output.contains("%c") else {
            throw ValidationError("several --video write one movie each: name them with %c in OUTPUT, e.g. 'cam-%c.mov'")
        }
        if camera.videos.contains(where: { $0.lowercased() == "none" }) {
            throw ValidationError("--video none cannot be one of several cameras")
        }
        if screen != nil || preRoll != nil || isSegmented || reconnect || formatOptions.preset != nil {
            throw ValidationError(
                "several cameras record plain movies: no --screen, --pre-roll, segments, --reconnect or --preset")
        }
    }

    /// Several --video: one movie per camera from a multi-camera session.
    private func recordSeveralCameras() throws {
        DeviceSelector.loopsMovieFiles = loop
        let recorder = try MultiCameraRecorder(
            cameras: camera.videos, microphone: try DeviceSelector.device(audio, for: .audio), pattern: output,
            overwrite: overwrite, format: formatOptions.choice)
        try recorder.run { configure($0) }
    }

    /// The segment series --segment-duration, --segment-size and --keep ask for, or nil for one file.
    private func makeSegments() -> AVCaptureRecordingSegments? {
        guard isSegmented else { return nil }
        var keepCount = 0
        var keepBytes: Int64 = 0
        switch keep {
        case .files(let count)?: keepCount = count
        case .bytes(let bytes)?: keepBytes = bytes
        case nil: break
        }
        return AVCaptureRecordingSegments(
            pattern: URL(fileURLWithPath: output).path,
            duration: segmentDuration.map { CMTime(seconds: $0, preferredTimescale: 1000) } ?? .invalid,
            maxFileSize: segmentSize?.value ?? 0, keepCount: keepCount, keepBytes: keepBytes)
    }

    private func configure(_ output: AVCaptureFileOutput) {
        if let duration { output.maxRecordedDuration = CMTime(seconds: duration, preferredTimescale: 1000) }
        if let maxSize { output.maxRecordedFileSize = maxSize.value }
        if let minFree { output.minFreeDiskSpaceLimit = minFree.value }
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
            if let codec { settings[AVVideoCodecKey] = codec.codecType }
            if let bitrate {
                settings[AVVideoCompressionPropertiesKey] = [AVVideoAverageBitRateKey: Int(bitrate.value)]
            }
            movie.setOutputSettings(settings, for: connection)
        }
        if let angle = orientation?.rotationAngle, connection.isVideoRotationAngleSupported(angle) {
            connection.videoRotationAngle = angle
        }
        if mirror, connection.isVideoMirroringSupported {
            connection.automaticallyAdjustsVideoMirroring = false
            connection.isVideoMirrored = true
        }
    }

    /// The screen input `--screen N` names, set up as --crop, --fps, --cursor and --clicks say.
    private func makeScreenInput(_ choice: ScreenChoice) throws -> AVCaptureScreenInput {
        let displays: [AVCaptureScreenInput.Display]
        do {
            // The cursor setting first: through the ScreenCast portal it is the session's cursor mode.
            displays =
                choice == .window
                ? try AVCaptureScreenInput.windows(capturingCursor: cursor)
                : try AVCaptureScreenInput.displays(capturingCursor: cursor)
        } catch {
            throw ToolFailure(.unavailable, "cannot record the screen: \(CaptureSetup.describe(error))")
        }
        let index = if case .index(let index) = choice { index } else { 0 }
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

    static func parseCrop(_ text: String) -> (Int, Int, Int, Int)? {
        let parts = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 4, let x = parts[0], let y = parts[1], let width = parts[2], let height = parts[3],
            x >= 0, y >= 0, width > 0, height > 0
        else { return nil }
        return (x, y, width, height)
    }

    static func parseLocation(_ text: String) -> (Double, Double)? {
        let parts = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2, let latitude = parts[0], let longitude = parts[1], abs(latitude) <= 90,
            abs(longitude) <= 180
        else { return nil }
        return (latitude, longitude)
    }
}
