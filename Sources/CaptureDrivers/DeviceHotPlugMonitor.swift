import CLinuxMedia
import Foundation
import OpenCoreMedia
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One kernel uevent: a device appeared, went, or changed.
///
/// Value type; safe to use from any thread.
package struct Uevent: Sendable, Hashable {
    /// `add`, `remove`, `change`, `bind`, …
    package var action: String
    /// `video4linux`, `sound`, …
    package var subsystem: String
    /// The node's name under /dev (`video0`, `snd/pcmC0D0c`), when it has one.
    package var deviceName: String?
    /// The device's sysfs path (`/devices/platform/vivid.0/video4linux/video0`).
    package var devicePath: String

    package init(action: String, subsystem: String, deviceName: String?, devicePath: String) {
        self.action = action
        self.subsystem = subsystem
        self.deviceName = deviceName
        self.devicePath = devicePath
    }

    /// Parses a kernel uevent datagram: `ACTION@DEVPATH\0` then `KEY=VALUE\0` pairs. Nil for anything else (udev's
    /// `libudev` messages, which arrive on another group, or damaged ones).
    package init?(datagram: some Collection<UInt8>) {
        let fields = datagram.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        guard let header = fields.first, header.contains("@"), !header.hasPrefix("libudev") else { return nil }
        var values: [String: String] = [:]
        for field in fields.dropFirst() {
            guard let equals = field.firstIndex(of: "=") else { continue }
            values[String(field[..<equals])] = String(field[field.index(after: equals)...])
        }
        guard let action = values["ACTION"], let subsystem = values["SUBSYSTEM"], let path = values["DEVPATH"] else {
            return nil
        }
        self.init(action: action, subsystem: subsystem, deviceName: values["DEVNAME"], devicePath: path)
    }
}

/// Listens to the kernel's uevents (a NETLINK_KOBJECT_UEVENT socket) on a thread of its own and tells each
/// subsystem's handlers: the V4L2 driver listens to `video4linux`, the ALSA driver to `sound`. Handlers rescan
/// their devices; the registry then posts the connection events that become `.AVCaptureDeviceWasConnected` and
/// `.AVCaptureDeviceWasDisconnected`.
///
/// The kernel's event arrives before udev has made the node and set its permissions, so an `add` is handled again
/// a few times over the next two seconds (`followUpDelays`); a rescan that finds the node already known does
/// nothing.
///
/// Threading: thread safe. Handlers run on the monitor's thread, one at a time, and must not block for long.
package final class DeviceHotPlugMonitor: Sendable {
    package typealias Handler = @Sendable (Uevent) -> Void

    /// The monitor of the process, started by the first handler.
    package static let shared = DeviceHotPlugMonitor()

    /// When an `add` is handled again, after udev has had time to make the node.
    static let followUpDelays: [Double] = [0.1, 0.5, 2]

    private struct State {
        var handlers: [String: [Handler]] = [:]
        var isRunning = false
        /// Why the monitor could not start (no netlink here), for diagnostics.
        var failure: Errno?
    }

    private let state = Mutex(State())
    /// Whether the monitor opens the kernel's socket (false: a test dispatches events itself).
    private let listensToKernel: Bool

    package init(listensToKernel: Bool = true) {
        self.listensToKernel = listensToKernel
    }

    /// Calls `handler` with every uevent of `subsystem` from now on; starts the monitor's thread if needed.
    package func addHandler(subsystem: String, _ handler: @escaping Handler) {
        let start = state.withLock { state in
            state.handlers[subsystem, default: []].append(handler)
            defer { state.isRunning = true }
            return !state.isRunning && listensToKernel
        }
        if start { startThread() }
    }

    /// Why the monitor is not listening, when it could not open its socket.
    package var failure: Errno? { state.withLock { $0.failure } }

    /// Hands an event to its subsystem's handlers (the monitor's thread does this for each datagram; tests may too).
    package func dispatch(_ event: Uevent) {
        let handlers = state.withLock { $0.handlers[event.subsystem] ?? [] }
        for handler in handlers { handler(event) }
    }

    private func startThread() {
        let descriptor = CLinuxMedia_uevent_socket()
        guard descriptor >= 0 else {
            let error = Errno(rawValue: errno)
            state.withLock { $0.failure = error }
            return
        }
        let thread = Thread { [self] in listen(on: descriptor) }
        thread.name = "OpenAVCapture hot-plug"
        thread.start()
    }

    /// The thread's body: poll the socket, read each datagram, dispatch it; follow-ups for `add`s when due.
    private func listen(on descriptor: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var followUps: [(due: Int64, event: Uevent)] = []
        var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        while true {
            let now = CMClock.hostNanosecondsNow()
            let ready = followUps.filter { $0.due <= now }
            followUps.removeAll { $0.due <= now }
            for followUp in ready { dispatch(followUp.event) }
            let timeout = followUps.map { Int32(clamping: max(0, ($0.due - now) / 1_000_000)) }.min() ?? -1
            guard (try? SystemCalls.live.poll(&descriptors, timeout: timeout)) != nil else { continue }
            guard descriptors[0].revents & Int16(POLLIN) != 0 else { continue }
            while true {
                let length = buffer.withUnsafeMutableBytes {
                    CLinuxMedia_recv(descriptor, $0.baseAddress, UInt($0.count))
                }
                guard length > 0 else { break }
                guard let event = Uevent(datagram: buffer[..<Int(length)]) else { continue }
                dispatch(event)
                if event.action == "add" {
                    let base = CMClock.hostNanosecondsNow()
                    followUps += Self.followUpDelays.map { (base + Int64($0 * 1e9), event) }
                }
            }
        }
    }
}

