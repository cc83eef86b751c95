import CX11
import Foundation

/// Why the X server cannot be used, with what a person should do about it.
///
/// Value type; safe to use from any thread.
package struct X11Unavailable: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    package var reason: String
    /// What to do about it.
    package var advice: String

    package init(reason: String, advice: String) {
        self.reason = reason
        self.advice = advice
    }

    package var description: String { "\(reason). \(advice)" }

    /// As a device fault whose advice names both.
    package var fault: DeviceFault { .explained(.disconnected, advice: description) }
}

/// One connection to an X server (`XOpenDisplay`), closed when the object goes (`XCloseDisplay`), with the
/// extensions screen capture uses queried once.
///
/// Threading: thread-bound. Xlib serializes calls on one `Display`, but a connection's event queue and the
/// per-thread error record (`CX11_takeLastError`) assume one user: each capture thread opens its own.
final class X11Connection: @unchecked Sendable {
    /// The `Display *`.
    let display: OpaquePointer
    /// The display name as given (`:0`), or `DISPLAY`'s value.
    let name: String
    let screen: Int32
    let root: Window
    /// The first event number of the Damage extension, or nil when the server lacks it.
    let damageEventBase: Int32?
    /// The first event number of XFixes, or nil when the server lacks it.
    let fixesEventBase: Int32?
    /// Whether MIT-SHM works (the server has it and shares memory with us: not over a network).
    let hasSharedMemory: Bool

    /// Opens `name`, or `DISPLAY` when nil.
    ///
    /// - Throws: `X11Unavailable` saying to set `DISPLAY` when there is none, or how to get permission
    ///   (`xhost`, `XAUTHORITY`) when the server refuses.
    init(name: String? = nil) throws(X11Unavailable) {
        CX11_installErrorHandlers()
        let environment = ProcessInfo.processInfo.environment
        guard let displayName = name ?? environment["DISPLAY"], !displayName.isEmpty else {
            throw X11Unavailable(
                reason: "no X server: DISPLAY is not set",
                advice:
                    "Run inside an X11 (or Xwayland) session, or set DISPLAY (e.g. DISPLAY=:0), or start one with"
                    + " `Xvfb :99 -screen 0 1920x1080x24 &` and DISPLAY=:99.")
        }
        guard let display = XOpenDisplay(displayName) else {
            let socket =
                displayName.hasPrefix(":") ? "/tmp/.X11-unix/X\(displayName.dropFirst().prefix { $0.isNumber })" : nil
            let serverExists = socket.map { FileManager.default.fileExists(atPath: $0) } ?? true
            throw serverExists
                ? X11Unavailable(
                    reason: "the X server \(displayName) refused the connection",
                    advice:
                        "This user may not use it: copy its cookie (`xauth`, XAUTHORITY=\(environment["XAUTHORITY"] ?? "~/.Xauthority")),"
                        + " or allow local users on the server with `xhost +SI:localuser:\(environment["USER"] ?? "$USER")`."
                )
                : X11Unavailable(
                    reason: "no X server at DISPLAY=\(displayName)",
                    advice:
                        "Start one (Xorg, or `Xvfb \(displayName) -screen 0 1920x1080x24`) or set DISPLAY to a running server."
                )
        }
        CX11_keepRunningOnConnectionLoss(display)
        self.display = display
        self.name = displayName
        self.screen = XDefaultScreen(display)
        self.root = XRootWindow(display, screen)
        var eventBase: Int32 = 0
        var errorBase: Int32 = 0
        damageEventBase = XDamageQueryExtension(display, &eventBase, &errorBase) != 0 ? eventBase : nil
        fixesEventBase = XFixesQueryExtension(display, &eventBase, &errorBase) != 0 ? eventBase : nil
        // MIT-SHM is only useful where the server can attach our segment: a local server.
        hasSharedMemory = XShmQueryExtension(display) != 0
    }

    deinit { XCloseDisplay(display) }

    /// The root window's size: the whole X screen, every monitor.
    var screenSize: (width: Int32, height: Int32) {
        (XDisplayWidth(display, screen), XDisplayHeight(display, screen))
    }

    /// The default visual's depth (24 on every current server; 30 on some deep-colour setups).
    var depth: Int32 { XDefaultDepth(display, screen) }

    /// The descriptor of the connection's socket, for `poll`.
    var descriptor: Int32 { XConnectionNumber(display) }

    /// The monitors RandR reports (one per active output or monitor), the primary one first; one monitor covering
    /// the screen where the server has no RandR 1.5.
    func monitors() -> [ScreenMonitor] {
        var count: Int32 = 0
        var found: [ScreenMonitor] = []
        var major: Int32 = 0
        var minor: Int32 = 0
        if XRRQueryVersion(display, &major, &minor) != 0, major > 1 || (major == 1 && minor >= 5),
            let list = XRRGetMonitors(display, root, 1, &count)
        {
            defer { XRRFreeMonitors(list) }
            for index in 0..<Int(count) {
                let monitor = list[index]
                let atomName = XGetAtomName(display, monitor.name)
                let monitorName = atomName.map { String(cString: $0) } ?? "monitor \(index)"
                if let atomName { XFree(atomName) }
                // The first output's XID identifies the monitor for the server's life; a monitor without outputs
                // (one made with `xrandr --setmonitor`) gets its position in the list, kept clear of XIDs.
                let identifier =
                    monitor.noutput > 0 ? UInt32(truncatingIfNeeded: monitor.outputs[0]) : UInt32(index + 1)
                found.append(
                    ScreenMonitor(
                        identifier: identifier, name: monitorName, isPrimary: monitor.primary != 0,
                        x: monitor.x, y: monitor.y, width: monitor.width, height: monitor.height))
            }
        }
        if found.isEmpty {
            let size = screenSize
            found = [
                ScreenMonitor(
                    identifier: 1, name: "screen", isPrimary: true, x: 0, y: 0, width: size.width, height: size.height)
            ]
        }
        // Stable: the primary first, then RandR's order.
        let primary = found.firstIndex(where: \.isPrimary) ?? 0
        let main = found.remove(at: primary)
        return [main] + found
    }
}
