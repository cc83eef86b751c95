import ArgumentParser
import Foundation
import OpenAVCapture

/// `avcapture devices`: every camera and microphone, numbered; the defaults marked.
struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract:
            "List cameras and microphones (* marks the defaults), and the screens for record --screen.",
        discussion: """
            --json prints an array of objects, cameras, then microphones, then screens, each with: index (what \
            DEVICE takes; screens count from 0 on their own, as --screen N takes them), name, uniqueID, \
            linuxDeviceName (/dev/videoN or the ALSA PCM, when the device has one), type \
            ("built-in camera", "external", "microphone", "screen"), position ("back", "front", "unspecified"), \
            media (["video"], ["audio"] or both), isDefault, isConnected, isInUseByAnotherApplication. Nothing \
            found prints [] (a note on stderr; exit status 0).
            """)

    @OptionGroup var logging: LoggingOptions
    @Flag(help: "Print JSON instead of a table.") var json = false

    struct Entry: Codable {
        var index: Int
        var name: String
        var uniqueID: String
        /// The node or ALSA PCM Linux's tools use (`/dev/video2`, `plughw:CARD=…,DEV=0`); absent for others.
        var linuxDeviceName: String?
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
                linuxDeviceName: device.linuxDeviceName,
                type: Self.typeName(device.deviceType), position: Self.positionName(device.position),
                media: [AVMediaType.video, .audio].filter(device.hasMediaType).map { $0 == .video ? "video" : "audio" },
                isDefault: defaults.contains(device.uniqueID), isConnected: device.isConnected,
                isInUseByAnotherApplication: device.isInUseByAnotherApplication)
        }
        let screens = Self.screens()
        let screenEntries = screens.enumerated().map { index, display in
            Entry(
                index: index, name: "Screen \(display.name) \(Int(display.bounds.width))x\(Int(display.bounds.height))",
                uniqueID: "screen:\(display.displayID)", type: "screen", position: "unspecified", media: ["video"],
                isDefault: display.isMain, isConnected: true, isInUseByAnotherApplication: false)
        }
        if entries.isEmpty && screenEntries.isEmpty {
            // Said on stderr, so standard output stays what a script expects (nothing, or `[]`), and exit 0: an
            // empty list is an answer, not a failure.
            Terminal.error("avcapture: no cameras, microphones or screens found. \(Self.emptyHint)")
        }
        if json {
            print(try JSONOutput.string(entries + screenEntries))
            return
        }
        for entry in entries {
            let state = entry.isInUseByAnotherApplication ? "  (in use by another application)" : ""
            let system = entry.linuxDeviceName.map { " \($0)" } ?? ""
            print(
                "\(entry.isDefault ? "*" : " ") \(entry.index)  \(entry.name)  [\(entry.uniqueID)]\(system)  "
                    + "\(entry.media.joined(separator: "+")), \(entry.type), \(entry.position)\(state)")
        }
        if !screens.isEmpty { print("Screens (record --screen N):") }
        for (index, display) in screens.enumerated() {
            let bounds = display.bounds
            print(
                "\(display.isMain ? "*" : " ") \(index)  \(display.name)  \(Int(bounds.width))x\(Int(bounds.height))"
                    + " at +\(Int(bounds.minX))+\(Int(bounds.minY))  [display \(display.displayID)]")
        }
    }

    /// Where to look when nothing is found: which devices OPENAV_DEVICES lets in, and the permissions a camera
    /// and a sound card need.
    static var emptyHint: String {
        let choice = ProcessInfo.processInfo.environment["OPENAV_DEVICES"]?.lowercased()
        let scope =
            choice == "virtual"
            ? "OPENAV_DEVICES=virtual lists only the virtual devices."
            : "OPENAV_DEVICES=virtual gives virtual ones to try things with."
        return scope + " Cameras are /dev/video* (V4L2) and need the video group, microphones ALSA cards"
            + " (/dev/snd) and the audio group: sudo usermod -aG video,audio $USER, then log in again."
    }

    /// The screens of the session: the Wayland compositor's outputs when WAYLAND_DISPLAY is set, else the X
    /// server's displays; none when OPENAV_DEVICES=virtual (screens are real devices) or there is no server (said
    /// on stderr when DISPLAY or WAYLAND_DISPLAY names one that cannot be used).
    static func screens() -> [AVCaptureScreenInput.Display] {
        let environment = ProcessInfo.processInfo.environment
        guard environment["OPENAV_DEVICES"]?.lowercased() != "virtual" else { return [] }
        do {
            return try AVCaptureScreenInput.displays()
        } catch {
            if environment["DISPLAY"]?.isEmpty == false || environment["WAYLAND_DISPLAY"]?.isEmpty == false {
                Terminal.error("avcapture: no screens: \(CaptureSetup.describe(error))")
            }
            return []
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
