import CaptureDrivers
import Foundation
import OpenAVCapture
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// vivid through the public API only, where it exists (the VM of `make test-kernel`, which sets
/// `OPENAV_DEVICES=all`); elsewhere these skip, saying why.
enum Vivid {
    static var device: AVCaptureDevice? {
        AVCaptureDevice.DiscoverySession(
            deviceTypes: [.builtInWideAngleCamera, .external], mediaType: .video, position: .unspecified
        ).devices.first { $0.modelID.hasPrefix("vivid:") }
    }

    static let skipReason: Comment =
        "no vivid camera in discovery: these run in the VM (`make test-kernel`) with OPENAV_DEVICES=all"

    /// vivid's 640x480 YUYV format, made active, at 25 fps.
    static func configure640x480(_ device: AVCaptureDevice) throws {
        let format = try #require(
            device.formats.first { format in
                let dimensions = CMVideoFormatDescriptionGetDimensions(format.formatDescription)
                return dimensions.width == 640 && dimensions.height == 480
                    && CMFormatDescriptionGetMediaSubType(format.formatDescription)
                        == kCVPixelFormatType_422YpCbCr8_yuvs
            })
        try device.lockForConfiguration()
        device.activeFormat = format
        device.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 25)
        device.activeVideoMaxFrameDuration = CMTime(value: 1, timescale: 25)
        device.unlockForConfiguration()
    }

    /// Runs a shell command in the VM (as root); its exit status. posix_spawn, not Foundation's `Process`, whose
    /// run-loop wake-up socket pair could not be made in the VM.
    @discardableResult
    static func shell(_ command: String) -> Int32 {
        var child: pid_t = 0
        let words: [String] = ["/bin/sh", "-c", command]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { word in word.withCString { strdup($0) } } + [nil]
        defer { argv.forEach { free($0) } }
        guard posix_spawn(&child, "/bin/sh", nil, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
    }
}

@Suite(.serialized, .enabled(if: Vivid.device != nil, Vivid.skipReason))
struct V4L2SessionKernelTests {
    @Test func aSessionDeliversVividFramesToAVideoDataOutput() throws {
        let device = try #require(Vivid.device)
        #expect(AVCaptureDevice.authorizationStatus(for: .video) == .authorized)
        #expect(device.isConnected)
        // vivid's 640x480 reaches 25 fps, not 30: the preset takes it at its fastest.
        #expect(device.supportsSessionPreset(.vga640x480))
        let output = AVCaptureVideoDataOutput()
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "vivid frames"))
        let session = try makeSession(preset: .vga640x480, devices: [device], outputs: [output])
        let dimensions = CMVideoFormatDescriptionGetDimensions(device.activeFormat.formatDescription)
        #expect(dimensions.width == 640 && dimensions.height == 480)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(delegate.wait(for: 30, timeout: 60))
        let frames = delegate.received
        #expect(frames.allSatisfy { $0.width == 640 && $0.height == 480 })
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.time < $1.time })
        print("vivid through a session: \(frames.count) frames, \(delegate.dropped.count) drops")
    }
}

/// Unplugs vivid (its `disconnect` control, then unloading the module) and plugs it back (loading it again): the
/// netlink hot-plug path end to end. Runs in a VM boot of its own (`make test-kernel`), since it takes vivid away.
@Suite(.serialized, .enabled(if: Vivid.device != nil, Vivid.skipReason))
struct V4L2HotPlugKernelTests {
    @Test func aSessionSurvivesUnplugAndReplug() throws {
        let device = try #require(Vivid.device)
        let path = try #require((device.backend as? V4L2Camera)?.path)
        try Vivid.configure640x480(device)
        let output = AVCaptureVideoDataOutput()
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "vivid frames"))
        let session = try makeSession(preset: .inputPriority, devices: [device], outputs: [output])
        let sessionEvents = NotificationRecorder(
            [
                AVCaptureSession.runtimeErrorNotification, AVCaptureSession.wasInterruptedNotification,
                AVCaptureSession.interruptionEndedNotification,
            ], object: session)
        let deviceEvents = NotificationRecorder(
            [.AVCaptureDeviceWasDisconnected, .AVCaptureDeviceWasConnected], object: nil)
        let errors = Mutex<[AVError]>([])
        let token = NotificationCenter.default.addObserver(
            forName: AVCaptureSession.runtimeErrorNotification, object: session, queue: nil
        ) { note in
            if let error = note.userInfo?[AVCaptureSessionErrorKey] as? AVError { errors.withLock { $0.append(error) } }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        session.startRunning()
        defer { session.stopRunning() }
        #expect(delegate.wait(for: 10, timeout: 60))

        // vivid's disconnect button unregisters its nodes mid-stream: ENODEV, a disconnect, a runtime error.
        #expect(Vivid.shell("v4l2-ctl -d \(path) -c disconnect=1") == 0)
        #expect(waitUntil(timeout: 20) { deviceEvents.recorded.contains("AVCaptureDeviceWasDisconnectedNotification") })
        #expect(waitUntil(timeout: 20) { !device.isConnected && session.isInterrupted })
        #expect(waitUntil(timeout: 20) { errors.withLock { $0.first?.code } == .deviceWasDisconnected })

        // Unloading and loading the module again is a replug: the same camera comes back, the session resumes.
        let framesBefore = delegate.received.count
        #expect(waitUntil(timeout: 20) { Vivid.shell("modprobe -r vivid") == 0 }, "vivid unloads once nothing maps it")
        #expect(Vivid.shell("modprobe vivid") == 0)
        #expect(waitUntil(timeout: 20) { deviceEvents.recorded.contains("AVCaptureDeviceWasConnectedNotification") })
        #expect(waitUntil(timeout: 20) { device.isConnected && !session.isInterrupted })
        #expect(delegate.wait(for: framesBefore + 10, timeout: 60), "frames flow again after the replug")
        #expect(sessionEvents.recorded.contains(AVCaptureSession.interruptionEndedNotification.rawValue))
        #expect(AVCaptureDevice(uniqueID: device.uniqueID) === device, "the same device object")
    }
}


/// The advice a driver gives reaches the user as the error's recovery suggestion, with Apple's codes.
@Suite struct DeviceFaultErrorTests {
    @Test func driverAdviceBecomesTheRecoverySuggestion() throws {
        let device = try #require(AVCaptureDevice.default(for: .video))
        let busy = DeviceFault.explained(.busy, advice: "/dev/video0 is held by ffmpeg (pid 42); close it").avError(
            for: device)
        #expect(busy.code == .deviceInUseByAnotherApplication)
        #expect((busy as NSError).localizedRecoverySuggestion == "/dev/video0 is held by ffmpeg (pid 42); close it")
        #expect(busy.userInfo[AVErrorDeviceKey] as? AVCaptureDevice === device)

        let denied = DeviceFault.explained(.io(.permissionDenied), advice: "join `video`").avError(for: device)
        #expect(denied.code == .applicationIsNotAuthorizedToUseDevice)
        #expect((denied as NSError).localizedRecoverySuggestion == "join `video`")

        let bandwidth = DeviceFault.explained(.io(.noSpace), advice: "choose MJPEG").avError(for: device)
        #expect(bandwidth.code == .sessionHardwareCostOverage)
        #expect((bandwidth as NSError).localizedDescription.contains("USB bandwidth"))
        #expect((bandwidth as NSError).localizedRecoverySuggestion == "choose MJPEG")

        #expect(DeviceFault.disconnected.avError(for: device).code == .deviceWasDisconnected)
        #expect(DeviceFault.explained(.disconnected, advice: "x").avError(for: device).code == .deviceWasDisconnected)
    }
}
