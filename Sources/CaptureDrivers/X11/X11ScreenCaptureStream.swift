import CX11
import Dispatch
import Foundation
import OpenCoreMedia
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A running screen stream: one capture thread that waits for each frame's time on the host clock (`poll` on the X
/// connection and a wake-up eventfd, so X events are read as they come and `stop` is immediate), then grabs the
/// screen into a free shared-memory segment and hands it on as a pixel buffer over that segment: the server's copy
/// into the segment is the only one. With `removesDuplicateFrames`, a frame whose area Damage reports untouched
/// (and whose pointer did not move) is not grabbed at all, so an idle screen costs a wake-up and an event check.
///
/// Threading: thread safe; `stop` may be called from any thread and returns after the last event.
final class X11ScreenCaptureStream: Sendable {
    /// Segments the stream cycles through: what consumers may hold at once before frames drop as `OutOfBuffers`,
    /// plus the one being filled.
    static let bufferCount = 6

    private let stopRequested = Atomic<Bool>(false)
    private let wake: WakeEvent
    private let finished = DispatchSemaphore(value: 0)
    private let threadID = Mutex<pthread_t?>(nil)

    private init(wake: WakeEvent) { self.wake = wake }

    /// Opens the X server, makes the segments and starts the capture thread. Throws what keeps the screen from
    /// streaming (no server, no MIT-SHM, a screen depth other than 24), with what to do.
    static func start(
        screen: X11Screen, outputWidth: Int32, outputHeight: Int32, frameDuration: CMTime,
        sink: @escaping StreamSink
    ) throws(DeviceFault) -> X11ScreenCaptureStream {
        let grabber: X11ScreenGrabber
        do {
            grabber = try X11ScreenGrabber(
                screen: screen, outputWidth: outputWidth, outputHeight: outputHeight, frameDuration: frameDuration)
        } catch let failure {
            throw failure.fault
        }
        let wake: WakeEvent
        do {
            wake = try WakeEvent()
        } catch {
            throw .io(error)
        }
        let stream = X11ScreenCaptureStream(wake: wake)
        let thread = Thread { [stream] in
            stream.threadID.withLock { $0 = pthread_self() }
            stream.run(grabber, screen: screen, sink: sink)
            stream.finished.signal()
        }
        thread.name = "OpenAVCapture.X11Screen"
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

    private func run(_ grabber: X11ScreenGrabber, screen: X11Screen, sink: StreamSink) {
        let duration = grabber.frameNanoseconds
        var deadline = CMClock.hostNanosecondsNow()
        var sequence: UInt64 = 0
        while !stopRequested.load(ordering: .relaxed) {
            guard waitForFrameTime(deadline, grabber) else { break }
            let now = CMClock.hostNanosecondsNow()
            // Absolute deadlines do not drift. A frame grabbed clearly late (by more than a quarter frame) starts
            // the schedule again from itself: catching up would put the next frames closer together than
            // minFrameDuration allows.
            deadline = now - deadline > duration / 4 ? now + duration : deadline + duration
            switch grabber.nextFrame(at: now, settings: screen.settings) {
            case .unchanged:
                continue
            case .frame(let sample):
                sink(.output(sample, sequence: sequence))
            case .noFreeBuffer(let time):
                sink(.dropped(sequence: sequence, presentationTime: time, reason: .outOfBuffers))
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

    /// Sleeps until `deadline` (host nanoseconds), reading X events meanwhile; false when a stop was asked.
    private func waitForFrameTime(_ deadline: Int64, _ grabber: X11ScreenGrabber) -> Bool {
        var descriptors = [
            pollfd(fd: grabber.connection.descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            grabber.readEvents()
            let remaining = deadline - CMClock.hostNanosecondsNow()
            if remaining <= 0 { return !stopRequested.load(ordering: .relaxed) }
            // Milliseconds rounded up: the loop wakes at or just after the deadline, never before it.
            _ = poll(&descriptors, 2, Int32(clamping: (remaining + 999_999) / 1_000_000))
            if descriptors[1].revents != 0 || stopRequested.load(ordering: .relaxed) { return false }
            // A connection that hung up stays readable; the next request reports the loss, so do not spin here.
            if descriptors[0].revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 { return true }
        }
    }
}
