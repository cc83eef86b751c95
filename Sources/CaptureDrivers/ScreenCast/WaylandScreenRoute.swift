import Foundation
import Synchronization

/// How the screens of a Wayland session are reached: through the ScreenCast portal where the session bus has one,
/// through wlr-screencopy (`WaylandScreenDriver`) where it has none or the portal cannot start a cast, else an
/// error that names the packages.
///
/// The portal asks the user once per process: its session and streams are kept and listed again on every call (a
/// `restore_token` kept in `ScreenCastRestoreToken`'s file lets the next process skip the dialog). A portal that
/// failed to start is not asked again by this process; the fallback is said once on stderr.
///
/// `OPENAV_SCREENCAST=wlr` skips the portal (wlr-screencopy only); `portal` uses only the portal (no fallback).
///
/// Threading: thread safe; calls are serialized by a mutex (a first call may wait for the user's choice).
package enum WaylandScreenRoute {
    private struct Known {
        /// The bus and compositor the answer is for.
        var key: String
        var screens: [PortalScreen]?
        var fallbackReason: String?
    }

    private static let known = Mutex<Known?>(nil)
    /// The windows shared (`windows(displayName:…)`), with the key they are for.
    private static let knownWindows = Mutex<(key: String, screens: [PortalScreen])?>(nil)

    /// The screens of the compositor `displayName` names, reached as described above. A portal session made by
    /// this call gives the cursor as `capturingCursor` says (its cursor mode is fixed at `SelectSources`); screens
    /// already kept are returned as they are.
    package static func screens(
        displayName: String, capturingCursor: Bool = true,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ScreenUnavailable) -> [any ScreenDevice] {
        let mode = environment["OPENAV_SCREENCAST"]?.lowercased() ?? "auto"
        if mode == "wlr" { return try WaylandScreenDriver.screens(displayName: displayName) }
        let key = (CameraPortal.sessionBusAddress(environment: environment) ?? "") + "|" + displayName
        let outcome = try known.withLock { (known) throws(ScreenUnavailable) -> Result<[PortalScreen], Fallback> in
            if let current = known, current.key == key {
                if let screens = current.screens, screens.allSatisfy(\.isConnected) { return .success(screens) }
                if let reason = current.fallbackReason { return .failure(Fallback(reason: reason, said: true)) }
            }
            switch portalScreens(capturingCursor: capturingCursor, environment: environment) {
            case .success(let screens):
                known = Known(key: key, screens: screens)
                return .success(screens)
            case .failure(.cancelled(let text)):
                throw ScreenUnavailable(
                    reason: "the screen sharing request was cancelled",
                    advice: text.replacingOccurrences(of: "The screen sharing request was cancelled ", with: ""))
            case .failure(let failure):
                if case .noSessionBus = failure { return .failure(Fallback(reason: failure.description, said: true)) }
                if case .noScreenCastPortal = failure {
                    return .failure(Fallback(reason: failure.description, said: true))
                }
                known = Known(key: key, fallbackReason: failure.description)
                return .failure(Fallback(reason: failure.description, said: false))
            }
        }
        switch outcome {
        case .success(let screens):
            return screens
        case .failure(let fallback) where mode == "portal":
            throw ScreenUnavailable(
                reason: "the ScreenCast portal gives no screen (OPENAV_SCREENCAST=portal): \(fallback.reason)",
                advice: ScreenCastPortal.packageAdvice)
        case .failure(let fallback):
            if !fallback.said {
                FileHandle.standardError.write(
                    Data(("OpenAVCapture: the ScreenCast portal could not share the screen (\(fallback.reason)); "
                        + "reading the screens through wlr-screencopy instead\n").utf8))
            }
            do {
                return try WaylandScreenDriver.screens(displayName: displayName)
            } catch where fallback.said {
                throw error
            } catch {
                throw ScreenUnavailable(
                    reason: "the ScreenCast portal could not share the screen (\(fallback.reason)), and \(error.reason)",
                    advice: error.advice)
            }
        }
    }

    /// Why the portal was not used, and whether that needs no line of its own (no portal at all is the ordinary
    /// case on a wlroots desktop without xdg-desktop-portal-wlr).
    private struct Fallback: Error {
        var reason: String
        var said: Bool
    }

    /// A new portal session whose stream gives the cursor as `capturingCursor` says (`CursorModes.forCapture`), with
    /// the stored restore token (so the portal reuses the user's remembered choice without asking), its token stored
    /// for the next one.
    package static func session(
        capturingCursor: Bool, sources: ScreenCastPortal.SourceTypes = .monitor, environment: [String: String]
    ) throws(ScreenCastPortalError) -> ScreenCastSession {
        let portal = try ScreenCastPortal.open(environment: environment)
        guard !portal.availableSourceTypes.intersection(sources).isEmpty else {
            throw .failed(
                "The ScreenCast portal offers no \(sources == .window ? "window" : "monitor") sharing "
                    + "(its AvailableSourceTypes is \(portal.availableSourceTypes.rawValue)).")
        }
        var request = ScreenCastPortal.SessionRequest()
        request.sources = sources
        request.cursorMode = .forCapture(
            capturingCursor: capturingCursor, available: portal.availableCursorModes, environment: environment)
        request.restoreToken = ScreenCastRestoreToken.load(environment: environment)
        let session = try portal.startSession(request)
        if let token = session.restoreToken { ScreenCastRestoreToken.save(token, environment: environment) }
        return session
    }

    /// The windows the user shares through the portal (`SelectSources` types WINDOW), kept as `screens` keeps its
    /// monitors: wlr-screencopy shares no windows, so there is no fallback.
    package static func windows(
        displayName: String, capturingCursor: Bool = true,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ScreenUnavailable) -> [any ScreenDevice] {
        let key = (CameraPortal.sessionBusAddress(environment: environment) ?? "") + "|" + displayName
        return try knownWindows.withLock { (known) throws(ScreenUnavailable) -> [any ScreenDevice] in
            if let current = known, current.key == key, current.screens.allSatisfy(\.isConnected) {
                return current.screens
            }
            switch portalScreens(capturingCursor: capturingCursor, sources: .window, environment: environment) {
            case .success(let screens):
                known = (key, screens)
                return screens
            case .failure(let failure):
                throw ScreenUnavailable(
                    reason: "no window can be shared: \(failure.description)",
                    advice: "Window capture needs a ScreenCast portal that shares windows (xdg-desktop-portal-gnome, "
                        + "xdg-desktop-portal-kde).")
            }
        }
    }

    /// The kept portal screen or window whose display ID is `identifier`, if any.
    package static func kept(identifier: UInt32) -> (any ScreenDevice)? {
        let screens = (known.withLock { $0?.screens } ?? []) + (knownWindows.withLock { $0?.screens } ?? [])
        return screens.first { $0.monitor.identifier == identifier }
    }

    /// A session through the portal with the cursor as `capturingCursor` says, and its streams as screens.
    private static func portalScreens(
        capturingCursor: Bool, sources: ScreenCastPortal.SourceTypes = .monitor, environment: [String: String]
    ) -> Result<[PortalScreen], ScreenCastPortalError> {
        do throws(ScreenCastPortalError) {
            let session = try session(capturingCursor: capturingCursor, sources: sources, environment: environment)
            let screens = session.streams.enumerated().compactMap { order, stream -> PortalScreen? in
                guard let size = stream.size, size.width > 0, size.height > 0 else { return nil }
                return PortalScreen(
                    session: session, stream: stream, size: size, order: order, environment: environment)
            }
            guard !screens.isEmpty else {
                throw .failed("The ScreenCast portal's streams carry no size, so their format is unknown.")
            }
            return .success(screens)
        } catch {
            return .failure(error)
        }
    }
}
