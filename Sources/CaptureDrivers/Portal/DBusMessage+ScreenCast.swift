import CDBus

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One value of a portal option (`a{sv}` entry) the ScreenCast client sends.
///
/// Value type; safe to use from any thread.
package enum DBusOptionValue: Sendable, Hashable {
    case uint32(UInt32)
    case boolean(Bool)
    case string(String)
}

/// One stream a ScreenCast `Start` answered with: the PipeWire node to read, and where the portal says it is.
///
/// Value type; safe to use from any thread.
package struct ScreenCastStream: Sendable, Hashable {
    /// The PipeWire node id, valid on the connection `OpenPipeWireRemote` gives.
    package var nodeID: UInt32
    /// 1 a monitor, 2 a window, 4 a virtual monitor (the portal's source types); 0 when not said.
    package var sourceType: UInt32
    /// The stream's place in the compositor's layout and its size, when the portal says (xdg-desktop-portal-wlr
    /// gives the size; GNOME both).
    package var position: (x: Int32, y: Int32)?
    package var size: (width: Int32, height: Int32)?

    package init(nodeID: UInt32, sourceType: UInt32, position: (x: Int32, y: Int32)?, size: (width: Int32, height: Int32)?)
    {
        self.nodeID = nodeID
        self.sourceType = sourceType
        self.position = position
        self.size = size
    }

    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.nodeID == rhs.nodeID && lhs.sourceType == rhs.sourceType && lhs.position?.x == rhs.position?.x
            && lhs.position?.y == rhs.position?.y && lhs.size?.width == rhs.size?.width
            && lhs.size?.height == rhs.size?.height
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(nodeID)
        hasher.combine(sourceType)
    }
}

extension DBusMessage {
    /// Appends a vardict (`a{sv}`) of the options given, in order (`CDBus_appendVardictEntries`).
    package func appendOptions(_ options: [(key: String, value: DBusOptionValue)]) throws(DBusFailure) {
        // The keys' and strings' C copies must live until libdbus has copied them into the message.
        let keys = options.map { strdup($0.key) }
        let strings = options.map { option -> UnsafeMutablePointer<CChar>? in
            if case .string(let text) = option.value { return strdup(text) }
            return nil
        }
        defer {
            keys.forEach { free($0) }
            strings.forEach { free($0) }
        }
        let entries = options.indices.map { index -> CDBus_VardictEntry in
            var entry = CDBus_VardictEntry()
            entry.key = UnsafePointer(keys[index])
            switch options[index].value {
            case .uint32(let value):
                entry.type = CChar(UInt8(ascii: "u"))
                entry.u = value
            case .boolean(let value):
                entry.type = CChar(UInt8(ascii: "b"))
                entry.b = value
            case .string:
                entry.type = CChar(UInt8(ascii: "s"))
                entry.s = UnsafePointer(strings[index])
            }
            return entry
        }
        let appended = entries.withUnsafeBufferPointer {
            CDBus_appendVardictEntries(pointer, $0.baseAddress, Int32($0.count))
        }
        guard appended else { throw .outOfMemory }
    }

    /// Appends a signed 32-bit integer (`i`).
    package func append(_ value: Int32) throws(DBusFailure) {
        guard CDBus_appendInt32(pointer, value) else { throw .outOfMemory }
    }

    /// Appends a double (`d`).
    package func append(_ value: Double) throws(DBusFailure) {
        guard CDBus_appendDouble(pointer, value) else { throw .outOfMemory }
    }

    /// Appends a boolean (`b`).
    package func append(_ value: Bool) throws(DBusFailure) {
        guard CDBus_appendBoolean(pointer, value) else { throw .outOfMemory }
    }

    /// Appends an object path (`o`) a bus sent (a session handle).
    package func appendObjectPath(_ path: String) throws(DBusFailure) {
        guard CDBus_appendObjectPath(pointer, path) else { throw .outOfMemory }
    }

    /// The string (or object path) under `key` in the vardict that is argument `index`.
    package func vardictString(at index: Int, key: String) -> String? {
        CDBus_readVardictString(pointer, Int32(index), key).map { String(cString: $0) }
    }

    /// The `streams` entry of the vardict that is argument `index` (a ScreenCast `Start` response's results); nil
    /// when there is none.
    package func screenCastStreams(at index: Int) -> [ScreenCastStream]? {
        var streams = [CDBus_ScreenCastStream](repeating: CDBus_ScreenCastStream(), count: 16)
        let count = streams.withUnsafeMutableBufferPointer {
            CDBus_readScreenCastStreams(pointer, Int32(index), $0.baseAddress, Int32($0.count))
        }
        guard count >= 0 else { return nil }
        return streams.prefix(Int(count)).map { stream in
            ScreenCastStream(
                nodeID: stream.node_id, sourceType: stream.source_type,
                position: stream.has_position ? (stream.x, stream.y) : nil,
                size: stream.has_size ? (stream.width, stream.height) : nil)
        }
    }
}
