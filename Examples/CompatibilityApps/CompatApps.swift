// compat-apps: small capture programs written as iOS and macOS apps write them, each behind a subcommand, run by
// CompatibilityAppsTests on the virtual devices and judged by ffprobe, ffmpeg, exiftool and known inputs.
//
// Only this file knows it is a command-line program: it reads the arguments, runs one app and turns its outcome
// into an exit status. The apps themselves use nothing but `import OpenAVCaptureShim`, as the compile-only
// listings in Tests/AppleCompatibility do.
import OpenAVCaptureShim

/// What an app could not do, said in a line for standard error.
struct AppFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

@main
enum CompatApps {
    /// Every program: its name, what it takes, and how it runs.
    static var programs: [(name: String, usage: String, run: ([String]) async throws -> Void)] {
        [
            ("qr-scanner", "OUT.json [CAMERA-UNIQUE-ID]", QRScannerViewController.main),
            ("movie-recorder", "OUT.mov SECONDS", MovieRecorderController.main),
            ("frame-grabber", "OUT-DIRECTORY COUNT", FrameGrabber.main),
            ("writer-recorder", "OUT.mp4 SECONDS", WriterRecorder.main),
            ("photo-taker", "OUT.jpg|OUT.heic", PhotoTaker.main),
            ("audio-recorder", "OUT.m4a SECONDS", AudioRecorder.main),
            ("format-picker", "OUT.mov WIDTH HEIGHT FPS", FormatPicker.main),
            ("asset-exporter", "IN-MOVIE OUT.mp4", AssetExporter.main),
            ("camera-switcher", "OUT.mov FRAMES-PER-CAMERA", CameraSwitcher.main),
            ("thumbnail-generator", "IN-MOVIE OUT-DIRECTORY COUNT", ThumbnailGenerator.main),
            ("pause-resume-recorder", "OUT.mov", PauseResumeRecorder.main),
            ("multicam-pip", "OUT.mov SECONDS", MultiCamPiPRecorder.main),
        ]
    }

    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let name = arguments.first, let program = programs.first(where: { $0.name == name }) else {
            let lines = programs.map { "  compat-apps \($0.name) \($0.usage)" }
            FileHandle.standardError.write(Data(("usage:\n" + lines.joined(separator: "\n") + "\n").utf8))
            exit(64)
        }
        do {
            try await program.run(Array(arguments.dropFirst()))
        } catch {
            FileHandle.standardError.write(Data("compat-apps \(name): \(error)\n".utf8))
            exit(1)
        }
    }
}

/// The command line's arguments read by position, with a message naming the one that is missing or wrong.
struct Arguments {
    let values: [String]
    init(_ values: [String]) { self.values = values }

    func url(_ index: Int, _ what: String) throws -> URL {
        guard index < values.count else { throw AppFailure("missing \(what)") }
        return URL(fileURLWithPath: values[index])
    }

    func integer(_ index: Int, _ what: String) throws -> Int {
        guard index < values.count, let value = Int(values[index]), value > 0 else {
            throw AppFailure("\(what) must be a whole number above 0")
        }
        return value
    }

    func optional(_ index: Int) -> String? { index < values.count ? values[index] : nil }
}

/// Writes a JSON report the way apps log what they found.
func writeJSON(_ object: Any, to url: URL) throws {
    let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
    try data.write(to: url)
}
