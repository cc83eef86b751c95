// Which cursor mode a ScreenCast session asks for, and which settings a session's mode serves without another.

import CaptureDrivers
import Testing

@Suite("The ScreenCast portal's cursor mode for capturesCursor")
struct ScreenCastCursorModeTests {
    typealias Modes = ScreenCastPortal.CursorModes

    @Test("Embedded to capture, hidden not to; metadata where that mode is not offered; nil where none is")
    func choice() {
        let all: Modes = [.hidden, .embedded, .metadata]
        #expect(Modes.forCapture(capturingCursor: true, available: all, environment: [:]) == .embedded)
        #expect(Modes.forCapture(capturingCursor: false, available: all, environment: [:]) == .hidden)
        #expect(
            Modes.forCapture(capturingCursor: true, available: [.hidden, .metadata], environment: [:]) == .metadata)
        #expect(Modes.forCapture(capturingCursor: false, available: [.metadata], environment: [:]) == .metadata)
        #expect(Modes.forCapture(capturingCursor: true, available: [.hidden], environment: [:]) == nil)
        #expect(Modes.forCapture(capturingCursor: true, available: [], environment: [:]) == nil)
    }

    @Test("OPENAV_SCREENCAST_CURSOR=metadata asks for metadata where it is offered")
    func forcedMetadata() {
        let forced = ["OPENAV_SCREENCAST_CURSOR": "metadata"]
        #expect(
            Modes.forCapture(capturingCursor: true, available: [.embedded, .metadata], environment: forced) == .metadata
        )
        #expect(
            Modes.forCapture(capturingCursor: false, available: [.hidden, .metadata], environment: forced) == .metadata)
        #expect(Modes.forCapture(capturingCursor: true, available: [.embedded], environment: forced) == .embedded)
    }

    @Test("Metadata serves both settings; embedded and hidden only their own")
    func serves() {
        #expect(Modes.metadata.serves(capturingCursor: true) && Modes.metadata.serves(capturingCursor: false))
        #expect(Modes.embedded.serves(capturingCursor: true) && !Modes.embedded.serves(capturingCursor: false))
        #expect(Modes.hidden.serves(capturingCursor: false) && !Modes.hidden.serves(capturingCursor: true))
    }
}
