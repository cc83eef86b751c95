import ArgumentParser
import Foundation
import OpenAVCapture

/// `avcapture devices`: every camera and microphone, numbered; the defaults marked.
struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "List cameras and microphones (* marks the defaults).")

    @OptionGroup var logging: LoggingOptions
    @Flag(help: "Print JSON instead of a table.") var json = false

    struct Entry: Codable {
        var index: Int
        var name: String
        var uniqueID: String
        var type: String
        var position: String
        var media: [String]
        var isDefault: Bool
        var isConnected: Bool
        var isInUseByAnotherApplication: Bool
    }

    func run() throws {
        let defaults = [AVCaptureDevice.default(for: .video), AVCaptureDevice.default(for: .audio)]
            .compactMap { $0?.uniqueID }
        let entries = DeviceSelector.allDevices.enumerated().map { index, device in
            Entry(
                index: index, name: device.localizedName, uniqueID: device.uniqueID,
                type: Self.typeName(device.deviceType), position: Self.positionName(device.position),
                media: [AVMediaType.video, .audio].filter(device.hasMediaType).map { $0 == .video ? "video" : "audio" },
                isDefault: defaults.contains(device.uniqueID), isConnected: device.isConnected,
                isInUseByAnotherApplication: device.isInUseByAnotherApplication)
        }
        if json {
            print(try JSONOutput.string(entries))
            return
        }
        for entry in entries {
            let state = entry.isInUseByAnotherApplication ? "  (in use by another application)" : ""
            print(
                "\(entry.isDefault ? "*" : " ") \(entry.index)  \(entry.name)  [\(entry.uniqueID)]  "
                    + "\(entry.media.joined(separator: "+")), \(entry.type), \(entry.position)\(state)")
        }
    }

    static func typeName(_ type: AVCaptureDevice.DeviceType) -> String {
        switch type {
        case .builtInWideAngleCamera: "built-in camera"
        case .external: "external"
        case .microphone: "microphone"
        default: type.rawValue
        }
    }

    static func positionName(_ position: AVCaptureDevice.Position) -> String {
        switch position {
        case .back: "back"
        case .front: "front"
        default: "unspecified"
        }
    }
}

/// JSON as avcapture prints it: pretty, keys sorted, so output diffs well and tests can parse it.
enum JSONOutput {
    static func string(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
