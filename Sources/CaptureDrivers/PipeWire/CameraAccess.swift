import Foundation
import Synchronization

/// Apple's camera authorization where the desktop has a camera portal (`org.freedesktop.portal.Camera`: always in a
/// Flatpak sandbox, and on most desktops): the permission store's decision for this app, the portal's dialog when
/// asked, and the portal's PipeWire remote for capture once granted. Where there is no portal, `permission` is nil
/// and nothing changes (cameras are authorized when their nodes can be opened).
///
/// A portal that is absent is looked for again at most every five seconds (a desktop session starting its portal
/// on demand); one that is there is kept.
///
/// Threading: thread safe (a mutex guards the portal found).
package final class CameraAccess: Sendable {
    /// The process's, reading the process's environment.
    package static let shared = CameraAccess()

    private struct State {
        var portal: CameraPortal?
        var lastLookup: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let environment: @Sendable () -> [String: String]

    package init(environment: @escaping @Sendable () -> [String: String] = { ProcessInfo.processInfo.environment }) {
        self.environment = environment
    }

    /// The camera portal, when the session bus has one.
    package var portal: CameraPortal? {
        let now = ContinuousClock.now
        if let known = state.withLock({ state -> CameraPortal?? in
            if let portal = state.portal { return .some(portal) }
            if let last = state.lastLookup, now - last < .seconds(5) { return .some(nil) }
            return nil
        }) {
            return known
        }
        // Without a bus this returns at once; with one, the portal answers or the bus says it is not there.
        let found = CameraPortal.connect(environment: environment(), timeout: .seconds(5))
        state.withLock { state in
            state.portal = found
            state.lastLookup = now
        }
        return found
    }

    /// The permission store's decision for this app, or nil where there is no portal.
    package var permission: CameraPortalPermission? {
        portal?.storedPermission()
    }

    /// Asks the portal (which shows the desktop's dialog when nothing is decided); nil where there is no portal.
    /// Blocks until the user answers.
    package func requestAccess() -> Bool? {
        guard let portal else { return nil }
        return (try? portal.accessCamera()) ?? false
    }

    /// The portal's PipeWire remote, when the portal grants the camera: a file descriptor for a connection that
    /// sees the cameras only. Nil without a portal or without permission.
    package func pipeWireRemote() -> Int32? {
        guard let portal, portal.storedPermission() == .granted else { return nil }
        return try? portal.openPipeWireRemote()
    }

    /// What to tell a user the portal refused.
    package static let deniedAdvice =
        "The desktop's camera permission denies this app the camera. Allow it in the desktop's privacy settings, "
        + "or with `flatpak permission-set devices camera APP-ID yes` (an empty APP-ID for programs run outside "
        + "a sandbox)."
}
