import CDBus

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A failed D-Bus operation: the error's D-Bus name (`org.freedesktop.DBus.Error.ServiceUnknown`,
/// `org.freedesktop.portal.Error.NotAllowed`, …) and its message. The callers, who know what they asked for, turn it
/// into advice.
///
/// Value type; safe to use from any thread.
package struct DBusFailure: Error, Equatable, CustomStringConvertible {
    package var name: String
    package var message: String

    package init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    /// libdbus's answer when a reply did not come within the timeout.
    package static let noReplyName = "org.freedesktop.DBus.Error.NoReply"
    package static let serviceUnknownName = "org.freedesktop.DBus.Error.ServiceUnknown"
    package static let disconnectedName = "org.freedesktop.DBus.Error.Disconnected"
    package static let noMemoryName = "org.freedesktop.DBus.Error.NoMemory"

    static let outOfMemory = DBusFailure(name: noMemoryName, message: "libdbus could not allocate a message")

    /// Takes the failure out of a set `DBusError` and frees it.
    init(taking error: inout DBusError) {
        name = error.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
        message = error.message.map { String(cString: $0) } ?? ""
        dbus_error_free(&error)
    }

    package var description: String { message.isEmpty ? name : "\(name): \(message)" }
}

/// A private connection to a D-Bus message bus through libdbus, for blocking calls with a deadline.
///
/// The connection is private (`dbus_connection_open_private`), never libdbus's shared session connection, so
/// closing it cannot disturb another library of the process that uses the bus; and a lost bus is an error, not the
/// process's exit (`dbus_connection_set_exit_on_disconnect` off). libdbus writes with `MSG_NOSIGNAL`: a bus that
/// goes away does not raise SIGPIPE.
///
/// Threading: not synchronized; one thread at a time. libdbus is thread safe, but the queue of incoming messages
/// that `nextMessage(until:)` reads is shared, so two readers would take each other's messages. `CameraPortal`
/// keeps its connection behind a mutex.
package final class DBusConnection {
    private let connection: OpaquePointer
    /// This connection's unique name on the bus (`:1.42`), given by the bus in its `Hello` reply.
    package let uniqueName: String

    /// libdbus's thread support, set up once before the first connection. Since libdbus 1.7 it is on by default;
    /// calling it again costs nothing and keeps older libraries safe.
    private static let threadsInitialized: Bool = dbus_threads_init_default() != 0

    /// Connects to the bus at `address` (`unix:path=/run/user/1000/bus`) and registers (`Hello`), waiting at most
    /// libdbus's default 25 s for the bus to answer.
    package init(address: String) throws(DBusFailure) {
        _ = Self.threadsInitialized
        var error = DBusError()
        dbus_error_init(&error)
        guard let connection = dbus_connection_open_private(address, &error) else {
            throw DBusFailure(taking: &error)
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        guard dbus_bus_register(connection, &error) != 0, let name = dbus_bus_get_unique_name(connection) else {
            let failure =
                dbus_error_is_set(&error) != 0
                ? DBusFailure(taking: &error)
                : DBusFailure(name: DBusFailure.disconnectedName, message: "the bus gave no unique name")
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw failure
        }
        self.connection = connection
        uniqueName = String(cString: name)
    }

    deinit {
        // A private connection must be closed before its last reference goes (libdbus's rule).
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    /// Whether the connection can carry file descriptors (`h` arguments): a Unix socket whose bus agreed to it.
    package var canPassFileDescriptors: Bool { dbus_connection_can_send_type(connection, CDBus_typeUnixFD()) != 0 }

    /// Sends a method call and waits at most `timeout` for its reply (`dbus_connection_send_with_reply_and_block`).
    /// An error reply, a timeout (`NoReply`) and a lost bus throw. Messages that arrive meanwhile stay queued for
    /// `nextMessage(until:)`.
    package func call(_ message: DBusMessage, timeout: Duration) throws(DBusFailure) -> DBusMessage {
        var error = DBusError()
        dbus_error_init(&error)
        guard
            let reply = dbus_connection_send_with_reply_and_block(
                connection, message.pointer, Self.milliseconds(timeout), &error)
        else {
            throw DBusFailure(taking: &error)
        }
        return DBusMessage(adopting: reply)
    }

    /// Queues a message that expects no answer (a reply of our own, a call marked no-reply) and writes it out.
    package func send(_ message: DBusMessage) throws(DBusFailure) {
        guard dbus_connection_send(connection, message.pointer, nil) != 0 else { throw .outOfMemory }
        dbus_connection_flush(connection)
    }

    /// Asks the bus to route the signals `rule` describes to this connection (`AddMatch`).
    package func addMatch(_ rule: String) throws(DBusFailure) {
        var error = DBusError()
        dbus_error_init(&error)
        dbus_bus_add_match(connection, rule, &error)
        if dbus_error_is_set(&error) != 0 { throw DBusFailure(taking: &error) }
    }

    /// Withdraws a rule `addMatch` added; a failure (the bus gone) is ignored, as there is nothing left to undo.
    package func removeMatch(_ rule: String) {
        var error = DBusError()
        dbus_error_init(&error)
        dbus_bus_remove_match(connection, rule, &error)
        if dbus_error_is_set(&error) != 0 { dbus_error_free(&error) }
    }

    /// Takes `name` on the bus (`RequestName`, not queued behind another owner); throws when another owns it.
    package func requestName(_ name: String) throws(DBusFailure) {
        var error = DBusError()
        dbus_error_init(&error)
        let result = dbus_bus_request_name(connection, name, UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE), &error)
        if dbus_error_is_set(&error) != 0 { throw DBusFailure(taking: &error) }
        guard result == DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER || result == DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER else {
            throw DBusFailure(name: "org.freedesktop.DBus.Error.AccessDenied", message: "\(name) has another owner")
        }
    }

    /// The next incoming message (signal, method call or stray reply), reading the socket until `deadline`; nil
    /// when none came by then. Throws when the bus is gone.
    package func nextMessage(until deadline: ContinuousClock.Instant) throws(DBusFailure) -> DBusMessage? {
        while true {
            if let message = dbus_connection_pop_message(connection) { return DBusMessage(adopting: message) }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return nil }
            // Blocks until the socket can be read or written, or the time is up; false once disconnected.
            guard dbus_connection_read_write(connection, Self.milliseconds(remaining)) != 0 else {
                throw DBusFailure(name: DBusFailure.disconnectedName, message: "the message bus closed the connection")
            }
        }
    }

    /// A message that has already arrived (reading the socket once without blocking), or nil. Throws when the bus
    /// is gone.
    package func pendingMessage() throws(DBusFailure) -> DBusMessage? {
        if let message = dbus_connection_pop_message(connection) { return DBusMessage(adopting: message) }
        guard dbus_connection_read_write(connection, 0) != 0 else {
            throw DBusFailure(name: DBusFailure.disconnectedName, message: "the message bus closed the connection")
        }
        return dbus_connection_pop_message(connection).map { DBusMessage(adopting: $0) }
    }

    /// A timeout in libdbus's unit, whole milliseconds rounded up (a positive wait never becomes "don't wait").
    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds)
    }
}

/// One D-Bus message, released with its last reference (`dbus_message_unref`).
///
/// Threading: not synchronized; build or read it on one thread at a time.
package final class DBusMessage {
    let pointer: OpaquePointer

    init(adopting pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit { dbus_message_unref(pointer) }

    /// A method call to `member` of `interface` on the object at `path` of `destination`
    /// (`dbus_message_new_method_call`). The path must be a valid object path (libdbus aborts on an invalid one), so
    /// callers build it from constants or from what a bus sent.
    package static func methodCall(
        destination: String, path: String, interface: String, member: String
    )
        throws(DBusFailure) -> DBusMessage
    {
        guard let message = dbus_message_new_method_call(destination, path, interface, member) else {
            throw .outOfMemory
        }
        return DBusMessage(adopting: message)
    }

    /// A signal `interface.member` from `path` (`dbus_message_new_signal`), for a service of our own (the tests'
    /// stand-ins for portals).
    package static func signal(path: String, interface: String, member: String) throws(DBusFailure) -> DBusMessage {
        guard let message = dbus_message_new_signal(path, interface, member) else { throw .outOfMemory }
        return DBusMessage(adopting: message)
    }

    /// The empty success reply to this method call (`dbus_message_new_method_return`).
    package func methodReturn() throws(DBusFailure) -> DBusMessage {
        guard let reply = dbus_message_new_method_return(pointer) else { throw .outOfMemory }
        return DBusMessage(adopting: reply)
    }

    /// An error reply to this method call (`dbus_message_new_error`).
    package func errorReply(name: String, message text: String) throws(DBusFailure) -> DBusMessage {
        guard let reply = dbus_message_new_error(pointer, name, text) else { throw .outOfMemory }
        return DBusMessage(adopting: reply)
    }

    /// Asks the receiver not to answer (`dbus_message_set_no_reply`).
    package func expectNoReply() { dbus_message_set_no_reply(pointer, 1) }

    // MARK: Arguments, appended in order

    /// Appends a string (`s`).
    package func append(_ value: String) throws(DBusFailure) {
        guard CDBus_appendString(pointer, value) else { throw .outOfMemory }
    }

    /// Appends an unsigned 32-bit integer (`u`).
    package func append(_ value: UInt32) throws(DBusFailure) {
        guard CDBus_appendUInt32(pointer, value) else { throw .outOfMemory }
    }

    /// Appends a vardict (`a{sv}`): empty, or with one string entry.
    package func appendVardict(_ entry: (key: String, value: String)? = nil) throws(DBusFailure) {
        let appended =
            if let entry { CDBus_appendVardict(pointer, entry.key, entry.value) } else {
                CDBus_appendVardict(pointer, nil, nil)
            }
        guard appended else { throw .outOfMemory }
    }

    // MARK: Reading

    /// Whether this is the signal `member` of `interface`.
    package func isSignal(interface: String, member: String) -> Bool {
        dbus_message_is_signal(pointer, interface, member) != 0
    }

    /// Whether this is a call of the method `member` of `interface`.
    package func isMethodCall(interface: String, member: String) -> Bool {
        dbus_message_is_method_call(pointer, interface, member) != 0
    }

    /// Whether this is a method call (of anything).
    package var isMethodCall: Bool { dbus_message_get_type(pointer) == DBUS_MESSAGE_TYPE_METHOD_CALL }

    /// The object path the message is addressed to or sent from.
    package var path: String? { dbus_message_get_path(pointer).map { String(cString: $0) } }

    /// The member (method or signal name).
    package var member: String? { dbus_message_get_member(pointer).map { String(cString: $0) } }

    /// Argument `index` when it is a string or an object path.
    package func string(at index: Int) -> String? {
        CDBus_readString(pointer, Int32(index)).map { String(cString: $0) }
    }

    /// Argument `index` when it is an unsigned 32-bit integer.
    package func uint32(at index: Int) -> UInt32? {
        var value: UInt32 = 0
        return CDBus_readUInt32(pointer, Int32(index), &value) ? value : nil
    }

    /// Argument `index` when it is a file descriptor: a new descriptor that the caller owns and must close.
    package func takeFileDescriptor(at index: Int) -> Int32? {
        let descriptor = CDBus_readUnixFD(pointer, Int32(index))
        return descriptor >= 0 ? descriptor : nil
    }

    /// The first argument when it is a variant holding a boolean (a `Properties.Get` reply).
    package var variantBoolean: Bool? {
        var value = false
        return CDBus_readVariantBoolean(pointer, &value) ? value : nil
    }

    /// The first argument when it is a variant holding an unsigned 32-bit integer.
    package var variantUInt32: UInt32? {
        var value: UInt32 = 0
        return CDBus_readVariantUInt32(pointer, &value) ? value : nil
    }

    /// In a first argument of type `a{sas}`, the strings stored under `key`; nil when `key` has no entry or the
    /// argument has another type. Only the count and the first string are read: a portal permission is one word.
    package func stringArrayEntry(_ key: String) -> (count: Int, first: String?)? {
        var first: UnsafePointer<CChar>?
        let count = CDBus_readStringArrayEntry(pointer, key, &first)
        guard count >= 0 else { return nil }
        return (Int(count), first.map { String(cString: $0) })
    }
}
