import Dispatch
import Foundation
import OpenCoreMedia
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A running Wayland screen stream: one capture thread that waits for each frame's time on the host clock (`poll`
/// on a wake-up eventfd, so `stop` is immediate), then asks the compositor for a copy of the area and hands the
/// copy on. With `removesDuplicateFrames` the copy waits for damage until the next frame time, so an idle screen
/// delivers nothing and costs one request per frame time; without it every frame time delivers the screen as it
/// is, repeating an unchanged picture, as the X11 stream does.
///
/// Threading: thread safe; `stop` may be called from any thread and returns after the last event.
final class WaylandScreenCaptureStream: Sendable {
    /// Buffers the stream cycles through: what consumers may hold at once before frames drop as `OutOfBuffers`,
    /// plus the one being filled.
    static let bufferCount = 6

    private let stopRequested = Atomic<Bool>(false)
    private let wake: WakeEvent
    private let finished = DispatchSemaphore(value: 0)
    private let threadID = Mutex<pthread_t?>(nil)

    private init(wake: WakeEvent) { self.wake = wake }

    /// Connects to the compositor and starts the capture thread. Throws what keeps the screen from streaming (no
    /// compositor, the output gone), with what to do.
    static func start(
        screen: WaylandScreen, outputWidth: Int32, outputHeight: Int32, frameDuration: CMTime,
        sink: @escaping StreamSink
    ) throws(DeviceFault) -> WaylandScreenCaptureStream {
        let wake: WakeEvent
        do {
            wake = try WakeEvent()
        } catch {
            throw .io(error)
        }
        let grabber = try WaylandScreenGrabber(
            screen: screen, outputWidth: outputWidth, outputHeight: outputHeight, frameDuration: frameDuration,
            wakeDescriptor: wake.descriptor)
        let stream = WaylandScreenCaptureStream(wake: wake)
        let thread = Thread { [stream] in
            stream.threadID.withLock { $0 = pthread_self() }
            stream.run(grabber, screen: screen, sink: sink)
            stream.finished.signal()
        }
        thread.name = "OpenAVCapture.WaylandScreen"
        thread.start()
        return stream
    }

    /// Asks the thread to end and waits for it (unless called from the capture thread itself, from a sink).
    func stop() {
        stopRequested.store(true, ordering: .relaxed)
        wake.signal()
        let isCaptureThread = threadID.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        guard !isCaptureThread else { return }
        finished.wait()
        finished.signal()
    }

    private func run(_ grabber: WaylandScreenGrabber, screen: WaylandScreen, sink: StreamSink) {
        let duration = grabber.frameNanoseconds
        var deadline = CMClock.hostNanosecondsNow()
        var sequence: UInt64 = 0
        while !stopRequested.load(ordering: .relaxed) {
            guard waitUntil(deadline) else { break }
            let now = CMClock.hostNanosecondsNow()
            // As the X11 stream: absolute deadlines, restarted from a frame grabbed more than a quarter frame late.
            deadline = now - deadline > duration / 4 ? now + duration : deadline + duration
            switch grabber.nextFrame(at: now, settings: screen.settings) {
            case .unchanged:
                continue
            case .stopped:
                return
            case .frame(let sample):
                sink(.output(sample, sequence: sequence))
            case .noFreeBuffer(let time):
                sink(.dropped(sequence: sequence, presentationTime: time, reason: .outOfBuffers))
            case .unanswered(let time):
                sink(.dropped(sequence: sequence, presentationTime: time, reason: .discontinuity))
            case .failed(let fault):
                if !stopRequested.load(ordering: .relaxed) {
                    if fault.kind == .disconnected { screen.connectionWasLost() }
                    sink(.fault(fault))
                }
                return
            }
            sequence += 1
        }
    }

    /// Sleeps until `deadline` (host nanoseconds); false when a stop was asked.
    private func waitUntil(_ deadline: Int64) -> Bool {
        var descriptor = pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let remaining = deadline - CMClock.hostNanosecondsNow()
            if remaining <= 0 { return !stopRequested.load(ordering: .relaxed) }
            // Milliseconds rounded up: the loop wakes at or just after the deadline, never before it.
            _ = poll(&descriptor, 1, Int32(clamping: (remaining + 999_999) / 1_000_000))
            if descriptor.revents != 0 || stopRequested.load(ordering: .relaxed) { return false }
        }
    }
}
