import ArgumentParser
import Foundation
import OpenAVCapture

/// `--video DEVICE`, the camera, for every command that takes one.
struct CameraOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Camera: an index, uniqueID, /dev/videoN, 'virtual', part of its name, file:PATH, or 'none'.",
            valueName: "device"))
    var video: String?

    /// Whether `--video none` asked for no camera.
    var isNone: Bool { video?.lowercased() == "none" }
}

/// `--audio DEVICE`, the microphone, for every command that takes one.
struct MicrophoneOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Microphone: an index, uniqueID, hw:CARD,DEV, plughw:CARD,DEV, an ALSA PCM name, 'virtual', part of its "
                + "name, file:PATH#audio, or 'none'.",
            valueName: "device"))
    var audio: String?

    /// Whether `--audio none` asked for no microphone.
    var isNone: Bool { audio?.lowercased() == "none" }
}

/// `--preset`, `--format` and `--pixel-format`: how a camera's format is chosen, for record and publish.
struct FormatOptions: ParsableArguments {
    @Option(help: "Session preset (sizes are the preset of that size).") var preset: PresetChoice?
    @Option(
        help: ArgumentHelp(
            "Camera format: N (an index from 'avcapture formats'), N@FPS, WIDTHxHEIGHT, WIDTHxHEIGHT@FPS, or any of "
                + "these with :PIXFMT, e.g. 1280x720@30:mjpeg.",
            valueName: "format"))
    var format: FormatSpecification?
    @Option(
        name: .customLong("pixel-format"),
        help: "With a size in --format: the camera's pixel format or codec (names or the FourCCs 'formats' prints).")
    var pixelFormat: PixelFormatChoice?

    func validate() throws {
        if preset != nil && (format != nil || pixelFormat != nil) {
            throw ValidationError("--preset and --format conflict; give one")
        }
        if pixelFormat != nil {
            guard case .size(_, _, _, let suffix)? = format else {
                throw ValidationError("--pixel-format needs a size in --format, e.g. --format 1280x720@30")
            }
            if let suffix, suffix != pixelFormat {
                throw ValidationError(
                    "--format says :\(suffix.rawValue), --pixel-format \(pixelFormat!.rawValue); give one")
            }
        }
    }

    /// Whether anything here was given.
    var isGiven: Bool { preset != nil || format != nil }

    /// What the options ask of the session, nil for the command's default.
    var choice: CaptureSetup.FormatChoice? {
        if let preset { return .preset(preset.preset) }
        switch format {
        case .index(let index, let rate)?:
            return .index(index, framesPerSecond: rate)
        case .size(let width, let height, let rate, let suffix)?:
            return .exact(
                width: width, height: height, framesPerSecond: rate, pixelFormat: suffix ?? pixelFormat)
        case nil:
            return nil
        }
    }
}

/// The device names of the system's own tools, mapped to OpenAVCapture's unique IDs: a V4L2 node's path
/// (`/dev/video2`, `/dev/v4l/by-id/…`, any symlink to one) and ALSA's `hw:X,Y`, `plughw:X,Y` and
/// `hw:CARD=ID,DEV=Y`. A V4L2 camera's `linuxDeviceName` is its node, and its unique ID udev's `by-id/…` (or
/// `by-path/…`) name when udev made one; an ALSA card's unique ID is `alsa:hw:CARD=ID,DEV=N`.
enum SystemDeviceNames {
    /// Whether `name` is a path: it names a V4L2 node, not a camera's name.
    static func isPath(_ name: String) -> Bool { name.hasPrefix("/") }

    /// The unique ID of the camera whose node is `path`, once both are resolved to the node itself: by the node
    /// each camera names (`linuxDeviceName`), else by its udev unique ID looked up under `deviceRoot` (`/dev`;
    /// tests give a directory of their own).
    static func camera(
        atPath path: String, among cameras: [(uniqueID: String, node: String?)], deviceRoot: String = "/dev"
    ) -> String? {
        func resolved(_ path: String) -> String { URL(fileURLWithPath: path).resolvingSymlinksInPath().path }
        let node = resolved(path)
        if let named = cameras.first(where: { $0.node.map(resolved) == node }) { return named.uniqueID }
        return cameras.first { camera in
            guard camera.uniqueID.hasPrefix("by-id/") || camera.uniqueID.hasPrefix("by-path/") else { return false }
            let link = "\(deviceRoot)/v4l/\(camera.uniqueID)"
            return FileManager.default.fileExists(atPath: link) && resolved(link) == node
        }?.uniqueID
    }

    /// `alsa:hw:CARD=ID,DEV=Y` for `hw:X,Y`, `plughw:X,Y`, `hw:X` (device 0) or their `CARD=…,DEV=…` forms, X a card
    /// index (looked up in `cardRoot`, `/proc/asound`: `card1/id`) or a card ID; nil for other names.
    static func microphoneID(for name: String, cardRoot: String = "/proc/asound") -> String? {
        guard
            let match = name.wholeMatch(
                of: /(?:plug)?hw:(?:CARD=)?([A-Za-z0-9_-]+)(?:,(?:DEV=)?(\d+))?/)
        else { return nil }
        var card = String(match.1)
        if let index = Int(card) {
            guard
                let id = try? String(contentsOfFile: "\(cardRoot)/card\(index)/id", encoding: .utf8)
                    .trimmingCharacters(in: .whitespacesAndNewlines), !id.isEmpty
            else { return nil }
            card = id
        }
        return "alsa:hw:CARD=\(card),DEV=\(match.2.map(String.init) ?? "0")"
    }
}
