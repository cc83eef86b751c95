import CaptureDrivers
import CaptureGraph
import Foundation
import Synchronization

/// Samples straight from a capture device, without a session: a test tool.
///
/// In an app, `AVCaptureSession` starts devices and routes their samples to outputs. A tap does the least of
/// that, for tests of devices and of the readers: `start()` streams the device's `activeFormat` at its
/// `activeVideoMinFrameDuration` (what a session would), and the samples come out of `next(_:timeout:)`,
/// `nextEvent(timeout:)` or `events`. `stop()` (or releasing the tap) stops the device.
///
/// ```swift
/// let tap = CaptureDeviceTap(device: camera)
/// try tap.start()
/// defer { tap.stop() }
/// for sample in try await tap.next(30) { … }
/// ```
///
/// The capture thread never waits for the consumer: the tap keeps at most `bufferLimit` events and, when the
/// consumer is slower than the device, discards the oldest one and counts it in `discardedEventCount`. Samples
/// a test keeps hold their pixel buffers: a camera lends 8, then drops frames with reason `.outOfBuffers`, as a
/// real one does. Read what you need from a frame and let it go.
///
/// Taps and sessions share a device, as two sessions can: the device streams while any of them wants it, and
/// each gets every event.
///
/// Threading: thread safe. `start` and `stop` may be called from any thread (not from each other's completion);
/// events are consumed by one task at a time (`next`, `nextEvent` and `events` share one queue).
public final class CaptureDeviceTap: Sendable {
    /// Why a frame or period never arrived, as the `DroppedFrameReason` attachment of Apple's `didDrop` says it.
    public enum DropReason: String, Sendable, Hashable {
        /// The device fell behind real time and skipped it.
        case frameWasLate = "FrameWasLate"
        /// Every buffer of the device's pool was held by consumers.
        case outOfBuffers = "OutOfBuffers"
        /// The device delivered nothing for a while (a stall).
        case discontinuity = "Discontinuity"

        init(_ reason: CaptureDrivers.DropReason) {
            switch reason {
            case .frameWasLate: self = .frameWasLate
            case .outOfBuffers: self = .outOfBuffers
            case .discontinuity: self = .discontinuity
            }
        }
    }

    /// What the device tells the tap, in order.
    public enum Event: Sendable {
        /// A video frame (`imageBuffer` set) or an audio period (`dataBuffer` set), stamped on the host clock.
        /// `sequenceNumber` counts every frame or period the device produced since `start()`, dropped or not,
        /// from 0; for a virtual camera it is also the frame index drawn in the picture.
        case sample(CMSampleBuffer, sequenceNumber: UInt64)
        /// A frame or period the device produced (or should have) that never arrived.
        case dropped(sequenceNumber: UInt64, presentationTime: CMTime, reason: DropReason)
        /// The device stopped by itself: `AVError.deviceWasDisconnected` (unplugged),
        /// `.deviceInUseByAnotherApplication` (taken by another process), or `.mediaDiscontinuity` (stalled for
        /// good). The last event of the stream.
        case failed(AVError)

        /// The sample of a `.sample` event.
        public var sample: CMSampleBuffer? {
            if case .sample(let sample, _) = self { sample } else { nil }
        }
    }

    /// No event arrived in time.
    public struct Timeout: Error, CustomStringConvertible {
        /// What the tap was waiting for.
        public let description: String

        /// A timeout described for people.
        public init(description: String) {
            self.description = description
        }
    }

    private enum Wake: Sendable {
        case event(Event)
        case finished
        case timedOut
        case cancelled
    }

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Wake, Never>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var buffer: [Event] = []
        var waiter: Waiter?
        var isRunning = false
        /// Set by `stop()` and by a `.failed` event: no more events will come once the buffer is drained.
        var isFinished = true
        var generation: UInt64 = 0
        var nextWaiterID: UInt64 = 0
        var discarded = 0
        /// The tap's subscription to the device's stream hub while it runs.
        var subscription: Int?
    }

    /// The device the tap streams from.
    public let device: AVCaptureDevice
    /// The most events the tap keeps for a slow consumer before it discards the oldest.
    public let bufferLimit: Int
    /// Set by `init(device:handler:)`: events go to it on the capture thread instead of the queue.
    private let handler: (@Sendable (Event) -> Void)?
    private let state = Mutex(State())

    /// A tap on `device` that keeps up to `bufferLimit` events (4 by default: fewer than a camera's 8 pool
    /// buffers, so a slow consumer loses the oldest frames here rather than starving the camera). Audio periods
    /// are not pooled; give a microphone tap a larger limit to collect seconds of sound in one go.
    public init(device: AVCaptureDevice, bufferLimit: Int = 4) {
        precondition(bufferLimit >= 1, "a tap keeps at least one event")
        self.device = device
        self.bufferLimit = bufferLimit
        handler = nil
    }

    /// A tap that hands every event to `handler` on the device's capture thread as it happens, keeping nothing:
    /// the least any consumer of a device costs, for benchmarks that need the device's own cost as a baseline.
    /// `next`, `nextEvent` and `events` then see no events. `handler` runs while the device waits for it: return
    /// quickly, and let go of samples (a camera lends 8 pool buffers).
    public init(device: AVCaptureDevice, handler: @escaping @Sendable (Event) -> Void) {
        self.device = device
        bufferLimit = 1
        self.handler = handler
    }

    deinit {
        if let token = state.withLock({ $0.subscription }) { DeviceStreamHub.hub(for: device.backend).unsubscribe(token) }
    }

    /// Whether the tap has started the device and not stopped it (it may have failed since).
    public var isRunning: Bool { state.withLock { $0.isRunning } }

    /// How many events the tap discarded because the consumer was too slow (the oldest go first).
    public var discardedEventCount: Int { state.withLock { $0.discarded } }

    // MARK: Starting and stopping

    /// Starts the device streaming into the tap: its `activeFormat` at `activeVideoMinFrameDuration` (adjusted
    /// into the format's range if need be). Events left from an earlier run are discarded. Returns once the
    /// device's capture thread runs; a camera's torch is lit from here (when its mode asks for it).
    ///
    /// - Throws: `AVError.deviceNotConnected` when the device is unplugged, `.deviceInUseByAnotherApplication`
    ///   when another process holds it, `.formatUnsupported` when the device refuses its active format.
    public func start() throws {
        let backend = device.backend
        let configuration = device.streamConfiguration
        if case .invalid(let reason) = backend.validate(configuration) {
            throw AVError(.formatUnsupported, "\(device.localizedName) cannot stream its active format: \(reason)")
        }
        let generation = try state.withLock { state throws(AVError) -> UInt64 in
            guard !state.isRunning else {
                throw AVError(.operationNotAllowed, "this tap on \(device.localizedName) is already running")
            }
            state.generation += 1
            state.buffer = []
            state.isRunning = true
            state.isFinished = false
            return state.generation
        }
        do {
            // Through the device's hub, so a tap and a session can share the device, as two sessions can.
            let token = try DeviceStreamHub.hub(for: backend).subscribe(configuration) { [weak self] event in
                self?.receive(event, generation: generation)
            }
            state.withLock { $0.subscription = token }
        } catch {
            finish(generation: generation, isRunning: false)
            switch error.kind {
            case .disconnected:
                throw AVError(
                    .deviceNotConnected, "\(device.localizedName) is not connected",
                    suggestion: "Reconnect the device (VirtualCameraController.replug() for a virtual one).")
            case .busy:
                throw AVError(
                    .deviceInUseByAnotherApplication, "\(device.localizedName) is in use by another application")
            case .stalled, .io, .explained:
                throw error.avError(for: device)
            }
        }
    }

    /// Stops the device (returns once its capture thread has delivered its last event) and ends the events: a
    /// waiting consumer gets nil (`nextEvent`) or `Timeout`-free completion (`events` finishes). Events already
    /// queued can still be read. Does nothing when not running.
    public func stop() {
        let (wasRunning, token) = state.withLock { state in
            defer { state.subscription = nil }
            return (state.isRunning, state.subscription)
        }
        guard wasRunning else { return }
        if let token { DeviceStreamHub.hub(for: device.backend).unsubscribe(token) }
        let generation = state.withLock { $0.generation }
        finish(generation: generation, isRunning: false)
    }

    // MARK: Consuming

    /// The next event, waiting up to `timeout` for it; nil once the tap is stopped (or failed) and drained.
    ///
    /// - Throws: `CaptureDeviceTap.Timeout` when nothing arrives in time; `CancellationError` when the task is
    ///   cancelled while waiting.
    public func nextEvent(timeout: Duration = .seconds(5)) async throws -> Event? {
        switch await wait(timeout: timeout) {
        case .event(let event): return event
        case .finished: return nil
        case .timedOut: throw Timeout(description: "no event from \(device.localizedName) within \(timeout)")
        case .cancelled: throw CancellationError()
        }
    }

    /// The next `count` samples (frames or periods), skipping drop events, each waited for up to `timeout`.
    ///
    /// - Throws: the `AVError` of a device that fails meanwhile, `CaptureDeviceTap.Timeout` when a sample does not
    ///   arrive in time or the tap is stopped first, `CancellationError` on cancellation.
    public func next(_ count: Int, timeout: Duration = .seconds(5)) async throws -> [CMSampleBuffer] {
        var samples: [CMSampleBuffer] = []
        samples.reserveCapacity(count)
        while samples.count < count {
            switch try await nextEvent(timeout: timeout) {
            case .sample(let sample, _): samples.append(sample)
            case .dropped: continue
            case .failed(let error): throw error
            case nil:
                throw Timeout(description: "the tap on \(device.localizedName) stopped after \(samples.count) samples")
            }
        }
        return samples
    }

    /// The next sample (frame or period), skipping drop events (see `next(_:timeout:)`).
    public func nextSample(timeout: Duration = .seconds(5)) async throws -> CMSampleBuffer {
        try await next(1, timeout: timeout)[0]
    }

    /// The events as an `AsyncStream`, for `for await event in tap.events { … }`: finishes when the tap is stopped
    /// or after `.failed`. Waits without a timeout; shares the tap's one queue with `next` and `nextEvent`.
    public var events: AsyncStream<Event> {
        AsyncStream(unfolding: { [self] in
            switch await wait(timeout: nil) {
            case .event(let event): event
            case .finished, .timedOut, .cancelled: nil
            }
        })
    }

    // MARK: Internals

    private func wait(timeout: Duration?) async -> Wake {
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Wake, Never>) in
                let immediate: Wake? = state.withLock { state in
                    if !state.buffer.isEmpty { return .event(state.buffer.removeFirst()) }
                    if state.isFinished { return .finished }
                    precondition(state.waiter == nil, "CaptureDeviceTap: one consumer at a time")
                    state.waiter = Waiter(id: id, continuation: continuation)
                    return nil
                }
                if let immediate {
                    continuation.resume(returning: immediate)
                    return
                }
                guard let timeout else { return }
                let timer = Task { [weak self] in
                    try? await Task.sleep(for: timeout)
                    if !Task.isCancelled { self?.wake(id, with: .timedOut) }
                }
                // The waiter may already be gone (an event came first): then the timer has nothing to do.
                let stored = state.withLock { state in
                    guard state.waiter?.id == id else { return false }
                    state.waiter?.timer = timer
                    return true
                }
                if !stored { timer.cancel() }
            }
        } onCancel: {
            wake(id, with: .cancelled)
        }
    }

    /// Resumes waiter `id` with `wake`, if it is still waiting.
    private func wake(_ id: UInt64, with wake: Wake) {
        let waiter = state.withLock { state -> Waiter? in
            guard state.waiter?.id == id else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.timer?.cancel()
        waiter?.continuation.resume(returning: wake)
    }

    /// The sink, on the device's capture thread: hands the event to a waiting consumer or queues it, discarding
    /// the oldest when full. Never blocks beyond the mutex.
    private func receive(_ streamEvent: StreamEvent, generation: UInt64) {
        let event: Event
        switch streamEvent {
        case .output(let sample, let sequence):
            event = .sample(sample, sequenceNumber: sequence)
        case .dropped(let sequence, let time, let reason):
            event = .dropped(sequenceNumber: sequence, presentationTime: time, reason: DropReason(reason))
        case .fault(let fault):
            event = .failed(Self.error(for: fault, device: device))
        }
        let isLast = if case .failed = event { true } else { false }
        if let handler {
            handler(event)
            if isLast { finish(generation: generation, isRunning: true) }
            return
        }
        let waiter = state.withLock { state -> Waiter? in
            guard state.generation == generation, !state.isFinished else { return nil }
            if isLast { state.isFinished = true }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.buffer.append(event)
            if state.buffer.count > bufferLimit {
                state.buffer.removeFirst()
                state.discarded += 1
            }
            return nil
        }
        waiter?.timer?.cancel()
        waiter?.continuation.resume(returning: .event(event))
    }

    /// Marks the run over and releases a waiting consumer.
    private func finish(generation: UInt64, isRunning: Bool) {
        let waiter = state.withLock { state -> Waiter? in
            guard state.generation == generation else { return nil }
            state.isRunning = isRunning
            state.isFinished = true
            guard state.buffer.isEmpty else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.timer?.cancel()
        waiter?.continuation.resume(returning: .finished)
    }

    private static func error(for fault: DeviceFault, device: AVCaptureDevice) -> AVError {
        switch fault.kind {
        case .disconnected:
            AVError(.deviceWasDisconnected, "\(device.localizedName) was disconnected")
        case .busy:
            AVError(.deviceInUseByAnotherApplication, "\(device.localizedName) was taken by another application")
        case .stalled:
            AVError(.mediaDiscontinuity, "\(device.localizedName) stopped delivering")
        case .io, .explained:
            fault.avError(for: device)
        }
    }
}
