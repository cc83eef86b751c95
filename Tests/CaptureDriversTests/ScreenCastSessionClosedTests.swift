// How a ScreenCast session learns that the portal ended it: the `org.freedesktop.portal.Session.Closed` signal on
// its path, or the bus going away. On a private session bus (`PortalSession` without the portal), a connection of
// the test's own sends the signal as xdg-desktop-portal would.

import Foundation
import Testing
import TestSupport

@testable import CaptureDrivers

@Suite(.serialized) struct ScreenCastSessionClosedTests {
    static let handle = "/org/freedesktop/portal/desktop/session/1_42/openav_sc1"

    /// Sends the portal's `Closed` signal for `path` from `connection`.
    private func sendClosed(_ path: String, on connection: DBusConnection) throws {
        let signal = try DBusMessage.signal(path: path, interface: PortalBus.sessionInterface, member: "Closed")
        try signal.appendVardict()
        try connection.send(signal)
    }

    /// Asks `bus` until `handle` reads closed, for at most 5 s; whether it did.
    private func becomesClosed(_ bus: PortalBus, _ handle: String) -> Bool {
        // The signal crosses the bus daemon: real time passes before it arrives.
        waitUntil(timeout: 5) { bus.isClosed(handle) }
    }

    @Test("Closed on the session's path closes it; Closed on another session's does not")
    func closedSignal() throws {
        guard let session = try PortalSession.start(portal: false, for: "ScreenCastSessionClosedTests.closedSignal")
        else { return }
        let bus = try PortalBus(address: session.busAddress, callTimeout: .seconds(5))
        try bus.watchClosed(Self.handle)
        let portal = try DBusConnection(address: session.busAddress)
        #expect(!bus.isClosed(Self.handle))

        // Another session's end, which this connection did not ask to hear: no effect.
        try sendClosed(Self.handle + "_other", on: portal)
        try sendClosed(Self.handle, on: portal)
        #expect(becomesClosed(bus, Self.handle), "the Closed signal was not seen")
        #expect(!bus.isClosed(Self.handle + "_other"))
    }

    @Test("The bus going away counts as closed")
    func busGone() throws {
        guard let session = try PortalSession.start(portal: false, for: "ScreenCastSessionClosedTests.busGone")
        else { return }
        let bus = try PortalBus(address: session.busAddress, callTimeout: .seconds(5))
        try bus.watchClosed(Self.handle)
        #expect(!bus.isClosed(Self.handle))
        session.stop("bus")
        #expect(becomesClosed(bus, Self.handle), "a lost bus should read as a closed session")
    }
}
