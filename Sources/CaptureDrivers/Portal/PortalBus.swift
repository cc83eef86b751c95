import Foundation

/// One private session-bus connection to xdg-desktop-portal, and its request/response pattern: a portal method
/// that may ask the user returns a `Request` object at once and answers later with that object's `Response`
/// signal, `(u response, a{sv} results)`: 0 done, 1 cancelled by the user, 2 ended otherwise.
///
/// Threading: thread safe. The connection is used only under `lock`, so calls from several threads run one after
/// another; each blocks until the portal answers or its timeout passes.
final class PortalBus: Sendable {
    static let portalName = "org.freedesktop.portal.Desktop"
    static let portalPath = "/org/freedesktop/portal/desktop"
    static let requestInterface = "org.freedesktop.portal.Request"
    static let sessionInterface = "org.freedesktop.portal.Session"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"

    /// The answer to a request: the response code and the signal, whose argument 1 holds the results.
    struct Response {
        var code: UInt32
        var message: DBusMessage
    }

    /// A bus failure, told by what it means for the caller.
    enum Failure: Error {
        case bus(DBusFailure)
        /// No `Response` within the wait; the request was closed.
        case noResponse
    }

    /// Guards `connection` and `tokens`. An `NSLock` rather than a `Mutex`: the messages passed in and returned are
    /// not `Sendable`, and a mutex's closure would have to send them across.
    private let lock = NSLock()
    nonisolated(unsafe) private let connection: DBusConnection
    nonisolated(unsafe) private var tokens = 0
    /// Sessions whose `Closed` signal came (paths), and whether the bus connection is lost.
    nonisolated(unsafe) private var closedSessions: Set<String> = []
    nonisolated(unsafe) private var disconnected = false
    /// How long a method call may wait for its (immediate) reply.
    let callTimeout: Duration
    /// This connection's unique name: a session belongs to it and ends when it closes.
    let uniqueName: String

    init(address: String, callTimeout: Duration) throws(DBusFailure) {
        connection = try DBusConnection(address: address)
        uniqueName = connection.uniqueName
        self.callTimeout = callTimeout
    }

    /// A token unique on this connection (`openav_sc3`), for handle_token and session_handle_token.
    func nextToken() -> String {
        lock.lock()
        defer { lock.unlock() }
        tokens += 1
        return "openav_sc\(tokens)"
    }

    /// A plain method call and its reply.
    func call(_ message: DBusMessage) throws(DBusFailure) -> DBusMessage {
        lock.lock()
        defer { lock.unlock() }
        return try connection.call(message, timeout: callTimeout)
    }

    /// The portal's property `name` of `interface`, when it is a `u`.
    func uint32Property(_ interface: String, _ name: String) throws(DBusFailure) -> UInt32? {
        let get = try DBusMessage.methodCall(
            destination: Self.portalName, path: Self.portalPath, interface: Self.propertiesInterface, member: "Get")
        try get.append(interface)
        try get.append(name)
        return try call(get).variantUInt32
    }

    /// Calls a request-returning method whose options carry `handle_token` `token` (the caller appends them), and
    /// waits up to `timeout` for the `Response`. After the wait the request is closed (`Close`: the dialog goes) and
    /// `.noResponse` thrown.
    func request(_ message: DBusMessage, token: String, timeout: Duration) throws(Failure) -> Response {
        lock.lock()
        defer { lock.unlock() }
        do {
            let expected = Self.requestPath(sender: connection.uniqueName, token: token)
            // The signal must be routed before the call: the portal may answer at once.
            let rule = Self.responseRule(path: expected)
            do throws(DBusFailure) { try connection.addMatch(rule) } catch { throw .bus(error) }
            defer { connection.removeMatch(rule) }
            let reply: DBusMessage
            do throws(DBusFailure) { reply = try connection.call(message, timeout: callTimeout) } catch {
                throw .bus(error)
            }
            // A portal that ignores handle_token makes up its own path: listen there too.
            let path = reply.string(at: 0) ?? expected
            let otherRule = path == expected ? nil : Self.responseRule(path: path)
            if let otherRule {
                do throws(DBusFailure) { try connection.addMatch(otherRule) } catch { throw .bus(error) }
            }
            defer { if let otherRule { connection.removeMatch(otherRule) } }
            let deadline = ContinuousClock.now + timeout
            while true {
                let next: DBusMessage?
                do throws(DBusFailure) { next = try connection.nextMessage(until: deadline) } catch {
                    throw .bus(error)
                }
                guard let next else {
                    Self.sendClose(path, interface: Self.requestInterface, on: connection)
                    throw .noResponse
                }
                // Anything else that arrives (NameAcquired, a session's Closed) is not this request's answer.
                noteClosed(next)
                guard next.isSignal(interface: Self.requestInterface, member: "Response"), next.path == path,
                    let code = next.uint32(at: 0)
                else { continue }
                return Response(code: code, message: next)
            }
        }
    }

    /// Routes `handle`'s `Closed` signal to this connection, for `isClosed(_:)`.
    func watchClosed(_ handle: String) throws(DBusFailure) {
        lock.lock()
        defer { lock.unlock() }
        try connection.addMatch(Self.closedRule(path: handle))
    }

    /// Whether the session `handle` got its `Closed` signal or the bus went away, reading what has arrived
    /// without waiting. While another thread holds the connection (a request waiting for the user), it answers
    /// false rather than wait: a capture thread asks on every frame time.
    func isClosed(_ handle: String) -> Bool {
        guard lock.try() else { return false }
        defer { lock.unlock() }
        while !disconnected {
            do throws(DBusFailure) {
                guard let message = try connection.pendingMessage() else { break }
                noteClosed(message)
            } catch {
                disconnected = true
            }
        }
        return disconnected || closedSessions.contains(handle)
    }

    /// Keeps a session's `Closed` signal; called with `lock` held.
    private func noteClosed(_ message: DBusMessage) {
        if message.isSignal(interface: Self.sessionInterface, member: "Closed"), let path = message.path {
            closedSessions.insert(path)
        }
    }

    /// Ends a session (`org.freedesktop.portal.Session.Close`) without waiting for an answer.
    func closeSession(_ handle: String) {
        lock.lock()
        defer { lock.unlock() }
        Self.sendClose(handle, interface: Self.sessionInterface, on: connection)
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

    static func closedRule(path: String) -> String {
        "type='signal',interface='\(sessionInterface)',member='Closed',path='\(path)'"
    }

    private static func sendClose(_ path: String, interface: String, on connection: DBusConnection) {
        guard let close = try? DBusMessage.methodCall(destination: portalName, path: path, interface: interface,
                                                      member: "Close")
        else { return }
        close.expectNoReply()
        try? connection.send(close)
    }
}
