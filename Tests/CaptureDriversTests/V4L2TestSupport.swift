import CaptureDrivers
import Dispatch
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import Testing
import TestSupport

/// What a V4L2 test keeps of one event: for frames, where the pixels are (to prove no copy) and the first bytes.
enum V4L2Event: Sendable {
    case frame(sequence: UInt64, time: CMTime, subType: FourCharCode, address: UInt?, firstBytes: [UInt8])
    case dropped(sequence: UInt64, time: CMTime, reason: DropReason)
    case fault(DeviceFault)

    var isFrame: Bool { if case .frame = self { true } else { false } }
}

/// A sink that records V4L2 events and lets a test wait for them; with `holdsSamples` it keeps every sample
/// buffer (so the camera's buffers stay out of the kernel) until `release()`.
///
/// Thread safe: a mutex guards the list, a semaphore wakes waiters.
final class V4L2Recorder: Sendable {
    private struct State {
        var events: [V4L2Event] = []
        var held: [CMSampleBuffer] = []
        var holds: Bool
    }

    private let state: Mutex<State>
    private let arrivals = DispatchSemaphore(value: 0)

    init(holdsSamples: Bool = false) {
        state = Mutex(State(holds: holdsSamples))
    }

    var sink: StreamSink {
        { [self] event in
            let recorded: V4L2Event
            var sample: CMSampleBuffer?
            switch event {
            case .output(let buffer, let sequence):
                sample = buffer
                let subType = buffer.formatDescription?.mediaSubType.rawValue ?? 0
                if let image = buffer.imageBuffer {
                    CVPixelBufferLockBaseAddress(image, .readOnly)
                    defer { CVPixelBufferUnlockBaseAddress(image, .readOnly) }
                    let address = CVPixelBufferIsPlanar(image)
                        ? CVPixelBufferGetBaseAddressOfPlane(image, 0) : CVPixelBufferGetBaseAddress(image)
                    let first = address.map { Array(UnsafeRawBufferPointer(start: $0, count: 4)) } ?? []
                    recorded = .frame(
                        sequence: sequence, time: buffer.presentationTimeStamp, subType: subType,
                        address: address.map { UInt(bitPattern: $0) }, firstBytes: first)
                } else {
                    let bytes = buffer.dataBuffer.map { Array($0.dataBytes()) } ?? []
                    recorded = .frame(
                        sequence: sequence, time: buffer.presentationTimeStamp, subType: subType, address: nil,
                        firstBytes: bytes)
                }
            case .dropped(let sequence, let time, let reason):
                recorded = .dropped(sequence: sequence, time: time, reason: reason)
            case .fault(let fault):
                recorded = .fault(fault)
            }
            state.withLock { state in
                state.events.append(recorded)
                if state.holds, let sample { state.held.append(sample) }
            }
            arrivals.signal()
        }
    }

    var events: [V4L2Event] { state.withLock { $0.events } }
    var frameCount: Int { events.count(where: \.isFrame) }

    /// Stops holding and lets go of every held sample buffer.
    func release() {
        let held = state.withLock { state in
            state.holds = false
            defer { state.held = [] }
            return state.held
        }
        _ = held.count
    }

    /// Waits until `predicate` holds, up to `timeout` seconds; returns whether it held.
    @discardableResult
    func wait(timeout: Double = 10, until predicate: ([V4L2Event]) -> Bool) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while true {
            if state.withLock({ predicate($0.events) }) { return true }
            if arrivals.wait(timeout: deadline) == .timedOut { return state.withLock { predicate($0.events) } }
        }
    }

    @discardableResult
    func wait(forFrames count: Int, timeout: Double = 10) -> Bool {
        wait(timeout: timeout) { $0.count(where: \.isFrame) >= count }
    }
}

/// A camera over a mock kernel, as discovery would make it; its connection events go to a private registry.
func makeCamera(
    _ kernel: SimulatedV4L2Kernel, diagnosis: DeviceNodeDiagnosis = DeviceNodeDiagnosis(),
    registry: DeviceRegistry = DeviceRegistry(drivers: [], selection: .all)
) throws -> V4L2Camera {
    let location = V4L2NodeLocation(name: "video0", path: kernel.path)
    let description = try #require(try V4L2DeviceDescription.read(location, system: kernel.system))
    return V4L2Camera(
        path: kernel.path, description: description, system: kernel.system, diagnosis: diagnosis, registry: registry)
}

/// The camera's format of a size and media subtype, as a configuration at its default rate.
func configuration(_ camera: V4L2Camera, _ width: Int32, _ height: Int32, _ subType: FourCharCode) throws
    -> StreamConfiguration
{
    let format = try #require(
        camera.formats.first { format in
            guard case .video(let video) = format else { return false }
            return video.width == width && video.height == height && video.mediaSubType == subType
        })
    return camera.defaultConfiguration(for: format)
}

/// Polls `condition` every `interval` seconds (a millisecond by default) up to `timeout` seconds, with the tests'
/// one polling wait (`waitUntil`); whether it held.
func eventually(timeout: Double = 5, every interval: Double = 0.001, _ condition: () -> Bool) -> Bool {
    waitUntil(timeout: timeout, every: interval, condition)
}
