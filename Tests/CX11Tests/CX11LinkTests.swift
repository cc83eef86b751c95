import CX11
import Testing

/// Xlib and its extensions link, and the shim's replacements for what Swift cannot import hold Xlib's values.
@Suite struct CX11LinkTests {
    @Test func castMacrosHaveXlibsValues() {
        #expect(CX11_allPlanes() == UInt.max)
        #expect(CX11_ipcPrivate() == 0)
        #expect(ZPixmap == 2)
    }

    @Test func aDisplayThatDoesNotExistIsNilNotAnExit() {
        CX11_installErrorHandlers()
        // Display 987 has no socket: XOpenDisplay fails and returns nil; the process carries on.
        #expect(XOpenDisplay(":987") == nil)
        #expect(CX11_takeLastError() == 0)
    }

    @Test func eventPredicatesReadTheEventType() {
        var event = XEvent()
        event.type = 91 + XDamageNotify
        #expect(CX11_isDamageNotify(&event, 91) != 0)
        #expect(CX11_isDamageNotify(&event, 92) == 0)
        event.type = 87 + XFixesCursorNotify
        #expect(CX11_isCursorNotify(&event, 87) != 0)
    }
}
