import ArgumentParser
import Foundation
import OpenAVCapture

/// `avcapture audio OUTPUT`: sound alone, into an audio file whose extension picks the type.
struct AudioCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audio", abstract: "Record audio to .m4a (AAC), .wav, .aiff, .aifc or .caf.",
        discussion: "Ctrl-C or SIGTERM stops the recording cleanly; SIGUSR1 pauses and resumes it.")

    @OptionGroup var logging: LoggingOptions
    @Argument(help: "The file to write.") var output: String
    @OptionGroup var microphone: MicrophoneOptions
    @Option(help: "Stop after this many seconds.") var duration: Double?
    @Option(name: .customLong("metadata"), parsing: .singleValue, help: "KEY=VALUE metadata; repeatable.")
    var metadata: [String] = []
    @Flag(help: "Replace an existing file (it survives a failed recording).") var overwrite = false

    static let extensions = ["m4a", "wav", "aiff", "aif", "aifc", "caf"]

    static func fileType(for url: URL) -> AVFileType {
        switch url.pathExtension.lowercased() {
        case "wav": .wav
        case "aiff", "aif": .aiff
        case "aifc": .aifc
        case "caf": .caf
        default: .m4a
        }
    }

    func validate() throws {
        if let duration, !(duration > 0) { throw ValidationError("--duration must be positive") }
        if microphone.isNone { throw ValidationError("--audio none leaves nothing to record") }
    }

    func run() throws {
        let device = microphone.audio.map { ["--audio", $0] } ?? []
        var record = try RecordCommand.parse([output, "--video", "none"] + device)
        record.duration = duration
        record.metadata = metadata
        record.overwrite = overwrite
        try record.run()
    }
}
