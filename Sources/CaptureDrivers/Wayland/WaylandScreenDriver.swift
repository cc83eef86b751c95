import Synchronization

/// The outputs of the Wayland compositor `WAYLAND_DISPLAY` names, captured through wlr-screencopy: one
/// `WaylandScreen` per output, in the compositor's order (Wayland has no primary output; the first is the main one).
///
/// Threading: thread safe. Each call opens a short-lived connection of its own.
package enum WaylandScreenDriver {
    /// Screens seen before, by unique ID: the same output is the same backend object (one stream hub each).
    private static let known = Mutex<[String: WaylandScreen]>([:])

    /// The screens of the compositor `displayName` names.
    ///
    /// - Throws: `ScreenUnavailable` when the compositor cannot be reached, or offers neither wlr-screencopy nor
    ///   shared memory, saying which package gives a ScreenCast portal instead.
    package static func screens(displayName: String) throws(ScreenUnavailable) -> [WaylandScreen] {
        let connection = try WaylandConnection(name: displayName)
        guard connection.screencopyVersion > 0, connection.hasSharedMemory else {
            throw ScreenUnavailable(
                reason: "the Wayland compositor \(displayName) offers no wlr-screencopy, and no ScreenCast portal"
                    + " answered on the session bus",
                advice: "On GNOME, KDE and other compositors without wlr-screencopy, screens are shared through the"
                    + " ScreenCast portal: install xdg-desktop-portal and the desktop's backend"
                    + " (xdg-desktop-portal-gnome or xdg-desktop-portal-kde) and run in the desktop session (its"
                    + " DBUS_SESSION_BUS_ADDRESS). Unsetting WAYLAND_DISPLAY records the X server DISPLAY names,"
                    + " which under Wayland (Xwayland) shows only X clients.")
        }
        let outputs = connection.outputs.filter { $0.output.width > 0 && $0.output.height > 0 }
        return known.withLock { known in
            outputs.enumerated().map { order, entry in
                let output = entry.output
                let name = output.outputName.isEmpty ? "output-\(output.globalName)" : output.outputName
                let monitor = ScreenMonitor(
                    identifier: output.globalName, name: name, isPrimary: order == 0, x: output.x, y: output.y,
                    width: output.width, height: output.height)
                let made = WaylandScreen(
                    displayName: displayName, monitor: monitor, scale: max(1, output.scale),
                    description: output.outputDescription)
                // Another compositor at the same name (a restarted session) has new outputs, whatever they look like.
                if let existing = known[made.identity.uniqueID], existing.monitor == monitor,
                    existing.displayName == displayName, existing.scale == made.scale, existing.isConnected
                {
                    return existing
                }
                known[made.identity.uniqueID] = made
                return made
            }
        }
    }
}
