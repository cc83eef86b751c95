import CaptureDrivers
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The USB bandwidth model read from fake sysfs trees written as the kernel lays them out: descriptors, bus and
/// speed, the alternate setting a format needs, and the ENOSPC advice that names who shares the bus.
@Suite struct USBBandwidthTests {
    static let yuyv = kCVPixelFormatType_422YpCbCr8_yuvs

    /// USB 2.0 §5.11.3 worked by hand for one high-speed isochronous transaction of 896 bytes: 896 × 8 × 7/6 =
    /// 8362.67 stuffed bits, floor(3.167 + 8362.67) = 8365 bit times of 2.083 ns = 17 424.3 ns, plus the token and
    /// handshake overhead 38 × 8 × 2.083 = 633.2 ns and a 5 ns host delay: 18 062.5 ns.
    static let microsecondsFor896Bytes = 18.0625

    @Test func highSpeedWebcamDescriptorsGiveItsAlternateSettings() throws {
        let alternates = USBDescriptorReader.streamingAlternates(
            in: FakeUVCCamera.c920().descriptors(superSpeed: false), speed: .high)
        // Eleven settings of interface 1; the microphone's isochronous endpoint (interface 3) is not the camera's.
        #expect(alternates.map(\.alternate) == Array(1...11))
        #expect(Set(alternates.map(\.interface)) == [1])
        #expect(alternates.allSatisfy { $0.isIsochronous })
        // 0x1380: bits 11–12 say two more transactions, bits 0–10 say 896 bytes each; 0x13FC is 3 × 1020.
        #expect(alternates[9].packetSize == 896 && alternates[9].transactionsPerInterval == 3)
        #expect(alternates[9].bytesPerBusInterval == 2688)
        #expect(alternates[10].bytesPerBusInterval == 3060)
        #expect(alternates[0].bytesPerBusInterval == 192)
        #expect(abs(alternates[9].reservedMicroseconds(at: .high) - 3 * Self.microsecondsFor896Bytes) < 0.01)
    }

    @Test func superSpeedDescriptorsCountBurstsFromTheCompanion() throws {
        let alternates = USBDescriptorReader.streamingAlternates(
            in: FakeUVCCamera.superSpeedCamera().descriptors(superSpeed: true), speed: .superSpeed)
        #expect(alternates.map(\.bytesPerBusInterval) == [8192, 16384, 32768, 49152])
        #expect(alternates.map(\.transactionsPerInterval) == [8, 16, 32, 48])
        // 8b/10b: 49 152 bytes are 491 520 line bits, 98.3 µs at 5 Gb/s.
        #expect(abs(alternates[3].reservedMicroseconds(at: .superSpeed) - 98.304) < 0.001)
    }

    @Test func truncatedDescriptorsKeepWhatWasRead() {
        let whole = FakeUVCCamera.c920().descriptors(superSpeed: false)
        let cut = Array(whole.prefix(whole.count - 40))
        let alternates = USBDescriptorReader.streamingAlternates(in: cut, speed: .high)
        #expect(alternates.count < 11 && !alternates.isEmpty)
        #expect(USBDescriptorReader.streamingAlternates(in: [0, 1, 2], speed: .high).isEmpty)
    }

    @Test func topologyFindsBusPortAndSpeedBehindTheNode() throws {
        let sysfs = try FakeUSBSysfs()
        try sysfs.plug(.c920(), port: "1-1.2", speed: "480", nodes: ["video0", "video1"])
        let second = FakeUVCCamera.c920(product: "HD Pro Webcam C920 (second)")
        try sysfs.plug(second, port: "1-1.4", speed: "480", nodes: ["video2", "video3"])
        try sysfs.plug(.superSpeedCamera(), port: "2-1", speed: "5000", nodes: ["video4", "video5"])
        try sysfs.addPlatformNode("video9", card: "vivid")
        let topology = USBTopology(videoNodeRoot: sysfs.videoNodeRoot)

        let first = try #require(topology.attachment(ofVideoNode: "video0"))
        #expect(first.bus == 1 && first.port == "1-1.2" && first.speed == .high)
        #expect(first.product == "HD Pro Webcam C920")
        #expect(first.alternates.count == 11)
        #expect(topology.attachment(ofVideoNode: "video4")?.speed == .superSpeed)
        #expect(topology.attachment(ofVideoNode: "video4")?.bus == 2)
        #expect(topology.attachment(ofVideoNode: "video9") == nil)
        #expect(topology.attachment(ofVideoNode: "video7") == nil)
        #expect(topology.videoNodes(onBus: 1, speed: .high).map(\.node) == ["video0", "video1", "video2", "video3"])
        #expect(topology.videoNodes(onBus: 2, speed: .superSpeed).map(\.node) == ["video4", "video5"])
    }

    /// Discovery reads the USB attachment of each node it opens: the camera on the hub has its bus, the node with
    /// no USB device has none.
    @Test func discoveryAttachesEachCameraToItsBus() throws {
        let sysfs = try FakeUSBSysfs()
        try sysfs.plug(.c920(), port: "1-1.2", speed: "480", nodes: ["video0"])
        let kernel = SimulatedV4L2Kernel(path: "/dev/video0", formats: Self.webcamFormats)
        let driver = V4L2CameraDriver(
            system: kernel.system, sysfsRoot: sysfs.videoNodeRoot, deviceRoot: "/dev",
            registry: DeviceRegistry(drivers: [], selection: .all))
        let camera = try #require(driver.discoverDevices().first as? V4L2Camera)
        #expect(camera.usb?.bus == 1 && camera.usb?.port == "1-1.2" && camera.usb?.alternates.count == 11)
        let demand = camera.hardwareDemand(for: try configuration(camera, 640, 480, Self.yuyv))
        #expect(demand.usb?.alternate?.alternate == 10)

        let platform = try FakeUSBSysfs()
        try platform.addPlatformNode("video0", card: "vivid")
        let vivid = V4L2CameraDriver(
            system: kernel.system, sysfsRoot: platform.videoNodeRoot, deviceRoot: "/dev",
            registry: DeviceRegistry(drivers: [], selection: .all))
        let onNoBus = try #require(vivid.discoverDevices().first as? V4L2Camera)
        #expect(onNoBus.usb == nil)
    }

    @Test func speedsFromSysfs() {
        #expect(USBSpeed(sysfs: "480\n") == .high)
        #expect(USBSpeed(sysfs: "12") == .full)
        #expect(USBSpeed(sysfs: "5000") == .superSpeed)
        #expect(USBSpeed(sysfs: "10000") == .superSpeedPlus(megabitsPerSecond: 10000))
        #expect(USBSpeed(sysfs: "1.5") == nil)
        #expect(USBSpeed.high.periodicBudgetMicroseconds == 100)
    }

    @Test func uncompressedVGATakesOverHalfAHighSpeedBus() throws {
        let sysfs = try FakeUSBSysfs()
        try sysfs.plug(.c920(), port: "1-1", speed: "480", nodes: ["video0"])
        let camera = try usbCamera(SimulatedV4L2Kernel(path: "/dev/video0", formats: Self.webcamFormats), sysfs)
        let vga = try configuration(camera, 640, 480, Self.yuyv)
        let yuyv = try #require(camera.hardwareDemand(for: vga).usb)
        // 640 × 480 × 2 bytes × 30 fps / 8000 microframes + 12 = 2316 bytes: the smallest setting that carries it is
        // 3 × 896 (2688).
        #expect(yuyv.payloadBytesPerInterval == 2316)
        #expect(yuyv.alternate?.alternate == 10)
        #expect(abs(yuyv.share - 3 * Self.microsecondsFor896Bytes / 100) < 0.001)
        #expect(yuyv.bus == USBBusDemand.Bus(number: 1, speed: .high))

        // MJPEG at 4 bits a pixel: 576 + 12 bytes fit 640 (0x0280, alternate 4), a fifth of the bus's time.
        let vgaJPEG = try configuration(camera, 640, 480, kCMVideoCodecType_JPEG)
        let mjpeg = try #require(camera.hardwareDemand(for: vgaJPEG).usb)
        #expect(mjpeg.alternate?.alternate == 4)
        #expect(mjpeg.share < 0.15)
        // 1280x720 YUYV needs 6924 bytes a microframe: no setting carries it, so it costs more than the bus has.
        let hd = try configuration(camera, 1280, 720, Self.yuyv)
        let big = try #require(camera.hardwareDemand(for: hd).usb)
        #expect(big.alternate == nil)
        #expect(big.share > 1)
    }

    @Test func superSpeedCarriesUncompressed1080p() throws {
        let sysfs = try FakeUSBSysfs()
        try sysfs.plug(.superSpeedCamera(), port: "2-1", speed: "5000", nodes: ["video0"])
        let kernel = SimulatedV4L2Kernel(path: "/dev/video0", formats: [.discrete(.yuyv, [(1920, 1080)])])
        let camera = try usbCamera(kernel, sysfs)
        let fullHD = try configuration(camera, 1920, 1080, Self.yuyv)
        let demand = try #require(camera.hardwareDemand(for: fullHD).usb)
        // 1920 × 1080 × 2 × 30 / 8000 + 12 = 15 564 bytes: the 16 KiB setting, 32.8 µs of 112.5.
        #expect(demand.alternate?.bytesPerBusInterval == 16384)
        #expect(abs(demand.share - 32.768 / 112.5) < 0.0001)
    }

    @Test func aNodeOnNoBusHasOnlyItsPixelRate() throws {
        let sysfs = try FakeUSBSysfs()
        try sysfs.addPlatformNode("video0", card: "vivid")
        let camera = try usbCamera(SimulatedV4L2Kernel(path: "/dev/video0", formats: Self.webcamFormats), sysfs)
        #expect(camera.usb == nil)
        let vga = try configuration(camera, 640, 480, Self.yuyv)
        let demand = camera.hardwareDemand(for: vga)
        #expect(demand.usb == nil)
        #expect(demand.pixelsPerSecond == 640 * 480 * 30)
        #expect(demand.encoding == HardwareDemand.Encoding.raw)
    }

    @Test func aBulkCameraReservesNothingButCountsItsPayload() throws {
        let sysfs = try FakeUSBSysfs()
        let bulk = FakeUVCCamera(product: "Bulk Camera", vendorID: "1bcf", productID: "2c99", alternates: [.bulk()])
        try sysfs.plug(bulk, port: "1-3", speed: "480", nodes: ["video0"])
        let attachment = try #require(USBTopology(videoNodeRoot: sysfs.videoNodeRoot).attachment(ofVideoNode: "video0"))
        #expect(attachment.alternates.map(\.isIsochronous) == [false])
        #expect(attachment.alternates.first?.reservedMicroseconds(at: .high) == 0)
        // No isochronous setting: the payload's bus time in 1024-byte transactions, 2316 / 1024 of 20.6 µs.
        let demand = USBBusDemand(payloadBytesPerInterval: 2316, attachment: attachment)
        #expect(demand.alternate == nil)
        let perTransaction = USBSpeed.high.isochronousTransactionMicroseconds(bytes: 1024)
        #expect(abs(perTransaction - 20.6) < 0.1)
        #expect(abs(demand.reservedMicroseconds - perTransaction * 2316 / 1024) < 1e-9)
    }

    /// ENOSPC at STREAMON from the trace kernel: the advice names the bus, what the format needs of it, the other
    /// camera on it with its node and the process streaming from it, and what to do.
    @Test func noSpaceAtStreamOnNamesTheBusAndTheOtherCamera() throws {
        let sysfs = try FakeUSBSysfs()
        try sysfs.plug(.c920(), port: "1-1.2", speed: "480", nodes: ["video0", "video1"])
        try sysfs.plug(.c920(product: "Document Camera"), port: "1-1.4", speed: "480", nodes: ["video2", "video3"])
        try sysfs.plug(.superSpeedCamera(), port: "2-1", speed: "5000", nodes: ["video4"])
        let proc = try FakeProcessTable()
        try proc.add(processID: 4321, command: "ffmpeg", holding: "/dev/video2")
        let kernel = SimulatedV4L2Kernel(path: "/dev/video0", formats: Self.webcamFormats)
        let camera = try usbCamera(
            kernel, sysfs,
            diagnosis: DeviceNodeDiagnosis(processRoot: proc.root, ownProcessID: 1, videoNodeRoot: sysfs.videoNodeRoot))
        kernel.fail("STREAMON", with: ENOSPC)
        let vga = try configuration(camera, 640, 480, Self.yuyv)
        var fault: DeviceFault?
        do {
            try camera.start(vga, sink: { _ in })
            camera.stop()
        } catch {
            fault = error
        }
        #expect(fault?.kind == .io(.noSpace))
        let advice = try #require(fault?.advice)
        for expected in [
            "USB bus 1 (USB 2.0 high speed, 480 Mb/s)", "YUYV 640x480 at 30 fps from /dev/video0", "port 1-1.2",
            "alternate setting 10 (3 × 896 bytes)", "54 µs of the 100 µs", "Document Camera (/dev/video2, /dev/video3,",
            "port 1-1.4, open in ffmpeg (pid 4321))", "MJPEG instead of YUYV", "another bus",
        ] {
            #expect(advice.contains(expected), "\(expected) missing from: \(advice)")
        }
        // The SuperSpeed camera is on another bus; the advice is one line.
        #expect(!advice.contains("USB 3.0 Capture Camera"))
        #expect(!advice.contains("\n"))
        #expect(eventually { kernel.openDescriptorCount == 0 })
    }

    static let webcamFormats = SimulatedUSBCamera.webcamFormats

    private func usbCamera(
        _ kernel: SimulatedV4L2Kernel, _ sysfs: FakeUSBSysfs, diagnosis: DeviceNodeDiagnosis = DeviceNodeDiagnosis()
    ) throws -> V4L2Camera {
        let name = (kernel.path as NSString).lastPathComponent
        let description = try #require(
            try V4L2DeviceDescription.read(V4L2NodeLocation(name: name, path: kernel.path), system: kernel.system))
        return V4L2Camera(
            path: kernel.path, description: description, system: kernel.system, diagnosis: diagnosis,
            registry: DeviceRegistry(drivers: [], selection: .all),
            usb: USBTopology(videoNodeRoot: sysfs.videoNodeRoot).attachment(ofVideoNode: name))
    }
}
