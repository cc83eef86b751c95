// avcapture: the everyday capture jobs (list devices, record, take a photo) on OpenAVCapture's public API.

import ArgumentParser
import OpenAVCapture

@main
struct AVCaptureTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "avcapture",
        abstract: "Capture video, audio and stills from cameras and microphones.",
        discussion: """
            DEVICE is an index from 'avcapture devices', a uniqueID, 'virtual' (the built-in virtual camera or \
            microphone), or a case-insensitive part of the name. OPENAV_DEVICES=all|real|virtual chooses which \
            devices exist.

            \(ExitStatus.helpText)
            """,
        subcommands: [
            DevicesCommand.self, FormatsCommand.self, RecordCommand.self, PhotoCommand.self, AudioCommand.self,
            FramesCommand.self, LevelsCommand.self, ProbeCommand.self,
        ])
}
