// avcapture: the everyday capture jobs (list devices, record, take a photo) on OpenAVCapture's public API.

import ArgumentParser
import Foundation
import OpenAVCapture

@main
struct AVCaptureTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "avcapture",
        abstract: "Capture video, audio and stills from cameras and microphones.",
        discussion: """
            DEVICE is an index from 'avcapture devices', a uniqueID, a V4L2 node (/dev/video2, /dev/v4l/by-id/…), \
            an ALSA name (hw:1,0, plughw:1,0, or a PCM such as pulse), 'virtual' (the built-in virtual camera or \
            microphone), or a case-insensitive part of the name. OPENAV_DEVICES=all|real|virtual chooses which \
            devices exist.

            \(ExitStatus.helpText)
            """,
        version: toolVersion,
        subcommands: [
            DevicesCommand.self, FormatsCommand.self, RecordCommand.self, PhotoCommand.self, AudioCommand.self,
            FramesCommand.self, LevelsCommand.self, ProbeCommand.self, ExportCommand.self, PlayCommand.self, PreviewCommand.self,
            ServeCommand.self,
            PublishCommand.self,
        ])

    /// ArgumentParser's entry point, except that a usage error is one line on stderr (what is wrong and where to
    /// look), not the message followed by the whole usage text.
    static func main() {
        // Memory before TLB hits, as the library's documentation explains: no transparent huge pages for libx264's
        // frame buffers (docs/performance.md: about 10 MB less peak resident memory recording 1080p30 H.264, the
        // same CPU). A kernel without them leaves things as they were.
        OpenAVCaptureProcess.disableTransparentHugePages()
        // Freed frames, packets and fragments go back to the system instead of piling up in glibc's per-thread
        // arenas (docs/performance.md: 3–6 MiB less peak anonymous memory in 1080p30 recordings).
        OpenAVCaptureProcess.releaseFreedMemoryPromptly()
        let status: Int32
        LoggingOptions.applyFFmpegLogLevel(arguments: Array(CommandLine.arguments.dropFirst()))
        do {
            var command = try parseAsRoot(Array(CommandLine.arguments.dropFirst()))
            try command.run()
            status = 0
        } catch {
            let code = exitCode(for: error)
            let message = message(for: error)
            if code == .success {
                // --help, --version and completion scripts arrive as "errors" whose message is the output.
                print(fullMessage(for: error))
            } else if !message.isEmpty {
                Terminal.error("avcapture: \(message) (see avcapture --help)")
            }
            status = code.rawValue
        }
        Foundation.exit(status)
    }
}
