import Foundation

/// A synchronous client of xdg-desktop-portal's ScreenCast portal (`org.freedesktop.portal.ScreenCast`): the way
/// a Wayland desktop (GNOME, KDE, and wlroots compositors through xdg-desktop-portal-wlr) shares its screens. The
/// portal asks the user which monitor or window to share (a dialog, or xdg-desktop-portal-wlr's chooser), then
/// hands over a PipeWire node per choice.
///
/// `startSession(_:)` runs the whole exchange: `CreateSession`, `SelectSources` (the source types, the cursor mode,
/// `persist_mode` and a `restore_token` from an earlier session, so the portal need not ask again), `Start`. Each is a
/// request answered by a `Response` signal (`PortalBus`). The session then gives `OpenPipeWireRemote`, the PipeWire
/// connection on which the nodes can be read.
///
/// Through libdbus (`CDBus`), as `CameraPortal`, for the same reason: a few blocking requests, no GLib loop.
///
/// Threading: thread safe. Calls block the calling thread until the portal answers (`SelectSources` and `Start`
/// for as long as the user looks at the dialog, at most `dialogTimeout`).
package final class ScreenCastPortal: Sendable {
    static let interface = "org.freedesktop.portal.ScreenCast"

    /// What `SelectSources` may ask for (the portal's `types` bits).
    package struct SourceTypes: OptionSet, Sendable, Hashable {
        package let rawValue: UInt32
        package init(rawValue: UInt32) { self.rawValue = rawValue }
        package static let monitor = SourceTypes(rawValue: 1)
        package static let window = SourceTypes(rawValue: 2)
        package static let virtual = SourceTypes(rawValue: 4)
    }

    /// How the pointer reaches the stream (the portal's `cursor_mode` bits).
    package struct CursorModes: OptionSet, Sendable, Hashable {
        package let rawValue: UInt32
        package init(rawValue: UInt32) { self.rawValue = rawValue }
        package static let hidden = CursorModes(rawValue: 1)
        /// Drawn into the frames.
        package static let embedded = CursorModes(rawValue: 2)
        /// Sent beside the frames as metadata (a cursor bitmap and position).
        package static let metadata = CursorModes(rawValue: 4)
    }

    /// What a session asks for.
    ///
    /// Value type; safe to use from any thread.
    package struct SessionRequest: Sendable, Hashable {
        package var sources: SourceTypes = .monitor
        package var allowsMultiple = false
        /// nil leaves it to the portal (versions before 2 know no cursor modes).
        package var cursorMode: CursorModes? = .embedded
        /// 0 forget, 1 while the app runs, 2 until revoked: what the portal keeps of the user's choice.
        package var persistMode: UInt32 = 2
        /// A token from an earlier session's `Start`, so the portal reuses that choice without asking.
        package var restoreToken: String?
        package init() {}
    }

    /// The interface's version (4 in xdg-desktop-portal 1.16: persist modes and restore tokens).
    package let version: UInt32
    package let availableSourceTypes: SourceTypes
    package let availableCursorModes: CursorModes
    /// How long a user may take over the dialog (or a chooser) before the request is closed.
    package let dialogTimeout: Duration
    private let bus: PortalBus

    private init(bus: PortalBus, version: UInt32, sources: UInt32, cursors: UInt32, dialogTimeout: Duration) {
        self.bus = bus
        self.version = version
        availableSourceTypes = SourceTypes(rawValue: sources)
        availableCursorModes = CursorModes(rawValue: cursors)
        self.dialogTimeout = dialogTimeout
    }

    /// The ScreenCast portal of the session bus in `environment`; throws `.noSessionBus` or `.noScreenCastPortal`
    /// saying why there is none. `timeout` bounds each call that needs no user; `dialogTimeout` those that may.
    package static func open(
        environment: [String: String] = ProcessInfo.processInfo.environment, timeout: Duration = .seconds(10),
        dialogTimeout: Duration = .seconds(300)
    ) throws(ScreenCastPortalError) -> ScreenCastPortal {
        guard let address = CameraPortal.sessionBusAddress(environment: environment) else {
            throw .noSessionBus(
                "No D-Bus session bus: DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist; "
                    + "the ScreenCast portal needs the desktop session's bus.")
        }
        let bus: PortalBus
        do throws(DBusFailure) { bus = try PortalBus(address: address, callTimeout: timeout) } catch {
            throw .noSessionBus(
                "Cannot connect to the D-Bus session bus at \(address) (\(error)); check DBUS_SESSION_BUS_ADDRESS.")
        }
        do throws(DBusFailure) {
            let version = try bus.uint32Property(interface, "version") ?? 0
            let sources = try bus.uint32Property(interface, "AvailableSourceTypes") ?? SourceTypes.monitor.rawValue
            let cursors = version >= 2 ? try bus.uint32Property(interface, "AvailableCursorModes") ?? 0 : 0
            return ScreenCastPortal(
                bus: bus, version: version, sources: sources, cursors: cursors, dialogTimeout: dialogTimeout)
        } catch where error.name == DBusFailure.noReplyName {
            throw .timedOut(
                "xdg-desktop-portal did not answer within \(timeout) (\(error)); it may be hung or still starting: "
                    + "restart it (systemctl --user restart xdg-desktop-portal).")
        } catch where error.name == DBusFailure.serviceUnknownName {
            throw .noScreenCastPortal(
                "The session bus has no xdg-desktop-portal (\(error)). " + Self.packageAdvice)
        } catch {
            throw .noScreenCastPortal(
                "xdg-desktop-portal offers no ScreenCast interface (\(error)): no backend for it runs. "
                    + Self.packageAdvice)
        }
    }

    /// Which packages give a ScreenCast portal, for the messages.
    package static let packageAdvice =
        "Install xdg-desktop-portal and the desktop's backend: xdg-desktop-portal-gnome (GNOME), "
        + "xdg-desktop-portal-kde (KDE) or xdg-desktop-portal-wlr (sway and other wlroots compositors)."

    /// Creates a session, selects sources and starts it: the streams the user (or a restored choice) gave. Throws
    /// `.cancelled` when the user closed the dialog or chooser without choosing, `.failed` when the portal or its
    /// backend could not (the backend's log says why), `.timedOut` when nobody answered within `dialogTimeout`.
    package func startSession(_ request: SessionRequest) throws(ScreenCastPortalError) -> ScreenCastSession {
        let sessionToken = bus.nextToken()
        let created = try perform("CreateSession", arguments: { (_) throws(DBusFailure) in }, options: [
            ("session_handle_token", .string(sessionToken))
        ])
        guard let handle = created.message.vardictString(at: 1, key: "session_handle") else {
            throw .failed("The ScreenCast portal's CreateSession answered without a session handle.")
        }
        // From here on the session exists: any failure closes it.
        var started = false
        defer { if !started { bus.closeSession(handle) } }
        var options: [(key: String, value: DBusOptionValue)] = [
            ("types", .uint32(request.sources.intersection(availableSourceTypes).rawValue)),
            ("multiple", .boolean(request.allowsMultiple)),
        ]
        let cursorMode = request.cursorMode.flatMap { version >= 2 && availableCursorModes.contains($0) ? $0 : nil }
        if let cursorMode { options.append(("cursor_mode", .uint32(cursorMode.rawValue))) }
        if version >= 4 {
            options.append(("persist_mode", .uint32(request.persistMode)))
            // The portal refuses the whole request over a token that is not a UUID (a damaged file): leave it out.
            if let token = request.restoreToken, UUID(uuidString: token) != nil {
                options.append(("restore_token", .string(token)))
            }
        }
        _ = try perform("SelectSources", arguments: { (message) throws(DBusFailure) in try message.appendObjectPath(handle) },
            options: options)
        let start = try perform(
            "Start",
            arguments: { (message) throws(DBusFailure) in
                try message.appendObjectPath(handle)
                try message.append("")  // No parent window: a command-line program has none to give.
            }, options: [])
        guard let streams = start.message.screenCastStreams(at: 1), !streams.isEmpty else {
            throw .failed("The ScreenCast portal started a session with no stream in it.")
        }
        // The portal says a session ended (the user stopped sharing, the compositor went) by its Closed signal.
        do throws(DBusFailure) { try bus.watchClosed(handle) } catch {
            throw Self.failure(error, calling: "Start")
        }
        started = true
        return ScreenCastSession(
            bus: bus, handle: handle, streams: streams,
            restoreToken: start.message.vardictString(at: 1, key: "restore_token"), cursorMode: cursorMode,
            availableCursorModes: version >= 2 ? availableCursorModes : [])
    }

    /// One request: `method` of the ScreenCast interface with `arguments`, then the options with a fresh
    /// `handle_token`, and the response it ends with (code 0), else the error it means.
    private func perform(
        _ method: String, arguments: (DBusMessage) throws(DBusFailure) -> Void,
        options: [(key: String, value: DBusOptionValue)]
    ) throws(ScreenCastPortalError) -> PortalBus.Response {
        let token = bus.nextToken()
        let response: PortalBus.Response
        do {
            let message = try DBusMessage.methodCall(
                destination: PortalBus.portalName, path: PortalBus.portalPath, interface: Self.interface,
                member: method)
            try arguments(message)
            try message.appendOptions([("handle_token", .string(token))] + options)
            response = try bus.request(message, token: token, timeout: dialogTimeout)
        } catch let failure as DBusFailure {
            throw Self.failure(failure, calling: method)
        } catch PortalBus.Failure.bus(let failure) {
            throw Self.failure(failure, calling: method)
        } catch {
            throw .timedOut(
                "Nobody answered the screen sharing request (\(method)) within \(dialogTimeout): the portal's "
                    + "dialog was left open; it was closed. Try again and choose a screen.")
        }
        switch response.code {
        case 0: return response
        case 1:
            throw .cancelled(
                "The screen sharing request was cancelled (the portal's \(method) answered \"cancelled\": its dialog "
                    + "or chooser was closed without choosing a screen). Run again and choose a screen to share.")
        default:
            throw .failed(
                "The ScreenCast portal could not complete \(method) (response \(response.code)); its backend's log "
                    + "says why (journalctl --user -u xdg-desktop-portal and the backend's unit).")
        }
    }

    /// A bus failure as advice.
    static func failure(_ failure: DBusFailure, calling method: String) -> ScreenCastPortalError {
        switch failure.name {
        case DBusFailure.noReplyName:
            .timedOut(
                "xdg-desktop-portal did not answer \(method) in time (\(failure)); it may be hung: restart it "
                    + "(systemctl --user restart xdg-desktop-portal) and try again.")
        case DBusFailure.disconnectedName:
            .failed("The D-Bus session bus went away during \(method) (\(failure)); is the desktop session over?")
        default:
            .failed("The ScreenCast portal's \(method) failed: \(failure).")
        }
    }
}

/// A started ScreenCast session: the streams it gives and the token that restores the choice next time. The
/// portal ends it with the bus connection, or with `close()`.
///
/// Threading: thread safe.
package final class ScreenCastSession: Sendable {
    /// The session's object path.
    package let handle: String
    package let streams: [ScreenCastStream]
    /// What the portal gave to restore this choice (persist mode 1 or 2), or nil.
    package let restoreToken: String?
    /// The cursor mode the session was asked for, or nil when the portal offered none it could take (its default).
    package let cursorMode: ScreenCastPortal.CursorModes?
    /// What the portal offered (`AvailableCursorModes`); empty before version 2.
    package let availableCursorModes: ScreenCastPortal.CursorModes
    private let bus: PortalBus

    init(
        bus: PortalBus, handle: String, streams: [ScreenCastStream], restoreToken: String?,
        cursorMode: ScreenCastPortal.CursorModes?, availableCursorModes: ScreenCastPortal.CursorModes
    ) {
        self.availableCursorModes = availableCursorModes
        self.bus = bus
        self.handle = handle
        self.streams = streams
        self.restoreToken = restoreToken
        self.cursorMode = cursorMode
    }

    /// Whether the portal has ended the session (its `Closed` signal: the user stopped sharing, or the compositor
    /// or the portal went away), or the bus connection is gone. Reads what has arrived, without waiting.
    package var isClosed: Bool { bus.isClosed(handle) }

    deinit { bus.closeSession(handle) }

    /// The PipeWire connection the session's nodes are read on (`OpenPipeWireRemote`): a descriptor the caller
    /// owns, for `pw_context_connect_fd`.
    package func openPipeWireRemote() throws(ScreenCastPortalError) -> Int32 {
        do throws(DBusFailure) {
            let call = try DBusMessage.methodCall(
                destination: PortalBus.portalName, path: PortalBus.portalPath, interface: ScreenCastPortal.interface,
                member: "OpenPipeWireRemote")
            try call.appendObjectPath(handle)
            try call.appendOptions([])
            let reply = try bus.call(call)
            guard let descriptor = reply.takeFileDescriptor(at: 0) else {
                throw DBusFailure(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "no file descriptor")
            }
            return descriptor
        } catch {
            throw ScreenCastPortal.failure(error, calling: "OpenPipeWireRemote")
        }
    }
}
