/// Why a camera portal call failed, in a sentence that says what to do.
///
/// Value type; safe to use from any thread.
package enum CameraPortalError: Error, Equatable, CustomStringConvertible {
    /// No session bus: no address in the environment, or the bus refused the connection.
    case noSessionBus(String)
    /// The session bus has no xdg-desktop-portal, or the portal has no Camera interface.
    case noCameraPortal(String)
    /// The portal refused: the app has no camera permission, or the administrator disabled the camera.
    case notAllowed(String)
    /// The portal did not answer within the time given.
    case timedOut(String)
    /// Anything else the bus or the portal answered.
    case failed(String)

    package var description: String {
        switch self {
        case .noSessionBus(let text), .noCameraPortal(let text), .notAllowed(let text), .timedOut(let text),
            .failed(let text):
            text
        }
    }
}
