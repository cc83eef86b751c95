import Foundation
import OpenAVCapture

/// Finds the device a command line names: an index from `avcapture devices`, a uniqueID (`file:PATH` plays a
/// movie file as a camera, and as a microphone for --audio), a V4L2 node's path (`/dev/video2`, a udev symlink),
/// an ALSA name (`hw:1,0`, `plughw:1,0`, a PCM such as `pulse`), `virtual`, or a case-insensitive fragment of the
/// name; `none` for no device of that kind.
struct DeviceSelector {
    /// Whether movie files named with `file:` start again at their end (`record --loop`); set before selecting.
    nonisolated(unsafe) static var loopsMovieFiles = false

    /// The camera and microphone of each movie file named so far, by path as given: `--video file:X` and
    /// `--audio file:X` are the two tracks of one pair, so they play in sync. Only the main thread selects devices.
    nonisolated(unsafe) private static var movieFiles: [String: (camera: AVCaptureDevice?, microphone: AVCaptureDevice?)] = [:]

    /// The devices of the movie file at `path` (as given: relative to the working directory), opened once.
    /// Throws 66 with the OS's reason for a file that cannot be opened, 65 for one that is not media that plays.
    static func movieFile(_ path: String) throws -> (camera: AVCaptureDevice?, microphone: AVCaptureDevice?) {
        if let known = movieFiles[path] { return known }
        do {
            let devices = try AVCaptureDevice.movieFileDevices(url: URL(fileURLWithPath: path), loop: loopsMovieFiles)
            movieFiles[path] = devices
            return devices
        } catch let error as AVError {
            throw ToolFailure(.dataError, CaptureSetup.describe(error))
        } catch {
            throw ToolFailure(.noInput, (error as NSError).localizedDescription)
        }
    }

    /// The microphone that goes with a camera when --audio is not given: a movie file's own sound, when the camera
    /// is a movie file that has one; nil otherwise (the default microphone then).
    static func companionMicrophone(of camera: AVCaptureDevice?, named specification: String?) throws -> AVCaptureDevice? {
        guard camera != nil, let specification, specification.hasPrefix("file:") else { return nil }
        return try movieFile(String(specification.dropFirst("file:".count))).microphone
    }

    /// Every device, cameras first, in the order `avcapture devices` numbers them.
    static var allDevices: [AVCaptureDevice] {
        AVCaptureDevice.DiscoverySession(
            deviceTypes: [.builtInWideAngleCamera, .external, .microphone], mediaType: nil, position: .unspecified
        ).devices.sorted { rank($0) < rank($1) }
    }

    private static func rank(_ device: AVCaptureDevice) -> Int { device.hasMediaType(.video) ? 0 : 1 }

    /// The device `specification` names for `mediaType`; the default device when it is nil; nil for `none`.
    static func device(_ specification: String?, for mediaType: AVMediaType) throws -> AVCaptureDevice? {
        let kind = mediaType == .video ? "camera" : "microphone"
        guard let specification else {
            guard let device = AVCaptureDevice.default(for: mediaType) else {
                throw ToolFailure(.unavailable, "no \(kind) found; \(available(for: mediaType))")
            }
            return device
        }
        if specification.lowercased() == "none" { return nil }
        let all = allDevices
        let candidates = all.filter { $0.hasMediaType(mediaType) }
        if let index = Int(specification) {
            guard all.indices.contains(index), all[index].hasMediaType(mediaType) else {
                throw ToolFailure(.unavailable, "no \(kind) has index \(index); \(available(for: mediaType))")
            }
            return all[index]
        }
        // A movie file played as a device: `file:PATH` is its camera, and its microphone for --audio, as is
        // `file:PATH#audio`. PATH as given, relative to the working directory.
        if specification.hasPrefix("file:") {
            var path = String(specification.dropFirst("file:".count))
            if path.hasSuffix("#audio") { path.removeLast("#audio".count) }
            let devices = try movieFile(path)
            guard let device = mediaType == .video ? devices.camera : devices.microphone else {
                throw ToolFailure(
                    .unavailable, "\(path) has no \(mediaType == .video ? "video" : "audio") track that can be played")
            }
            return device
        }
        // The system's own names, as v4l2-ctl, ffmpeg -f v4l2 and arecord take them.
        if SystemDeviceNames.isPath(specification) {
            guard mediaType == .video,
                let uniqueID = SystemDeviceNames.camera(
                    atPath: specification, among: candidates.map { ($0.uniqueID, $0.linuxDeviceName) }),
                let device = candidates.first(where: { $0.uniqueID == uniqueID })
            else {
                let reason =
                    mediaType != .video ? "a path names a camera (a V4L2 node), not a microphone"
                    : FileManager.default.fileExists(atPath: specification)
                        ? "no camera is \(specification)" : "\(specification) does not exist"
                throw ToolFailure(.unavailable, "\(reason); \(available(for: mediaType))")
            }
            return device
        }
        if specification.contains(/^(plug)?hw:/) {
            guard mediaType == .audio,
                let uniqueID = SystemDeviceNames.microphoneID(for: specification),
                let device = candidates.first(where: { $0.uniqueID == uniqueID })
            else {
                throw ToolFailure(.unavailable, "no \(kind) is \(specification); \(available(for: mediaType))")
            }
            return device
        }
        if let device = candidates.first(where: { [specification, "alsa:" + specification].contains($0.uniqueID) })
            ?? AVCaptureDevice(uniqueID: specification).flatMap({ $0.hasMediaType(mediaType) ? $0 : nil })
        {
            return device
        }
        if specification.lowercased() == "virtual",
            let device = candidates.first(where: { $0.uniqueID.hasPrefix("virtual:") })
        {
            return device
        }
        let matches = candidates.filter { $0.localizedName.lowercased().contains(specification.lowercased()) }
        switch matches.count {
        case 1: return matches[0]
        case 0: throw ToolFailure(.unavailable, "no \(kind) matches '\(specification)'; \(available(for: mediaType))")
        default:
            throw ToolFailure(
                .usage,
                "'\(specification)' matches \(matches.count) \(kind)s ("
                    + matches.map { device in
                        "\(all.firstIndex { $0 === device }.map(String.init) ?? "?") \(device.localizedName) [\(device.uniqueID)]"
                    }.joined(separator: ", ") + "); name one by index or uniqueID")
        }
    }

    /// "available cameras: 0 Virtual Back Camera [virtual:back-camera], …" for error lines.
    static func available(for mediaType: AVMediaType) -> String {
        let all = allDevices
        let listed = all.indices.filter { all[$0].hasMediaType(mediaType) }.map {
            "\($0) \(all[$0].localizedName) [\(all[$0].uniqueID)]"
        }
        let kind = mediaType == .video ? "cameras" : "microphones"
        return listed.isEmpty ? "there are no \(kind)" : "available \(kind): " + listed.joined(separator: ", ")
    }
}
