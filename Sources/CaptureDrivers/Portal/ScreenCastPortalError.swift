/// Why a ScreenCast portal call failed, in a sentence that says what to do.
///
/// Value type; safe to use from any thread.
package enum ScreenCastPortalError: Error, Equatable, CustomStringConvertible {
    /// No session bus: no address in the environment, or the bus refused the connection.
    case noSessionBus(String)
    /// The session bus has no xdg-desktop-portal, or the portal has no ScreenCast interface (no backend for it).
    case noScreenCastPortal(String)
    /// The user closed the portal's dialog, or its chooser, without choosing (the request's response 1).
    case cancelled(String)
    /// The portal (or its backend) could not start the cast: the request's response 2, or an error reply.
    case failed(String)
    /// The portal did not answer within the time given.
    case timedOut(String)

    package var description: String {
        switch self {
        case .noSessionBus(let text), .noScreenCastPortal(let text), .cancelled(let text), .failed(let text),
            .timedOut(let text):
            text
        }
    }
}
