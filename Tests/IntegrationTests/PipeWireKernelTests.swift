// PipeWire over the kernel's own devices, in the VM of `make test-kernel`: a headless session (dbus, pipewire,
// wireplumber) whose WirePlumber finds vivid and the USB webcam emulator's uvcvideo camera through PipeWire's V4L2
// plugin, and the ALSA cards through its ALSA plugin. avcapture, as a user runs it, lists each device once (the
// node, never also the raw node or card it stands for) and records from vivid's node; ffprobe and ffmpeg read the
// file back.

import Foundation
import OpenAVCapture
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Whether the VM's PipeWire session can run: vivid loaded, the daemons in the image, real devices listed.
enum PipeWireInTheVM {
    /// Why the suite cannot run here; nil when it can.
    static let unavailableReason: String? = {
        if access("/sys/module/vivid", F_OK) != 0 {
            return "vivid is not loaded: these run in the VM (`make test-kernel`)"
        }
        if let reason = PipeWireTestSession.daemonsUnavailableReason { return "\(reason), in the VM image" }
        if ProcessInfo.processInfo.environment["OPENAV_DEVICES"] != "all" {
            return "OPENAV_DEVICES is not `all`, so discovery lists no real devices"
        }
        if toolPath == nil { return "the avcapture binary is not built beside the tests" }
        return nil
    }()

    static var skipReason: Comment { Comment(rawValue: unavailableReason ?? "") }
}

@Suite(.serialized, .enabled(if: PipeWireInTheVM.unavailableReason == nil, PipeWireInTheVM.skipReason))
struct PipeWireKernelTests {
    /// One entry of `avcapture devices --json`.
    struct Listed: CustomStringConvertible {
        var name: String
        var uniqueID: String
        var isVideo: Bool
        var description: String { "\(isVideo ? "video" : "audio") \(name) [\(uniqueID)]" }
    }

    /// What `avcapture devices --json` lists, run in `environment`.
    static func listing(in directory: URL, environment: [String: String]) throws -> [Listed] {
        let result = try avcapture(["devices", "--json"], in: directory, devices: "all", environment: environment)
        try #require(result.status == 0, "\(result.error)")
        let entries = try #require(try JSONSerialization.jsonObject(with: result.output) as? [[String: Any]])
        return entries.map { entry in
            Listed(
                name: entry["name"] as? String ?? "", uniqueID: entry["uniqueID"] as? String ?? "",
                isVideo: (entry["media"] as? [String])?.contains("video") == true)
        }
    }

    /// The video nodes (`/dev/videoN`) whose kernel driver is `driver` (`vivid`, `uvcvideo`), from sysfs.
    static func videoNodes(ofDriver driver: String) -> [String] {
        let nodes = (try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/video4linux")) ?? []
        return nodes.filter { node in
            let link = "/sys/class/video4linux/\(node)/device/driver"
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) ?? ""
            return node.hasPrefix("video") && URL(fileURLWithPath: target).lastPathComponent == driver
        }.map { "/dev/\($0)" }.sorted()
    }

    @Test("vivid and the USB webcam through PipeWire's V4L2 plugin: each device listed once, vivid recorded")
    func theKernelsDevicesThroughPipeWire() throws {
        let withWebcam = USBWebcam.unavailableReason == nil
        if withWebcam { _ = try USBWebcam.plug() } else { print("PipeWire in the VM: \(USBWebcam.unavailableReason!)") }
        defer { if withWebcam { USBWebcam.unplug() } }
        let directory = try scratchURL("pipewire-kernel", suite: "pipewire-kernel")
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)

        // Without a daemon: the raw devices, as the other kernel suites see them.
        var raw = ProcessInfo.processInfo.environment
        raw["OPENAV_BACKEND"] = "raw"
        let rawListing = try Self.listing(in: directory, environment: raw)
        let rawVivid = try #require(rawListing.first { $0.isVideo && $0.uniqueID.contains("vivid") }, "\(rawListing)")

        let session = try PipeWireTestSession.start()
        defer { session.stop() }
        // WirePlumber's V4L2 monitor enumerates /dev/video* through libudev (sysfs: the VM runs no udevd) and makes
        // a Video/Source node per capture device, named after the device's card.
        try waitUntil("vivid's node", timeout: 30) {
            session.pwDump().contains("\"media.class\": \"Video/Source\"")
                && (!withWebcam
                    || session.pwDump().components(separatedBy: "\"media.class\": \"Video/Source\"").count > 2)
        }
        let listing = try Self.listing(in: directory, environment: session.environment)
        print("PipeWire in the VM, raw: \(rawListing)\nPipeWire in the VM, with the daemon: \(listing)")

        // Each camera once, through its node (`pipewire:v4l2:/dev/videoN`, N from sysfs), the raw entry hidden,
        // named as the raw backend names it.
        let cameras = listing.filter(\.isVideo)
        let vividNodes = Self.videoNodes(ofDriver: "vivid")
        let vivid = cameras.filter { camera in vividNodes.contains { camera.uniqueID == "pipewire:v4l2:\($0)" } }
        #expect(vivid.count == 1, "vivid (\(vividNodes)) through its node, once: \(cameras)")
        #expect(vivid.first?.name == rawVivid.name, "named as the raw backend names it")
        #expect(!listing.contains { $0.uniqueID == rawVivid.uniqueID }, "the raw node hidden behind its PipeWire node")
        if withWebcam {
            let webcamNodes = Self.videoNodes(ofDriver: "uvcvideo")
            let webcams = cameras.filter { camera in webcamNodes.contains { camera.uniqueID == "pipewire:v4l2:\($0)" } }
            #expect(webcams.count == 1, "the webcam through its node, once: \(cameras)")
            #expect(webcams.first?.name.contains(USBWebcam.productName) == true)
            #expect(!cameras.contains { $0.uniqueID.hasPrefix("v4l2:") && $0.name.contains(USBWebcam.productName) })
            // WirePlumber made no ALSA nodes in the VM (see the closing note), so the USB microphone stays the
            // raw ALSA backend's: one entry, as without the daemon.
            let microphones = listing.filter { !$0.isVideo && $0.name.contains(USBWebcam.productName) }
            #expect(microphones.count == 1, "the USB microphone is one entry: \(listing.filter { !$0.isVideo })")
        }

        // Recorded from vivid's node by the command line, as a user would.
        let vividID = try #require(vivid.first).uniqueID
        let result = try avcapture(
            ["record", "vivid.mov", "--video", vividID, "--audio", "none", "--duration", "2"], in: directory,
            devices: "all", environment: session.environment)
        #expect(result.status == 0, "\(result.error)")
        let movie = directory.appendingPathComponent("vivid.mov")
        let report = try FFprobeReport(movie)
        let frames = Int(FFprobeReport.number(report.stream("video")?["nb_read_frames"]) ?? 0)
        // What the node delivered: the frames in the file, and those the recording left out because its encoder
        // was behind, which `record` counts on its "dropped frames:" line. The debug build's conversion and libx264
        // on the VM's emulated CPU keep up with vivid's 30 fps or not depending on the host's load (4 frames of 2 s
        // written in one CI run); the node's delivery does not depend on it.
        let droppedLine = result.outputText.split(separator: "\n").first { $0.hasPrefix("dropped frames:") }
        let dropped =
            droppedLine.map { line in
                line.dropFirst("dropped frames:".count).split(separator: ",").compactMap { reason in
                    Int(reason.split(separator: " ").first ?? "")
                }.reduce(0, +)
            } ?? 0
        let size = "\(report.stream("video")?["width"] ?? "?")x\(report.stream("video")?["height"] ?? "?")"
        print("PipeWire in the VM: vivid's node recorded, \(frames) frames written, \(dropped) dropped, \(size)")
        #expect(frames >= 2, "a movie of vivid's frames, not a single picture")
        #expect(frames + dropped >= 10, "vivid's node delivered \(frames) + \(dropped) frames in 2 s")
        #expect(try ffmpegDecodeErrors(movie).isEmpty)
    }
}
