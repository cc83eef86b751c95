import CaptureDrivers
import Foundation
import OpenAVCapture

/// A set of virtual devices a test owns: its own "Virtual Back Camera", "Virtual Front Camera", "Virtual USB
/// Webcam" and "Virtual Microphone", with a manual clock of its own, so tests that each own a set can run in
/// parallel in one process.
///
/// The process's virtual devices are shared by every test of the process: a test that unplugs one, changes its
/// scene, format or clock disturbs any other test running at the same time. A set's devices are distinct objects
/// with the same names and unique IDs; what one test does to them (faults, scene, formats, clock, notifications of
/// their connection) reaches no other set and not the process's devices. Free-running devices of a set keep in
/// lockstep with each other only.
///
/// Make a set current with ``withCurrent(_:)-(()->Result)``: inside, discovery (`AVCaptureDevice.default`,
/// `AVCaptureDevice.DiscoverySession`, `AVCaptureDevice(uniqueID:)`) answers from the set (and from no other
/// driver: no real devices), and a session or discovery session made there keeps the set for the events it handles
/// later on its own queues. Outside, or in code that never opts in, everything is as before: the process's devices.
/// The current set is a task-local value: child tasks inherit it, dispatch queues and threads do not, so discover
/// devices on the test's task (or pass them) and hand the `AVCaptureDevice` objects on.
///
/// ```swift
/// let devices = VirtualDeviceSet()
/// try devices.withCurrent {
///     let camera = try #require(AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back))
///     camera.virtualCamera?.unplug()    // this set's back camera only
/// }
/// ```
///
/// Threading: thread safe; every member may be called from any thread. A set lives as long as a reference to it
/// (or to one of its devices) does; stop its sessions before dropping it.
public final class VirtualDeviceSet: Sendable {
    /// The manual clock of the set: ``useManualClock()`` puts every device of the set on it.
    public let clock = VirtualDeviceClock()
    private let driver: VirtualDeviceDriver
    private let directory: DeviceDirectory

    /// A new set: every device connected, idle, on the real-time clock, with the default scene, as the process's
    /// devices start.
    public init() {
        // The devices report to the set's registry, which lists them (and no other driver's).
        let (driver, registry) = VirtualDeviceDriver.makeSet()
        self.driver = driver
        directory = DeviceDirectory(virtualDevices: driver, registry: registry)
    }

    /// "Virtual Back Camera" of this set.
    public var backCamera: AVCaptureDevice { directory.device(for: driver.backCamera) }
    /// "Virtual Front Camera" of this set.
    public var frontCamera: AVCaptureDevice { directory.device(for: driver.frontCamera) }
    /// "Virtual USB Webcam" of this set.
    public var usbWebcam: AVCaptureDevice { directory.device(for: driver.usbWebcam) }
    /// "Virtual Microphone" of this set.
    public var microphone: AVCaptureDevice { directory.device(for: driver.microphone) }
    /// Every device of the set, connected or not: back, front, webcam, microphone.
    public var devices: [AVCaptureDevice] { [backCamera, frontCamera, usbWebcam, microphone] }

    /// Puts every device of the set on ``clock`` (`.manual(clock)`); a device takes it at its next start.
    public func useManualClock() {
        for camera in [backCamera, frontCamera, usbWebcam].compactMap(VirtualCameraController.init) {
            camera.clockMode = .manual(clock)
        }
        microphone.virtualMicrophone?.clockMode = .manual(clock)
    }

    /// The set made current by the calling task (``withCurrent(_:)-(()->Result)``), if any.
    public static var current: VirtualDeviceSet? { taskSet }

    @TaskLocal private static var taskSet: VirtualDeviceSet?

    /// Runs `body` with this set current for the calling task and the tasks it creates.
    public func withCurrent<Result>(_ body: () throws -> Result) rethrows -> Result {
        try Self.$taskSet.withValue(self) { try directory.withCurrent(body) }
    }

    /// The same for an async `body`.
    public func withCurrent<Result>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> Result
    ) async rethrows -> Result {
        try await Self.$taskSet.withValue(
            self, operation: { try await directory.withCurrent(isolation: isolation, body) }, isolation: isolation)
    }
}
