import CDBus
import Testing

/// The shim links against libdbus-1, and its argument helpers write what its readers read back.
@Suite struct CDBusLinkTests {
    @Test func libraryVersion() {
        var major: Int32 = 0
        var minor: Int32 = 0
        var micro: Int32 = 0
        dbus_get_version(&major, &minor, &micro)
        #expect(major == 1)
        #expect(CDBus_typeUnixFD() == Int32(UInt8(ascii: "h")))
    }

    @Test func argumentsRoundTrip() throws {
        let message = try #require(
            dbus_message_new_method_call("org.example.Peer", "/org/example/Peer", "org.example.Peer", "Call"))
        defer { dbus_message_unref(message) }
        #expect(CDBus_appendString(message, "devices"))
        #expect(CDBus_appendUInt32(message, 7))
        #expect(CDBus_appendVardict(message, "handle_token", "t1"))
        #expect(CDBus_appendVardict(message, nil, nil))
        #expect(String(cString: dbus_message_get_signature(message)) == "sua{sv}a{sv}")
        #expect(CDBus_readString(message, 0).map { String(cString: $0) } == "devices")
        var value: UInt32 = 0
        #expect(CDBus_readUInt32(message, 1, &value) && value == 7)
        // Wrong types and missing arguments are refusals, not crashes.
        #expect(CDBus_readString(message, 1) == nil)
        #expect(!CDBus_readUInt32(message, 9, &value))
        #expect(CDBus_readUnixFD(message, 0) == -1)
        var flag = false
        #expect(!CDBus_readVariantBoolean(message, &flag))
        var first: UnsafePointer<CChar>?
        #expect(CDBus_readStringArrayEntry(message, "", &first) == -1)
    }
}
