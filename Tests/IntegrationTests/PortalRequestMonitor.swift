// Counts the ScreenCast portal's requests on a session bus as they pass: dbus-monitor, the bus's own monitor
// interface, an observer independent of the client it watches.

import Foundation
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `dbus-monitor` on `bus`, watching the ScreenCast portal's method calls (the front end's, that a client makes, and
/// the backend's, that the front end makes to show the dialog), from `init` until `stop()`.
///
/// Threading: use it from one thread (a test's); the pipe's handler writes through a mutex.
final class PortalRequestMonitor {
    private let process = Process()
    private let text = Text()

    private final class Text: Sendable {
        let value = Mutex("")
    }

    /// Started, and once dbus-monitor has said it is monitoring; nil (said why) where dbus-monitor is missing.
    static func start(bus: String, for test: String) throws -> PortalRequestMonitor? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-monitor") else {
            print("Skipping \(test): dbus-monitor is not installed (Debian package dbus-bin; make test installs it)")
            return nil
        }
        return try PortalRequestMonitor(bus: bus)
    }

    private init(bus: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-monitor")
        process.arguments = [
            "--address", bus, "type='method_call',interface='org.freedesktop.portal.ScreenCast'",
            "type='method_call',interface='org.freedesktop.impl.portal.ScreenCast'",
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        let text = self.text
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if !data.isEmpty { text.value.withLock { $0 += String(decoding: data, as: UTF8.self) } }
        }
        try process.run()
        // dbus-monitor prints the bus's NameAcquired/NameLost signals once it monitors: before that a call passes
        // unseen.
        _ = waitUntil(timeout: 10, every: 0.05) { text.value.withLock { $0.contains("NameLost") } || !process.isRunning }
        try #require(text.value.withLock { $0.contains("NameLost") }, "dbus-monitor did not start monitoring")
    }

    /// How many calls of `member` on `interface` have passed.
    func count(_ member: String, interface: String = "org.freedesktop.portal.ScreenCast") -> Int {
        let needle = "interface=\(interface); member=\(member)"
        return text.value.withLock { $0.components(separatedBy: needle).count - 1 }
    }

    /// The `cursor_mode` each `SelectSources` call a client made asked for, in order.
    var cursorModes: [UInt32] { selectSourcesOption("cursor_mode") }

    /// The `types` (1 monitor, 2 window) each `SelectSources` call a client made asked for, in order.
    var sourceTypes: [UInt32] { selectSourcesOption("types") }

    /// The uint32 option `key` of each `SelectSources` call a client made, in order (dbus-monitor prints a message
    /// as a header line, then its body; a vardict entry as `string "KEY"` and, on the next line, `variant uint32 N`).
    private func selectSourcesOption(_ key: String) -> [UInt32] {
        let lines = text.value.withLock { $0 }.split(separator: "\n")
        var values: [UInt32] = []
        var inSelectSources = false
        for (index, line) in lines.enumerated() {
            if !line.hasPrefix(" ") {  // A message's header.
                inSelectSources = line.contains("interface=org.freedesktop.portal.ScreenCast; member=SelectSources")
            } else if inSelectSources, line.contains("string \"\(key)\""), index + 1 < lines.count,
                let value = lines[index + 1].split(separator: " ").last.flatMap({ UInt32($0) })
            {
                values.append(value)
            }
        }
        return values
    }

    func stop() {
        // SIGKILL: the test process's children inherit its blocked signals, SIGTERM among them.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { stop() }
}
