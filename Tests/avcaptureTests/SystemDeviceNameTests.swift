// The device names of v4l2-ctl, ffmpeg -f v4l2 and arecord (/dev/video2, its udev symlinks, hw:1,0, plughw:1,0)
// mapped to OpenAVCapture's unique IDs, in a directory laid out as udev lays out /dev and as /proc/asound is.

import Foundation
import Testing

@testable import avcapture

@Suite("avcapture's system device names")
struct SystemDeviceNameTests {
    /// A /dev with two nodes and udev's links to them, and a /proc/asound with two cards, under a new directory.
    private func makeRoots() throws -> (dev: String, asound: String) {
        let root = FileManager.default.temporaryDirectory
            .appendingPathComponent("avcapture-device-names-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        let files = FileManager.default
        for directory in ["dev/v4l/by-id", "dev/v4l/by-path", "asound/card0", "asound/card1"] {
            try files.createDirectory(atPath: "\(root)/\(directory)", withIntermediateDirectories: true)
        }
        for node in ["video0", "video2"] { _ = files.createFile(atPath: "\(root)/dev/\(node)", contents: nil) }
        // udev's links are relative, as on a real system.
        try files.createSymbolicLink(
            atPath: "\(root)/dev/v4l/by-id/usb-Acme_Webcam-video-index0", withDestinationPath: "../../video2")
        try files.createSymbolicLink(
            atPath: "\(root)/dev/v4l/by-path/platform-vivid.0-video-index0", withDestinationPath: "../../video0")
        try "PCH\n".write(toFile: "\(root)/asound/card0/id", atomically: true, encoding: .utf8)
        try "Webcam\n".write(toFile: "\(root)/asound/card1/id", atomically: true, encoding: .utf8)
        return ("\(root)/dev", "\(root)/asound")
    }

    @Test("A node's path, or any link to it, names the camera whose udev name leads there")
    func cameraPaths() throws {
        let roots = try makeRoots()
        // Nodes left out: found by the udev names alone, as for a device that does not name its node.
        let cameras: [(uniqueID: String, node: String?)] = [
            ("virtual:back-camera", nil), ("by-path/platform-vivid.0-video-index0", nil),
            ("by-id/usb-Acme_Webcam-video-index0", nil),
        ]
        func camera(_ path: String) -> String? {
            SystemDeviceNames.camera(atPath: path, among: cameras, deviceRoot: roots.dev)
        }
        #expect(camera("\(roots.dev)/video2") == "by-id/usb-Acme_Webcam-video-index0")
        #expect(camera("\(roots.dev)/v4l/by-id/usb-Acme_Webcam-video-index0") == "by-id/usb-Acme_Webcam-video-index0")
        #expect(camera("\(roots.dev)/video0") == "by-path/platform-vivid.0-video-index0")
        #expect(camera("\(roots.dev)/video7") == nil)
        #expect(SystemDeviceNames.isPath("/dev/video2") && !SystemDeviceNames.isPath("video2"))
    }

    @Test("Without udev (a bare VM, a container) the camera's own node name finds it, through links too")
    func cameraNodes() throws {
        let roots = try makeRoots()
        let cameras: [(uniqueID: String, node: String?)] = [
            ("v4l2:platform:vivid-000:0", "\(roots.dev)/video0"), ("v4l2:usb-0000:00:14.0-1:0", "\(roots.dev)/video2"),
        ]
        func camera(_ path: String) -> String? {
            SystemDeviceNames.camera(atPath: path, among: cameras, deviceRoot: roots.dev + "/none")
        }
        #expect(camera("\(roots.dev)/video2") == "v4l2:usb-0000:00:14.0-1:0")
        #expect(camera("\(roots.dev)/v4l/by-path/platform-vivid.0-video-index0") == "v4l2:platform:vivid-000:0")
        #expect(camera("\(roots.dev)/video9") == nil)
    }

    @Test("hw:X,Y and plughw:X,Y by card index or ID become the card's unique ID; other names are not cards")
    func alsaNames() throws {
        let roots = try makeRoots()
        func microphone(_ name: String) -> String? { SystemDeviceNames.microphoneID(for: name, cardRoot: roots.asound) }
        #expect(microphone("hw:1,0") == "alsa:hw:CARD=Webcam,DEV=0")
        #expect(microphone("plughw:1,0") == "alsa:hw:CARD=Webcam,DEV=0")
        #expect(microphone("hw:0") == "alsa:hw:CARD=PCH,DEV=0")
        #expect(microphone("hw:Webcam,2") == "alsa:hw:CARD=Webcam,DEV=2")
        #expect(microphone("plughw:CARD=PCH,DEV=1") == "alsa:hw:CARD=PCH,DEV=1")
        #expect(microphone("hw:5,0") == nil)
        #expect(microphone("pulse") == nil)
        #expect(microphone("default") == nil)
    }
}
