import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The phase of a capture button press, with Apple's raw values.
public enum AVCaptureEventPhase: Int, Sendable, Hashable {
    case began = 0
    case ended = 1
    case cancelled = 2
}

/// One press of a capture button, as `AVCaptureEventInteraction` hands it to its handler.
///
/// Threading: immutable after creation; safe to share.
open class AVCaptureEvent: NSObject, @unchecked Sendable {
    /// Whether the press began, ended or was cancelled.
    public let phase: AVCaptureEventPhase

    init(phase: AVCaptureEventPhase) {
        self.phase = phase
        super.init()
    }
}

/// Hardware capture buttons: presses of a camera key (`KEY_CAMERA`) or the volume keys (`KEY_VOLUMEDOWN`,
/// `KEY_VOLUMEUP`) read from Linux input devices (evdev), handed to the application as Apple's capture events.
/// Apple's primary events come from the volume down button and Camera Control, secondary ones from volume up;
/// here `KEY_CAMERA` and `KEY_VOLUMEDOWN` are primary, `KEY_VOLUMEUP` secondary. With one handler, both go to it.
///
/// Apple's interaction is added to a view and is live while the view is in a window; Linux has no such view, so the
/// interaction is live between our `start(readingEventsAt:)` (an evdev node such as `/dev/input/event3`, which needs
/// read access: the `input` group) and `stop()`. A key's repeat is not a new press. Handlers run on the interaction's
/// reading thread (Apple: the main actor).
///
/// Threading: thread safe.
open class AVCaptureEventInteraction: NSObject, @unchecked Sendable {
    private let primary: (AVCaptureEvent) -> Void
    private let secondary: (AVCaptureEvent) -> Void
    private let enabled = Mutex(true)
    /// The reading thread's stop flag and descriptor, while reading.
    private let reading = Mutex<(fd: Int32, stop: Bool)?>(nil)

    /// An interaction whose every button press goes to `handler`.
    public convenience init(handler: @escaping (AVCaptureEvent) -> Void) {
        self.init(primary: handler, secondary: handler)
    }

    /// An interaction with separate handlers for the primary and secondary buttons.
    public init(
        primary primaryHandler: @escaping (AVCaptureEvent) -> Void,
        secondary secondaryHandler: @escaping (AVCaptureEvent) -> Void
    ) {
        primary = primaryHandler
        secondary = secondaryHandler
        super.init()
    }

    /// Whether presses reach the handlers (true by default). Turning it off mid-press cancels nothing already sent.
    open var isEnabled: Bool {
        get { enabled.withLock { $0 } }
        set { enabled.withLock { $0 = newValue } }
    }

    /// Ours: starts reading key events from the evdev node at `path` (`/dev/input/eventN`; any file or FIFO that
    /// carries `struct input_event`s) on a thread of its own, until `stop()` or the end of the stream.
    ///
    /// - Throws: `AVError(.applicationIsNotAuthorizedToUseDevice)` when the node cannot be read (join the `input`
    ///   group), `.deviceNotConnected` when it does not exist, `.unknown` when already reading.
    public func start(readingEventsAt path: String) throws {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code: AVError.Code = errno == EACCES ? .applicationIsNotAuthorizedToUseDevice : .deviceNotConnected
            throw AVError(code, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        let started = reading.withLock { state -> Bool in
            guard state == nil else { return false }
            state = (fd, false)
            return true
        }
        guard started else {
            close(fd)
            throw AVError(.unknown, "the interaction already reads events; call stop() first")
        }
        let thread = Thread { [self] in readLoop(fd) }
        thread.name = "AVCaptureEventInteraction"
        thread.start()
    }

    /// Ours: stops reading; returns at once (the thread ends within 100 ms and closes the node).
    public func stop() {
        reading.withLock { state in state?.stop = true }
    }

    private func readLoop(_ fd: Int32) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: EvdevEvent.size * 16)
        defer {
            close(fd)
            reading.withLock { $0 = nil }
        }
        while reading.withLock({ $0?.stop == false }) {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // Polled with a timeout so that stop() is seen without closing a descriptor another thread reads.
            guard poll(&descriptor, 1, 100) >= 0 || errno == EINTR else { return }
            guard descriptor.revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                return
            }
            if count == 0 { return }  // the end of the stream (a FIFO's writer closed, a device went away)
            pending.append(contentsOf: buffer[0..<count])
            for event in EvdevEvent.take(from: &pending) { handle(event) }
        }
    }

    /// Hands one evdev event to the interaction: a key press or release of a capture key becomes a capture event.
    func handle(_ event: EvdevEvent) {
        guard isEnabled, event.type == EvdevEvent.keyType else { return }
        let phase: AVCaptureEventPhase
        switch event.value {
        case 1: phase = .began
        case 0: phase = .ended
        default: return  // 2: auto-repeat
        }
        switch event.code {
        case EvdevEvent.keyCamera, EvdevEvent.keyVolumeDown: primary(AVCaptureEvent(phase: phase))
        case EvdevEvent.keyVolumeUp: secondary(AVCaptureEvent(phase: phase))
        default: break
        }
    }
}

/// One `struct input_event` of the Linux input layer (64-bit layout: a 16-byte `timeval`, then type, code, value).
struct EvdevEvent: Equatable, Sendable {
    static let size = 24
    static let keyType: UInt16 = 1  // EV_KEY
    static let keyVolumeDown: UInt16 = 114  // KEY_VOLUMEDOWN
    static let keyVolumeUp: UInt16 = 115  // KEY_VOLUMEUP
    static let keyCamera: UInt16 = 212  // KEY_CAMERA

    var type: UInt16
    var code: UInt16
    var value: Int32

    /// The events in `bytes`, whole ones only; the remainder (a partial event) is left in `bytes`.
    static func take(from bytes: inout [UInt8]) -> [EvdevEvent] {
        var events: [EvdevEvent] = []
        var offset = 0
        while bytes.count - offset >= size {
            func u16(_ at: Int) -> UInt16 { UInt16(bytes[offset + at]) | UInt16(bytes[offset + at + 1]) << 8 }
            let raw = UInt32(u16(20)) | UInt32(u16(22)) << 16
            events.append(EvdevEvent(type: u16(16), code: u16(18), value: Int32(bitPattern: raw)))
            offset += size
        }
        bytes.removeFirst(offset)
        return events
    }
}
