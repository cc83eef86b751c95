// avcapture: the everyday capture jobs (list devices, record, take a photo) on OpenAVCapture's public API.

import ArgumentParser
import OpenAVCapture

@main
struct AVCaptureTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "avcapture",
        abstract: "Capture video, audio and stills from cameras and microphones.",
        subcommands: [DevicesCommand.self])
}

/// `avcapture devices`: every camera and microphone OpenAVCapture sees.
struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "devices", abstract: "List cameras and microphones.")

    func run() throws {
        let defaultVideo = AVCaptureDevice.default(for: .video)?.uniqueID
        let defaultAudio = AVCaptureDevice.default(for: .audio)?.uniqueID
        for device in AVCaptureDevice.DiscoverySession(
            deviceTypes: [.builtInWideAngleCamera, .external, .microphone], mediaType: nil, position: .unspecified
        ).devices {
            let isDefault = device.uniqueID == defaultVideo || device.uniqueID == defaultAudio
            print("\(isDefault ? "*" : " ") \(device.localizedName)  [\(device.uniqueID)]")
        }
    }
}
