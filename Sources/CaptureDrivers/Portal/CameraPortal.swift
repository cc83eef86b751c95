import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A small synchronous client of xdg-desktop-portal's Camera portal (`org.freedesktop.portal.Camera`) and of the
/// portal's permission store: where the portal exists, Apple's camera authorization comes from it.
///
/// - `isCameraPresent`: the portal's `IsCameraPresent` (a PipeWire `Video/Source` node with `media.role` Camera).
/// - `storedPermission(appID:)`: the decision the permission store keeps (table `devices`, id `camera`), without
///   asking anyone: Apple's `authorizationStatus(for: .video)`.
/// - `accessCamera()`: `AccessCamera`, which answers from the store or asks the user through the desktop's Access
///   dialog and keeps the answer: Apple's `requestAccess(for: .video)`.
/// - `openPipeWireRemote()`: `OpenPipeWireRemote`, a PipeWire connection that shows the app only the cameras (for
///   `pw_context_connect_fd`); refused unless the store says yes.
///
/// The portal identifies the caller itself, from the connection's process; `applicationID(flatpakInfo:cgroup:)`
/// finds the same id on our side, for the store lookup (see there).
///
/// D-Bus through libdbus (`CDBus`), not libportal: libportal is the portal's own library, but it is asynchronous on
/// a GLib main loop that this library would have to run on a thread of its own, while the four calls here are a
/// request and a reply each, plus one signal to wait for, which libdbus's blocking calls with timeouts do
/// directly on the caller's thread. libdbus is the reference implementation, on every desktop (PipeWire links it
/// too), and needs no GLib.
///
/// Threading: thread safe. One private bus connection serves every call, behind a mutex: calls from several threads
/// run one after another. Every call blocks the calling thread until the portal answers or its timeout passes
/// (`accessCamera(timeout:)` for as long as the user looks at the dialog), so call them off the main thread of a
/// user interface.
package final class CameraPortal: Sendable {
    /// The portal's well-known name and object, and the interfaces used.
    static let portalName = "org.freedesktop.portal.Desktop"
    static let portalPath = "/org/freedesktop/portal/desktop"
    static let cameraInterface = "org.freedesktop.portal.Camera"
    static let requestInterface = "org.freedesktop.portal.Request"
    static let storeName = "org.freedesktop.impl.portal.PermissionStore"
    static let storePath = "/org/freedesktop/impl/portal/PermissionStore"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let notAllowedName = "org.freedesktop.portal.Error.NotAllowed"

    /// The Camera interface's version (1 in xdg-desktop-portal up to at least 1.18).
    package let version: UInt32
    /// How long a call may wait for the portal's reply.
    package let callTimeout: Duration

    private struct State {
        let connection: DBusConnection
        /// Requests made so far: each `AccessCamera` gets a handle token of its own.
        var requests = 0
    }

    private let state: Mutex<State>

    private init(connection: sending DBusConnection, version: UInt32, callTimeout: Duration) {
        state = Mutex(State(connection: connection))
        self.version = version
        self.callTimeout = callTimeout
    }

    /// The camera portal of the session bus, or nil where there is no session bus or no portal with the Camera
    /// interface; capture then goes on as without a portal. `open(environment:timeout:)` says why it is nil.
    package static func connect(
        environment: [String: String] = ProcessInfo.processInfo.environment, timeout: Duration = .seconds(10)
    ) -> CameraPortal? {
        try? open(environment: environment, timeout: timeout)
    }

    /// The camera portal of the session bus in `environment`; throws `.noSessionBus` or `.noCameraPortal` with the
    /// reason. Asking starts the portal where the bus activates it on demand, as desktops do; `timeout` bounds that
    /// wait and every later call's.
    package static func open(
        environment: [String: String] = ProcessInfo.processInfo.environment, timeout: Duration = .seconds(10)
    ) throws(CameraPortalError) -> CameraPortal {
        guard let address = sessionBusAddress(environment: environment) else {
            throw .noSessionBus(
                "No D-Bus session bus: DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist. "
                    + "The camera portal needs a desktop session (or dbus-run-session); without it cameras are "
                    + "opened directly.")
        }
        let connection: DBusConnection
        do throws(DBusFailure) {
            connection = try DBusConnection(address: address)
        } catch {
            throw .noSessionBus(
                "Cannot connect to the D-Bus session bus at \(address) (\(error)); check DBUS_SESSION_BUS_ADDRESS.")
        }
        let reply: DBusMessage
        do throws(DBusFailure) {
            let get = try DBusMessage.methodCall(
                destination: portalName, path: portalPath, interface: propertiesInterface, member: "Get")
            try get.append(cameraInterface)
            try get.append("version")
            reply = try connection.call(get, timeout: timeout)
        } catch where error.name == DBusFailure.noReplyName {
            throw .timedOut(
                "xdg-desktop-portal did not answer within \(timeout) (\(error)); it may be hung or still starting: "
                    + "restart it (systemctl --user restart xdg-desktop-portal) and try again.")
        } catch where error.name == DBusFailure.serviceUnknownName {
            throw .noCameraPortal(
                "The session bus has no xdg-desktop-portal (\(error)). Install xdg-desktop-portal and the desktop's "
                    + "backend (xdg-desktop-portal-gnome or -kde) for camera access through the portal.")
        } catch {
            throw .noCameraPortal(
                "xdg-desktop-portal offers no Camera interface (\(error)): it needs a backend implementing "
                    + "org.freedesktop.impl.portal.Access (xdg-desktop-portal-gnome or -kde) and PipeWire support.")
        }
        return CameraPortal(connection: connection, version: reply.variantUInt32 ?? 0, callTimeout: timeout)
    }

    /// The session bus's address: `DBUS_SESSION_BUS_ADDRESS`, else the socket `$XDG_RUNTIME_DIR/bus` where it
    /// exists (systemd's user bus, which is where libdbus and GLib look too); nil when there is neither. Never
    /// X11 autolaunch, which would start a bus of its own.
    package static func sessionBusAddress(environment: [String: String]) -> String? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        guard let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty else { return nil }
        let path = runtime + "/bus"
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else { return nil }
        return "unix:path=" + escapedAddressValue(path)
    }

    /// A D-Bus address value: bytes other than `-0-9A-Za-z_/.\*` become `%xx` (the D-Bus specification's rule).
    static func escapedAddressValue(_ value: String) -> String {
        var escaped = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "/"),
                UInt8(ascii: "."), UInt8(ascii: "\\"), UInt8(ascii: "*"):
                escaped.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                escaped += "%" + String(byte, radix: 16, uppercase: false).leftPadded(to: 2)
            }
        }
        return escaped
    }

    /// The portal's `IsCameraPresent`: whether PipeWire has a camera (a `Video/Source` node with `media.role`
    /// Camera) that the portal sees. False where there is no PipeWire daemon, and when the portal does not answer.
    /// A hint only: xdg-desktop-portal up to 1.18 counts just the cameras there when it connected to PipeWire.
    package var isCameraPresent: Bool {
        state.withLock { state -> Bool in
            guard
                let get = try? DBusMessage.methodCall(
                    destination: Self.portalName, path: Self.portalPath, interface: Self.propertiesInterface,
                    member: "Get"),
                (try? get.append(Self.cameraInterface)) != nil, (try? get.append("IsCameraPresent")) != nil
            else { return false }
            return (try? state.connection.call(get, timeout: callTimeout))?.variantBoolean ?? false
        }
    }

    /// The decision the permission store keeps for `appID`'s camera access, asking nobody. `.notDetermined` when
    /// nothing (or `ask`) is stored, and also when the store cannot be asked: a Flatpak app's bus only reaches
    /// `org.freedesktop.portal.*` names, not the store, so a sandboxed app learns its permission from
    /// `accessCamera()` instead, which answers from the store without a dialog when a decision is kept.
    package func storedPermission(appID: String = CameraPortal.applicationID()) -> CameraPortalPermission {
        state.withLock { state -> CameraPortalPermission in
            guard
                let lookup = try? DBusMessage.methodCall(
                    destination: Self.storeName, path: Self.storePath, interface: Self.storeName, member: "Lookup"),
                (try? lookup.append("devices")) != nil, (try? lookup.append("camera")) != nil,
                // org.freedesktop.portal.Error.NotFound: nothing stored for any app yet.
                let reply = try? state.connection.call(lookup, timeout: callTimeout),
                let words = reply.stringArrayEntry(appID)
            else { return .notDetermined }
            return CameraPortalPermission(storedWords: words.count, first: words.first)
        }
    }

    /// Asks for the camera (`AccessCamera`) and waits for the answer, the `Response` signal of the request it
    /// starts: true when granted (response 0); false when denied, cancelled (1), failed in the portal (2), or
    /// refused because the administrator disabled the camera. A stored decision answers at once; otherwise the
    /// portal asks the user through the desktop's Access dialog and stores the answer (xdg-desktop-portal up to
    /// 1.18 stores `no` even when the dialog could not be shown). After `timeout` the request is closed (`Close`, which
    /// dismisses the dialog) and `.timedOut` thrown.
    package func accessCamera(timeout: Duration = .seconds(300)) throws(CameraPortalError) -> Bool {
        try state.withLock { (state) throws(CameraPortalError) -> Bool in
            state.requests += 1
            let token = "openav\(state.requests)"
            let connection = state.connection
            let expectedPath = Self.requestPath(sender: connection.uniqueName, token: token)
            // The signal must be routed before the call: the portal may answer at once.
            let rule = Self.responseRule(path: expectedPath)
            try Self.addMatch(rule, on: connection)
            defer { connection.removeMatch(rule) }
            let reply: DBusMessage
            do throws(DBusFailure) {
                let call = try DBusMessage.methodCall(
                    destination: Self.portalName, path: Self.portalPath, interface: Self.cameraInterface,
                    member: "AccessCamera")
                try call.appendVardict((key: "handle_token", value: token))
                reply = try connection.call(call, timeout: callTimeout)
            } catch where error.name == Self.notAllowedName {
                return false  // "Camera access disabled" by the desktop's lockdown settings: a denial.
            } catch {
                throw Self.failure(error, calling: "AccessCamera")
            }
            // A portal that ignores `handle_token` (older than that convention) makes up its own path: listen there
            // too (a response it already sent is then lost, and the wait ends in a timeout, not a wrong answer).
            let path = reply.string(at: 0) ?? expectedPath
            let otherRule = path == expectedPath ? nil : Self.responseRule(path: path)
            if let otherRule {
                try Self.addMatch(otherRule, on: connection)
            }
            defer { if let otherRule { connection.removeMatch(otherRule) } }
            let deadline = ContinuousClock.now + timeout
            while true {
                let message: DBusMessage?
                do throws(DBusFailure) { message = try connection.nextMessage(until: deadline) } catch {
                    throw Self.failure(error, calling: "AccessCamera")
                }
                guard let message else {
                    Self.close(request: path, on: connection)
                    throw .timedOut(
                        "Nobody answered the camera access request within \(timeout) (the desktop's permission "
                            + "dialog was left open); the request was closed. Ask again.")
                }
                // Anything else that arrives (NameAcquired, other signals) is not for this request.
                guard message.isSignal(interface: Self.requestInterface, member: "Response"), message.path == path
                else { continue }
                guard let response = message.uint32(at: 0) else {
                    throw .failed("The camera portal's Response signal carried no response code.")
                }
                return response == 0
            }
        }
    }

    /// A PipeWire connection for this app's cameras (`OpenPipeWireRemote`): a file descriptor the caller owns, to
    /// hand to `pw_context_connect_fd` (which takes it over) or close. The portal opens it only when the store says
    /// yes for the app, and PipeWire shows it only the camera nodes. Throws `.notAllowed` without permission.
    package func openPipeWireRemote() throws(CameraPortalError) -> Int32 {
        try state.withLock { (state) throws(CameraPortalError) -> Int32 in
            guard state.connection.canPassFileDescriptors else {
                throw .failed(
                    "The session bus connection cannot pass file descriptors (it is not a Unix socket), so the "
                        + "camera portal cannot hand over a PipeWire connection.")
            }
            let reply: DBusMessage
            do throws(DBusFailure) {
                let call = try DBusMessage.methodCall(
                    destination: Self.portalName, path: Self.portalPath, interface: Self.cameraInterface,
                    member: "OpenPipeWireRemote")
                try call.appendVardict()
                reply = try state.connection.call(call, timeout: callTimeout)
            } catch where error.name == Self.notAllowedName {
                throw .notAllowed(
                    "The camera portal refused a PipeWire connection (\(error.message)): this app has no camera "
                        + "permission. Ask first (AccessCamera, Apple's requestAccess); if the user denied it, it is "
                        + "allowed again in the desktop's privacy settings.")
            } catch where error.name == "org.freedesktop.portal.Error.Failed" {
                throw .failed(
                    "The camera portal could not connect to PipeWire (\(error.message)): is the PipeWire daemon "
                        + "running (systemctl --user status pipewire)?")
            } catch {
                throw Self.failure(error, calling: "OpenPipeWireRemote")
            }
            guard let descriptor = reply.takeFileDescriptor(at: 0) else {
                throw .failed("The camera portal's OpenPipeWireRemote reply carried no file descriptor.")
            }
            return descriptor
        }
    }

    /// `/org/freedesktop/portal/desktop/request/SENDER/TOKEN`, SENDER the unique name without its `:` and with
    /// `_` for `.` (the portal's documented request path).
    static func requestPath(sender: String, token: String) -> String {
        let name = sender.drop(while: { $0 == ":" }).replacingOccurrences(of: ".", with: "_")
        return "\(portalPath)/request/\(name)/\(token)"
    }

    static func responseRule(path: String) -> String {
        "type='signal',interface='\(requestInterface)',member='Response',path='\(path)'"
    }

    private static func addMatch(_ rule: String, on connection: DBusConnection) throws(CameraPortalError) {
        do throws(DBusFailure) { try connection.addMatch(rule) } catch { throw failure(error, calling: "AddMatch") }
    }

    /// Sends `Close` to a request without waiting: the portal dismisses its dialog and sends no response.
    private static func close(request path: String, on connection: DBusConnection) {
        guard
            let close = try? DBusMessage.methodCall(
                destination: portalName, path: path, interface: requestInterface, member: "Close")
        else { return }
        close.expectNoReply()
        try? connection.send(close)
    }

    /// A bus failure as advice: a timeout says the portal may hang, anything else names what failed.
    private static func failure(_ failure: DBusFailure, calling method: String) -> CameraPortalError {
        switch failure.name {
        case DBusFailure.noReplyName:
            .timedOut(
                "xdg-desktop-portal did not answer \(method) in time (\(failure)); it may be hung: restart it "
                    + "(systemctl --user restart xdg-desktop-portal) and try again.")
        case DBusFailure.disconnectedName:
            .failed("The D-Bus session bus went away during \(method) (\(failure)); is the desktop session over?")
        default:
            .failed("The camera portal's \(method) failed: \(failure).")
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
