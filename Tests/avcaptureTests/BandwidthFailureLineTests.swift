// What `avcapture record` prints when the USB bus refuses the camera's stream: the failure CaptureSetup.start()
// throws (the step Recorder takes before recording) from a simulated camera whose STREAMON fails with ENOSPC.

import CaptureDrivers
import Foundation
import OpenAVCapture
import TestSupport
import Testing

@testable import avcapture

#if canImport(Glibc)
    import Glibc
#endif

@Suite("avcapture's line for a full USB bus")
struct BandwidthFailureLineTests {
    @Test func noSpaceAtStreamOnIsOneLineThatSaysWhatToDo() throws {
        let sysfs = try FakeUSBSysfs()
        try sysfs.plug(.c920(), port: "3-2", speed: "480", nodes: ["video0", "video1"])
        try sysfs.plug(.c920(product: "Stereo Camera Right"), port: "3-4", speed: "480", nodes: ["video2", "video3"])
        let camera = try SimulatedUSBCamera(node: "video0", sysfs: sysfs)
        camera.kernel.fail("STREAMON", with: ENOSPC)
        let setup = try CaptureSetup(
            video: camera.device, audio: nil,
            format: .exact(width: 640, height: 480, framesPerSecond: 30, pixelFormat: .yuyv),
            outputs: [AVCaptureVideoDataOutput()])
        do {
            try setup.start()
            Issue.record("the session started on a full bus")
        } catch let failure as ToolFailure {
            #expect(failure.status == .unavailable)
            let line = failure.message
            #expect(
                line.hasPrefix(
                    "capture did not start: \(camera.device.localizedName) cannot stream this format: not enough USB "
                        + "bandwidth. USB bus 3 (USB 2.0 high speed, 480 Mb/s) has too little"), "\(line)")
            for expected in [
                "USB bus 3 (USB 2.0 high speed, 480 Mb/s)", "Stereo Camera Right (/dev/video2, /dev/video3, port 3-4)",
                "MJPEG instead of YUYV", "lsusb -t",
            ] {
                #expect(line.contains(expected), "\(expected) missing from: \(line)")
            }
            #expect(!line.contains("\n"))
        }
    }
}
