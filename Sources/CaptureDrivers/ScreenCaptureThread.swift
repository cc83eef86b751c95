import Dispatch
import Foundation
import OpenCoreMedia
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What a screen grabber made of one frame time.
enum ScreenGrabOutcome {
    /// `removesDuplicateFrames` and nothing changed: no frame, nothing dropped.
    case unchanged
    case frame(CMSampleBuffer)
    /// Every buffer is held by consumers: the frame at that time is dropped as `OutOfBuffers`.
    case noFreeBuffer(CMTime)
    /// The display server did not answer within its time: the frame at that time is dropped as a discontinuity.
    case unanswered(CMTime)
    case failed(DeviceFault)
    /// A stop was asked while the grabber waited.
    case stopped
}

/// The side of a screen stream that differs per display server (X11, Wayland): grabbing the picture at a frame
/// time, and what to watch while waiting for the next one.
///
/// Threading: used only on the stream's capture thread.
protocol ScreenGrabber {
    /// The time between frames (`minFrameDuration`), in nanoseconds.
    var frameNanoseconds: Int64 { get }
    /// A descriptor whose events the grabber reads while the thread waits (X11's connection), or nil.
    var eventDescriptor: Int32? { get }
    /// Reads what came on ``eventDescriptor`` (damage, pointer motion) without waiting.
    func readEvents()
    func nextFrame(at hostNanoseconds: Int64, settings: ScreenCaptureSettings) -> ScreenGrabOutcome
}

extension ScreenGrabber {
    var eventDescriptor: Int32? { nil }
    func readEvents() {}
}

/// A running screen stream: one capture thread that waits for each frame's time on the host clock (`poll` on a
/// wake-up eventfd and the grabber's event descriptor, so events are read as they come and `stop` is immediate),
/// then asks the grabber for the frame and hands it on. Deadlines are absolute, so they do not drift; a frame
/// grabbed clearly late (by more than a quarter frame) starts the schedule again from itself, since catching up
/// would put the next frames closer together than `minFrameDuration` allows.
///
/// Threading: thread safe; `stop` may be called from any thread and returns after the last event.
final class ScreenCaptureThread: Sendable {
    /// Buffers a stream cycles through: what consumers may hold at once before frames drop as `OutOfBuffers`, plus
    /// the one being filled.
    static let bufferCount = 6

    private let stopRequested = Atomic<Bool>(false)
    private let wake: WakeEvent
    private let finished = DispatchSemaphore(value: 0)
    private let threadID = Mutex<pthread_t?>(nil)
    /// Counts the frame times the thread has looked at the screen, for tests of what a still screen delivers.
    private let framesConsidered: ScreenFrameCount

    init(wake: WakeEvent, counting framesConsidered: ScreenFrameCount = ScreenFrameCount()) {
        self.wake = wake
        self.framesConsidered = framesConsidered
    }

    /// Starts the thread: `grabber` (made for `wake`'s descriptor where it waits itself) grabs each frame with the
    /// settings `settings` gives at that time; `connectionWasLost` runs before a disconnection is reported.
    func start(
        name: String, grabber: sending any ScreenGrabber, settings: @escaping @Sendable () -> ScreenCaptureSettings,
        connectionWasLost: @escaping @Sendable () -> Void, sink: @escaping StreamSink
    ) {
        let grabber = UncheckedGrabber(grabber: grabber)
        let thread = Thread { [self] in
            threadID.withLock { $0 = pthread_self() }
            run(grabber.grabber, settings: settings, connectionWasLost: connectionWasLost, sink: sink)
            finished.signal()
        }
        thread.name = name
        thread.start()
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

    private func run(
        _ grabber: any ScreenGrabber, settings: () -> ScreenCaptureSettings, connectionWasLost: () -> Void,
        sink: StreamSink
    ) {
        let duration = grabber.frameNanoseconds
        var deadline = CMClock.hostNanosecondsNow()
        var sequence: UInt64 = 0
        while !stopRequested.load(ordering: .relaxed) {
            guard waitForFrameTime(deadline, grabber) else { break }
            let now = CMClock.hostNanosecondsNow()
            deadline = now - deadline > duration / 4 ? now + duration : deadline + duration
            let outcome = grabber.nextFrame(at: now, settings: settings())
            // Counted after the outcome was handed on (the end of this pass): a test that sees the count knows any
            // frame of that time has left the thread.
            defer { framesConsidered.increment() }
            switch outcome {
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
                    if fault.kind == .disconnected { connectionWasLost() }
                    sink(.fault(fault))
                }
                return
            }
            sequence += 1
        }
    }

    /// Sleeps until `deadline` (host nanoseconds), reading the grabber's events meanwhile; false when a stop was
    /// asked.
    private func waitForFrameTime(_ deadline: Int64, _ grabber: any ScreenGrabber) -> Bool {
        var descriptors = [pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0)]
        if let events = grabber.eventDescriptor {
            descriptors.append(pollfd(fd: events, events: Int16(POLLIN), revents: 0))
        }
        while true {
            grabber.readEvents()
            let remaining = deadline - CMClock.hostNanosecondsNow()
            if remaining <= 0 { return !stopRequested.load(ordering: .relaxed) }
            // Milliseconds rounded up: the loop wakes at or just after the deadline, never before it.
            _ = poll(&descriptors, nfds_t(descriptors.count), Int32(clamping: (remaining + 999_999) / 1_000_000))
            if descriptors[0].revents != 0 || stopRequested.load(ordering: .relaxed) { return false }
            // A connection that hung up stays readable; the next request reports the loss, so do not spin here.
            if descriptors.count > 1, descriptors[1].revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 { return true }
        }
    }
}

/// How many frame times a screen's capture threads have looked at the screen (grabbed, or found unchanged): what a
/// test waits on instead of a stretch of host time when it checks that a still screen delivers nothing.
///
/// Threading: thread safe (an atomic).
package final class ScreenFrameCount: Sendable {
    private let count = Atomic<Int>(0)

    package init() {}

    package var value: Int { count.load(ordering: .acquiring) }

    func increment() { count.add(1, ordering: .releasing) }
}

/// Carries the grabber to its thread, the only one that uses it.
private struct UncheckedGrabber: @unchecked Sendable {
    let grabber: any ScreenGrabber
}

/// What a screen device keeps: the settings its next frames capture, its running capture thread, and whether its
/// display server is still there. X11 and Wayland screens differ only in the grabber they start it with.
///
/// Threading: thread safe (a mutex); `start`/`stop` are serialized by the caller.
final class ScreenStreaming: Sendable {
    private struct State {
        var settings: ScreenCaptureSettings
        var thread: ScreenCaptureThread?
        var isConnected = true
    }

    private let state: Mutex<State>
    /// The frame times every capture thread of the screen has looked at, in all.
    let framesConsidered = ScreenFrameCount()

    init(settings: ScreenCaptureSettings) { state = Mutex(State(settings: settings)) }

    var settings: ScreenCaptureSettings {
        get { state.withLock { $0.settings } }
        set { state.withLock { $0.settings = newValue } }
    }

    var isConnected: Bool { state.withLock { $0.isConnected } }

    /// The display server went away: the screen is gone for good (a new server is a new screen).
    func connectionWasLost() { state.withLock { $0.isConnected = false } }

    /// A wake-up event for a new capture thread, or the fault that keeps it from being made.
    static func makeWake() throws(DeviceFault) -> WakeEvent {
        do {
            return try WakeEvent()
        } catch {
            throw .io(error)
        }
    }

    /// Starts a capture thread named `name` over `grabber`, woken by `wake` (the one the grabber was made with).
    func start(name: String, wake: WakeEvent, grabber: sending any ScreenGrabber, sink: @escaping StreamSink) {
        let thread = ScreenCaptureThread(wake: wake, counting: framesConsidered)
        thread.start(
            name: name, grabber: grabber, settings: { [self] in settings },
            connectionWasLost: { [self] in connectionWasLost() }, sink: sink)
        state.withLock { $0.thread = thread }
    }

    func stop() {
        let thread = state.withLock { state in
            defer { state.thread = nil }
            return state.thread
        }
        thread?.stop()
    }
}
