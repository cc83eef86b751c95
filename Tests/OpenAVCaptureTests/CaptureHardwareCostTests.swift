import CaptureDrivers
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import OpenAVCapture

#if canImport(Glibc)
    import Glibc
#endif

/// What cameras' active formats cost together (the multi-camera session's `hardwareCost` and
/// `systemPressureCost`), from fake sysfs trees and the virtual devices, and the ENOSPC at stream-on that a too-full
/// bus gives, through the public API.
@Suite(.serialized) struct CaptureHardwareCostTests {
    static let yuyv = kCVPixelFormatType_422YpCbCr8_yuvs

    /// Two C920-like webcams behind one hub on high-speed bus 1, and a SuperSpeed camera on bus 2.
    static func deskTree() throws -> FakeUSBSysfs {
        let sysfs = try FakeUSBSysfs()
        try sysfs.plug(.c920(), port: "1-1.2", speed: "480", nodes: ["video0", "video1"])
        try sysfs.plug(.c920(product: "Document Camera"), port: "1-1.4", speed: "480", nodes: ["video2", "video3"])
        try sysfs.plug(.superSpeedCamera(), port: "2-1", speed: "5000", nodes: ["video4", "video5"])
        try sysfs.addPlatformNode("video9", card: "vivid")
        return sysfs
    }

    @Test func twoUncompressedWebcamsOverfillOneHighSpeedBus() throws {
        let sysfs = try Self.deskTree()
        let first = try SimulatedUSBCamera(node: "video0", sysfs: sysfs)
        let second = try SimulatedUSBCamera(node: "video2", sysfs: sysfs)
        try first.select(640, 480, Self.yuyv)
        try second.select(640, 480, Self.yuyv)
        // Each takes 3 × 896 bytes a microframe, 54.19 µs of the 100 the bus may reserve (USB 2.0 §5.11.3).
        let both = CaptureHardwareCost.hardwareCost(of: [first.device, second.device])
        #expect(abs(both - 1.0838) < 0.001)
        #expect(abs(CaptureHardwareCost.hardwareCost(of: [first.device]) - 0.5419) < 0.001)
        // MJPEG on one of them: 640 bytes a microframe for it, and the pair fits.
        try second.select(640, 480, kCMVideoCodecType_JPEG)
        let fixed = CaptureHardwareCost.hardwareCost(of: [first.device, second.device])
        #expect(fixed < 1 && fixed > 0.5419)
    }

    @Test func camerasOnDifferentBusesDoNotAdd() throws {
        let sysfs = try Self.deskTree()
        let webcam = try SimulatedUSBCamera(node: "video0", sysfs: sysfs)
        let superSpeed = try SimulatedUSBCamera(node: "video4", sysfs: sysfs)
        try webcam.select(640, 480, Self.yuyv)
        try superSpeed.select(1280, 720, Self.yuyv)
        // 1280 × 720 × 2 × 30 / 8000 + 12 = 6924 bytes: the 8 KiB setting, 16.4 µs of SuperSpeed's 112.5.
        let cost = CaptureHardwareCost.hardwareCost(of: [webcam.device, superSpeed.device])
        #expect(abs(cost - 0.5419) < 0.001, "the fuller bus is the high-speed one: \(cost)")
        #expect(abs(CaptureHardwareCost.hardwareCost(of: [superSpeed.device]) - 16.384 / 112.5) < 0.0001)
    }

    @Test func camerasOnNoBusShareThePixelRateBudget() throws {
        let sysfs = try Self.deskTree()
        let vivid = try SimulatedUSBCamera(node: "video9", sysfs: sysfs)
        try vivid.select(1280, 720, Self.yuyv)
        // 1280 × 720 × 30 of 3840 × 2160 × 30: a ninth.
        #expect(abs(CaptureHardwareCost.hardwareCost(of: [vivid.device]) - 1.0 / 9) < 0.0001)

        let back = try #require(AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back))
        let front = try #require(AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .front))
        let pixelRate = { (device: AVCaptureDevice) -> Double in
            let size = CMVideoFormatDescriptionGetDimensions(device.activeFormat.formatDescription)
            return Double(size.width) * Double(size.height) / device.activeVideoMinFrameDuration.seconds
        }
        let expected = (pixelRate(back) + pixelRate(front) + pixelRate(vivid.device)) / (3840 * 2160 * 30)
        let cost = CaptureHardwareCost.hardwareCost(of: [back, front, vivid.device])
        #expect(abs(Double(cost) - expected) < 0.0001)
        #expect(cost > 0)
        // A microphone is no camera: it costs nothing here.
        let microphones = AVCaptureDevice.DiscoverySession(
            deviceTypes: [.microphone], mediaType: .audio, position: .unspecified
        ).devices
        #expect(CaptureHardwareCost.hardwareCost(of: microphones) == 0)
    }

    @Test func decodingMJPEGPressesHarderThanRawPixels() throws {
        let raw = HardwareDemand(pixelsPerSecond: 1920 * 1080 * 30, encoding: .raw)
        let jpeg = HardwareDemand(pixelsPerSecond: 1920 * 1080 * 30, encoding: .jpeg)
        let h264 = HardwareDemand(pixelsPerSecond: 1920 * 1080 * 30, encoding: .interframe)
        // 62.2 million pixels a second: an eighth of a core's raw conversions, a third of its MJPEG decodes.
        #expect(abs(CaptureHardwareCost.systemPressureCost(of: [raw], cores: 1) - 62_208_000 / 500e6) < 1e-9)
        #expect(abs(CaptureHardwareCost.systemPressureCost(of: [jpeg], cores: 1) - 62_208_000 / 190e6) < 1e-9)
        #expect(
            CaptureHardwareCost.systemPressureCost(of: [jpeg, jpeg, h264], cores: 2)
                == CaptureHardwareCost.systemPressureCost(of: [jpeg, jpeg, h264], cores: 1) / 2)

        // Through a device: the same camera and size pressing harder in MJPEG than in YUYV.
        let sysfs = try Self.deskTree()
        let camera = try SimulatedUSBCamera(node: "video9", sysfs: sysfs)
        try camera.select(640, 480, Self.yuyv)
        let rawPressure = CaptureHardwareCost.systemPressureCost(of: [camera.device])
        try camera.select(640, 480, kCMVideoCodecType_JPEG)
        let jpegPressure = CaptureHardwareCost.systemPressureCost(of: [camera.device])
        let cores = Float(ProcessInfo.processInfo.activeProcessorCount)
        #expect(abs(rawPressure - 640 * 480 * 30 / 500e6 / cores) < 1e-6)
        #expect(abs(jpegPressure / rawPressure - 500 / 190) < 0.001)
    }

    /// The bus refuses the second camera's stream (ENOSPC at STREAMON from the trace kernel) while the first
    /// streams in another session: Apple's runtime error notification carries an AVError whose recovery suggestion
    /// names the bus, the other camera and what to do.
    @Test func noSpaceAtStreamOnIsAnActionableRuntimeError() throws {
        let sysfs = try Self.deskTree()
        let proc = FileManager.default.temporaryDirectory.appendingPathComponent("proc-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: proc, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: proc) }
        let streaming = try SimulatedUSBCamera(node: "video2", sysfs: sysfs, processRoot: proc)
        let refused = try SimulatedUSBCamera(node: "video0", sysfs: sysfs, processRoot: proc)
        try streaming.select(640, 480, Self.yuyv)
        try refused.select(640, 480, Self.yuyv)

        let running = try Self.session(for: streaming.device)
        running.startRunning()
        defer { running.stopRunning() }
        #expect(running.isRunning && !running.isInterrupted)

        refused.kernel.fail("STREAMON", with: ENOSPC)
        let session = try Self.session(for: refused.device)
        let errors = Mutex<[AVError]>([])
        let token = NotificationCenter.default.addObserver(
            forName: .AVCaptureSessionRuntimeError, object: session, queue: nil
        ) { note in
            if let error = note.userInfo?[AVCaptureSessionErrorKey] as? AVError { errors.withLock { $0.append(error) } }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        session.startRunning()
        defer { session.stopRunning() }

        let error = try #require(errors.withLock { $0.first })
        #expect(error.code == .sessionHardwareCostOverage)
        #expect(error.userInfo[AVErrorDeviceKey] as? AVCaptureDevice === refused.device)
        let description = (error as NSError).localizedDescription
        #expect(description.contains(refused.device.localizedName) && description.contains("USB bandwidth"))
        let suggestion = try #require((error as NSError).localizedRecoverySuggestion)
        for expected in [
            "USB bus 1 (USB 2.0 high speed, 480 Mb/s)", "Document Camera (/dev/video2", "port 1-1.4",
            "YUYV 640x480 at 30 fps from /dev/video0", "MJPEG instead of YUYV", "another bus",
        ] {
            #expect(suggestion.contains(expected), "\(expected) missing from: \(suggestion)")
        }
        #expect(!suggestion.contains("USB 3.0 Capture Camera"))
        // The camera that streams is untouched.
        #expect(running.isRunning && !running.isInterrupted)
    }

    private static func session(for device: AVCaptureDevice) throws -> AVCaptureSession {
        let session = AVCaptureSession()
        session.beginConfiguration()
        // The device's own format, not a preset's.
        session.sessionPreset = .inputPriority
        let input = try AVCaptureDeviceInput(device: device)
        let output = AVCaptureVideoDataOutput()
        #expect(session.canAddInput(input) && session.canAddOutput(output))
        session.addInput(input)
        session.addOutput(output)
        session.commitConfiguration()
        return session
    }

}
