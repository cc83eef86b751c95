import CLinuxMedia
import CaptureDrivers
import Foundation
import OpenAVCapture
import Synchronization

/// The V4L2 camera driver running on a simulated kernel: the real funnel, mmap streaming and zero-copy wrapping,
/// with no hardware. For benchmarks and tests of what the driver costs per frame; the simulated device produces a
/// frame whenever the driver polls and a buffer is queued, so it runs as fast as the driver can.
///
/// Threading: not synchronized; use from one thread. `capture` runs its handler on the driver's capture thread.
public final class SimulatedV4L2Camera {
    private let kernel: SimulatedV4L2Kernel
    private let camera: V4L2Camera
    private let configuration: StreamConfiguration

    /// A YUYV camera of `width` x `height`.
    public convenience init(width: Int, height: Int) throws {
        try self.init(
            kernel: SimulatedV4L2Kernel(
                path: "/dev/video-simulated", card: "Simulated V4L2 Camera",
                formats: [.discrete(.yuyv, [(UInt32(width), UInt32(height))])], recordsTrace: false))
    }

    /// A camera whose kernel lies, for the V4L2 fuzz target: `tamper` gets each request code and the bytes of the
    /// answer the driver is about to read (every request that returns data but the extended controls) and may
    /// rewrite them. It runs under the simulated kernel's lock and must not block. The camera offers YUYV at `width`
    /// x `height`, MJPEG at that size and twice it, and a UVC camera's focus, exposure and white balance controls.
    ///
    /// - Throws: when the driver finds no camera in what it was told (an `AVError`), or cannot read it at all.
    public convenience init(
        width: Int, height: Int,
        tamperingWith tamper: @escaping @Sendable (_ request: UInt, _ answer: UnsafeMutableRawBufferPointer) -> Void
    ) throws {
        func control(_ id: Int32, _ type: v4l2_ctrl_type, _ range: ClosedRange<Int64>, _ value: Int64)
            -> SimulatedV4L2Kernel.Control
        {
            SimulatedV4L2Kernel.Control(
                info: V4L2ControlInfo(
                    id: UInt32(bitPattern: id), type: type.rawValue, name: "control \(id)", minimum: range.lowerBound,
                    maximum: range.upperBound, step: 1, defaultValue: value),
                value: value, menu: type == V4L2_CTRL_TYPE_MENU ? [1: "Manual Mode", 3: "Aperture Priority Mode"] : [:])
        }
        let size = (UInt32(width), UInt32(height))
        try self.init(
            kernel: SimulatedV4L2Kernel(
                path: "/dev/video-simulated", card: "Simulated V4L2 Camera",
                formats: [
                    .discrete(.yuyv, [size]), .discrete(.mjpeg, [size, (UInt32(width * 2), UInt32(height * 2))]),
                ],
                controls: [
                    control(V4L2_CID_FOCUS_AUTO, V4L2_CTRL_TYPE_BOOLEAN, 0...1, 1),
                    control(V4L2_CID_FOCUS_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, 0...250, 0),
                    control(V4L2_CID_EXPOSURE_AUTO, V4L2_CTRL_TYPE_MENU, 0...3, 3),
                    control(V4L2_CID_EXPOSURE_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, 3...2047, 250),
                    control(V4L2_CID_WHITE_BALANCE_TEMPERATURE, V4L2_CTRL_TYPE_INTEGER, 2000...6500, 4000),
                ],
                recordsTrace: false, tamperingWith: tamper))
    }

    private init(kernel: SimulatedV4L2Kernel) throws {
        self.kernel = kernel
        let location = V4L2NodeLocation(name: "video-simulated", path: kernel.path)
        guard let description = try V4L2DeviceDescription.read(location, system: kernel.system),
            let format = description.formats.first
        else { throw AVError(.deviceNotConnected, "the simulated kernel offers no camera") }
        camera = V4L2Camera(
            path: kernel.path, description: description, system: kernel.system,
            registry: DeviceRegistry(drivers: [], selection: .all))
        configuration = camera.defaultConfiguration(for: .video(format.video))
    }

    /// The memory of the kernel's mapped buffers while streaming: a frame that wraps it was not copied.
    public var kernelBufferAddresses: [UnsafeRawPointer] {
        (0..<Int(V4L2Camera.requestedBufferCount)).compactMap { kernel.bufferAddress($0).map(UnsafeRawPointer.init) }
    }

    private struct Request {
        var remaining = 0
        var handler: (@Sendable (CMSampleBuffer) -> Void)?
    }

    /// The request the capture thread serves, shared with it.
    private final class Pending: Sendable {
        let request = Mutex(Request())
    }

    private let pending = Pending()
    private let delivered = DispatchSemaphore(value: 0)
    private var isStreaming = false

    /// Hands the next `count` frames to `handler` on the capture thread and returns once it has seen them (a frame
    /// goes back to the kernel when the handler lets go of it). The camera starts streaming at the first call and
    /// keeps streaming until `stop()`; frames between calls go back to the kernel unseen.
    public func capture(frames count: Int, _ handler: @escaping @Sendable (CMSampleBuffer) -> Void) throws {
        _ = try capture(frames: count, timeout: nil, handler)
    }

    /// As ``capture(frames:_:)``, giving up after `timeout` (nil: never): whether all `count` frames came. After a
    /// timeout the handler is not called again.
    public func capture(
        frames count: Int, timeout: Duration?, _ handler: @escaping @Sendable (CMSampleBuffer) -> Void
    ) throws -> Bool {
        guard count > 0 else { return true }
        pending.request.withLock { $0 = Request(remaining: count, handler: handler) }
        if !isStreaming {
            do {
                try camera.start(configuration) { [pending, delivered] event in
                    guard case .output(let sample, _) = event else { return }
                    let finished = pending.request.withLock { request -> Bool in
                        guard request.remaining > 0, let handler = request.handler else { return false }
                        handler(sample)
                        request.remaining -= 1
                        return request.remaining == 0
                    }
                    if finished { delivered.signal() }
                }
            } catch {
                throw AVError(.unknown, "the simulated V4L2 camera did not start: \(error)")
            }
            isStreaming = true
        }
        guard let timeout else {
            delivered.wait()
            return true
        }
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        if delivered.wait(timeout: .now() + seconds) == .success { return true }
        let finished = pending.request.withLock { request in
            defer { request = Request() }
            return request.remaining == 0
        }
        // The last frame came between the timeout and the lock: its signal is still pending.
        if finished { delivered.wait() }
        return finished
    }

    /// Stops streaming; returns once the capture thread has ended.
    public func stop() {
        guard isStreaming else { return }
        camera.stop()
        isStreaming = false
    }

    deinit { stop() }
}
