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
    public init(width: Int, height: Int) throws {
        kernel = SimulatedV4L2Kernel(
            path: "/dev/video-simulated", card: "Simulated V4L2 Camera",
            formats: [.discrete(.yuyv, [(UInt32(width), UInt32(height))])], recordsTrace: false)
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
        guard count > 0 else { return }
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
        delivered.wait()
    }

    /// Stops streaming; returns once the capture thread has ended.
    public func stop() {
        guard isStreaming else { return }
        camera.stop()
        isStreaming = false
    }

    deinit { stop() }
}
