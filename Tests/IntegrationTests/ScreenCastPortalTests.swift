// The ScreenCast portal path against the real xdg-desktop-portal 1.16 and xdg-desktop-portal-wlr 0.7 on a headless
// sway (scripts/wayland-session --portal). What these cover: the session bus, the interface's properties,
// CreateSession and SelectSources answered by the real backend, Start's failure there (xdg-desktop-portal-wlr 0.7
// needs a DMA-BUF capable screencopy, which sway's pixman renderer does not offer) and the fallback to
// wlr-screencopy that follows it, and a chooser that chooses nothing as a cancelled request: an error, and exit 69
// from `avcapture record --screen`. No frame comes through the portal here (docs/devices.md says why).

import CaptureDrivers
import Foundation
import OpenAVCapture
import TestSupport
import Testing

/// The environment a client of `wayland`'s portal sees: its bus, its compositor, and a state directory of its own.
private func portalEnvironment(_ wayland: WaylandTestSession) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment
    environment["DBUS_SESSION_BUS_ADDRESS"] = wayland.variables["DBUS_SESSION_BUS_ADDRESS"]
    environment["WAYLAND_DISPLAY"] = wayland.displayPath
    environment["XDG_STATE_HOME"] = wayland.directory.appendingPathComponent("state").path
    environment["OPENAV_DEVICES"] = "all"
    // An X server named beside the compositor is not used.
    environment["DISPLAY"] = ":4242"
    return environment
}

@Suite("The ScreenCast portal with xdg-desktop-portal-wlr on a headless sway", .serialized)
struct ScreenCastPortalTests {
    @Test("The portal answers with its version, source types and cursor modes")
    func properties() throws {
        guard let wayland = WaylandTestSession.start(portal: true, for: "ScreenCastPortalTests.properties")
        else { return }
        let portal = try ScreenCastPortal.open(environment: portalEnvironment(wayland), dialogTimeout: .seconds(20))
        // xdg-desktop-portal 1.16's interface is version 4 (persist modes, restore tokens).
        #expect(portal.version >= 4)
        #expect(portal.availableSourceTypes.contains(.monitor))
        // xdg-desktop-portal-wlr 0.7 draws the cursor into the frames, and offers hiding it.
        #expect(portal.availableCursorModes.contains(.embedded) || portal.availableCursorModes.contains(.hidden))
    }

    @Test("Sources are selected and Start fails on the pixman output; the screens come through wlr-screencopy")
    func startFailureFallsBack() throws {
        guard let wayland = WaylandTestSession.start(portal: true, for: "ScreenCastPortalTests.startFailureFallsBack")
        else { return }
        let environment = portalEnvironment(wayland)
        let portal = try ScreenCastPortal.open(environment: environment, dialogTimeout: .seconds(20))
        var request = ScreenCastPortal.SessionRequest()
        // A token the portal never gave (a stale file) is looked up, not found, and the choice made afresh.
        request.restoreToken = UUID().uuidString.lowercased()
        do {
            _ = try portal.startSession(request)
            Issue.record("Start succeeded on sway's pixman output, which offers no DMA-BUF: update docs/devices.md")
        } catch {
            // Failed, not cancelled: the chooser (none, output HEADLESS-1) chose; the backend could not start.
            guard case .failed(let text) = error else {
                Issue.record("expected .failed, got \(error)")
                return
            }
            #expect(text.contains("Start"), "\(text)")
        }
        // The backend's own log says it got as far as Start, with the sources selected.
        let log = try String(contentsOf: wayland.directory.appendingPathComponent("logs/portal-wlr.log"), encoding: .utf8)
        #expect(log.contains("select sources method invoked"), "\(log.suffix(2000))")
        #expect(log.contains("unable to receive a valid format"), "\(log.suffix(2000))")

        // A token that is no UUID at all (a damaged file) is left out rather than failing the request.
        request.restoreToken = "not-a-uuid"
        #expect {
            _ = try portal.startSession(request)
        } throws: { error in
            guard case .failed(let text) = error as? ScreenCastPortalError else { return false }
            return text.contains("Start")
        }

        let screens = try WaylandScreenRoute.screens(displayName: wayland.displayPath, environment: environment)
        let screen = try #require(screens.first)
        #expect(screen is WaylandScreen)
        #expect(screen.monitor.name == "HEADLESS-1")
        #expect(screen.monitor.width == 1280 && screen.monitor.height == 720)
    }

    @Test("A chooser that chooses nothing cancels the request: a clear error, not a hang")
    func cancelledChooser() throws {
        guard
            let wayland = WaylandTestSession.start(
                portal: true, chooserCancels: true, for: "ScreenCastPortalTests.cancelledChooser")
        else { return }
        let environment = portalEnvironment(wayland)
        let portal = try ScreenCastPortal.open(environment: environment, dialogTimeout: .seconds(20))
        #expect {
            _ = try portal.startSession(ScreenCastPortal.SessionRequest())
        } throws: { error in
            guard case .cancelled(let text) = error as? ScreenCastPortalError else { return false }
            return text.contains("cancelled") && text.contains("choose a screen")
        }
        #expect {
            _ = try WaylandScreenRoute.screens(displayName: wayland.displayPath, environment: environment)
        } throws: { error in
            (error as? ScreenUnavailable)?.reason == "the screen sharing request was cancelled"
        }
    }
}

@Suite(
    "avcapture --screen with the ScreenCast portal on a headless sway", .serialized,
    .enabled(
        if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct ScreenCastPortalToolTests {
    @Test("record --screen exits 69 with the reason when the portal's chooser is cancelled")
    func cancelledRecording() throws {
        guard
            let wayland = WaylandTestSession.start(
                portal: true, chooserCancels: true, for: "ScreenCastPortalToolTests.cancelledRecording")
        else { return }
        let url = try scratchURL("portal-cancelled.mov", suite: "screencast-portal")
        try? FileManager.default.removeItem(at: url)
        let result = try ToolResult.run(
            executable: toolPath!, ["record", url.path, "--screen", "--audio", "none", "--duration", "1"],
            environment: portalEnvironment(wayland))
        #expect(result.status == 69, "\(result.error)")
        #expect(result.error.contains("the screen sharing request was cancelled"), "\(result.error)")
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("Where the portal cannot start, devices says so once and lists the output through wlr-screencopy")
    func devicesAfterStartFailure() throws {
        guard
            MediaTool.available(for: "ScreenCastPortalToolTests.devicesAfterStartFailure"),
            let wayland = WaylandTestSession.start(
                portal: true, for: "ScreenCastPortalToolTests.devicesAfterStartFailure")
        else { return }
        let environment = portalEnvironment(wayland)
        let devices = try ToolResult.run(executable: toolPath!, ["devices"], environment: environment)
        #expect(devices.status == 0, "\(devices.error)")
        #expect(devices.outputText.contains("HEADLESS-1  1280x720 at +0+0"), "\(devices.outputText)")
        let notes = devices.error.components(separatedBy: "the ScreenCast portal could not share the screen")
        #expect(notes.count == 2, "one line about the portal expected: \(devices.error)")
        #expect(devices.error.contains("reading the screens through wlr-screencopy instead"))
    }
}
