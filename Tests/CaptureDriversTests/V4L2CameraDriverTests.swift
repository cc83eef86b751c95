import CaptureDrivers
import Foundation
import OpenCoreVideo
import Testing

/// Discovery from sysfs and hot-plug, with a fake sysfs folder and the mock kernel.
@Suite struct V4L2CameraDriverTests {
    /// A stand-in for /sys/class/video4linux: one folder per node, with its `index`.
    final class FakeSysfs {
        let root: String

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("v4l2-sysfs-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(atPath: root) }

        func add(_ name: String, index: Int = 0) throws {
            try FileManager.default.createDirectory(atPath: "\(root)/\(name)", withIntermediateDirectories: true)
            try "\(index)\n".write(toFile: "\(root)/\(name)/index", atomically: true, encoding: .utf8)
        }

        func remove(_ name: String) throws {
            try FileManager.default.removeItem(atPath: "\(root)/\(name)")
        }
    }

    func kernel() -> SimulatedV4L2Kernel {
        SimulatedV4L2Kernel(path: "/dev/video0", formats: [.discrete(.yuyv, [(640, 480)])])
    }

    @Test func discoversCaptureNodesOnly() throws {
        let sysfs = try FakeSysfs()
        try sysfs.add("video0")
        // video1 is not the mock's node: opening it fails (ENOENT), so it is not a camera.
        try sysfs.add("video1", index: 1)
        try sysfs.add("v4l-subdev0")
        let kernel = kernel()
        let driver = V4L2CameraDriver(system: kernel.system, sysfsRoot: sysfs.root, deviceRoot: "/dev")
        let devices = driver.discoverDevices()
        #expect(devices.count == 1)
        #expect(devices.first?.identity.localizedName == "Mock Camera")
        #expect(devices.first?.identity.origin == .real)
        // The node as v4l2-ctl and ffmpeg name it, for `avcapture record --video /dev/video0`.
        #expect(devices.first?.identity.systemName == "/dev/video0")
        // Known nodes are not opened again.
        kernel.clearTrace()
        _ = driver.discoverDevices()
        #expect(!kernel.trace.contains("QUERYCAP"))
        #expect(driver.discoverDevices().first === devices.first)
    }

    @Test func unplugAndReplugReportOnceAndKeepTheObject() throws {
        let sysfs = try FakeSysfs()
        try sysfs.add("video0")
        let registry = DeviceRegistry(drivers: [], selection: .all)
        let heard = ConnectionLog(registry)
        let monitor = DeviceHotPlugMonitor(listensToKernel: false)
        let driver = V4L2CameraDriver(
            system: kernel().system, sysfsRoot: sysfs.root, deviceRoot: "/dev", registry: registry,
            hotPlugMonitor: monitor)
        let camera = try #require(driver.discoverDevices().first)
        #expect(heard.kinds.isEmpty, "what was there at the first discovery did not arrive")

        try sysfs.remove("video0")
        monitor.dispatch(Uevent(action: "remove", subsystem: "video4linux", deviceName: "video0", devicePath: "/x"))
        #expect(heard.kinds == ["disconnected"])
        #expect(!camera.isConnected)
        #expect(driver.discoverDevices().isEmpty)

        try sysfs.add("video0")
        monitor.dispatch(Uevent(action: "add", subsystem: "video4linux", deviceName: "video0", devicePath: "/x"))
        #expect(heard.kinds == ["disconnected", "connected"])
        #expect(camera.isConnected)
        #expect(driver.discoverDevices().first === camera)
        // Another subsystem's events are not ours.
        monitor.dispatch(Uevent(action: "add", subsystem: "sound", deviceName: "snd/pcmC0D0c", devicePath: "/y"))
        #expect(heard.kinds == ["disconnected", "connected"])
    }

    @Test func inaccessibleNodesAreListedWithAdvice() throws {
        let sysfs = try FakeSysfs()
        try sysfs.add("video0")
        let kernel = kernel()
        kernel.fail("open", with: EACCES)
        let driver = V4L2CameraDriver(system: kernel.system, sysfsRoot: sysfs.root, deviceRoot: "/dev")
        let denied = driver.inaccessibleDevices()
        #expect(denied.map(\.path) == ["/dev/video0"])
        #expect(denied.first?.advice.contains("/dev/video0") == true)
        // Once it can be opened, it is a camera.
        #expect(driver.discoverDevices().count == 1)
        #expect(driver.inaccessibleDevices().isEmpty)
    }

    @Test func parsesKernelUevents() {
        let datagram = Array(
            "add@/devices/platform/vivid.0/video4linux/video0\0ACTION=add\0DEVPATH=/devices/platform/vivid.0/video4linux/video0\0SUBSYSTEM=video4linux\0MAJOR=81\0MINOR=0\0DEVNAME=video0\0SEQNUM=2001\0"
                .utf8)
        let event = Uevent(datagram: datagram)
        #expect(event?.action == "add")
        #expect(event?.subsystem == "video4linux")
        #expect(event?.deviceName == "video0")
        #expect(event?.devicePath == "/devices/platform/vivid.0/video4linux/video0")
        // udev's own messages and damaged ones are not kernel uevents.
        #expect(Uevent(datagram: Array("libudev\0\u{FE}\u{ED}".utf8)) == nil)
        #expect(Uevent(datagram: Array("add@/x\0ACTION=add\0".utf8)) == nil)
    }
}
