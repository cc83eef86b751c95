import Synchronization

/// The screens of the X server named by `DISPLAY`: one `X11Screen` per RandR monitor, the primary one first.
///
/// Threading: thread safe. Each call opens a short-lived connection of its own.
package enum X11ScreenDriver {
    /// Screens seen before, by unique ID: the same monitor is the same backend object (one stream hub each).
    private static let known = Mutex<[String: X11Screen]>([:])

    /// The screens of `displayName` (nil: `DISPLAY`), the main one first.
    ///
    /// - Throws: `X11Unavailable` saying what to do when there is no server or this user may not use it.
    package static func screens(displayName: String? = nil) throws(X11Unavailable) -> [X11Screen] {
        let connection = try X11Connection(name: displayName)
        let monitors = connection.monitors()
        return known.withLock { known in
            monitors.map { monitor in
                let made = X11Screen(displayName: connection.name, monitor: monitor)
                // A monitor that moved or changed size is a new screen; an unchanged one keeps its backend.
                if let existing = known[made.identity.uniqueID], existing.monitor == monitor, existing.isConnected {
                    return existing
                }
                known[made.identity.uniqueID] = made
                return made
            }
        }
    }
}
