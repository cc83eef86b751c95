// The ScreenCast portal really streaming: headless mutter 43 with xdg-desktop-portal-gnome 43 and the real
// xdg-desktop-portal 1.16 (scripts/gnome-portal-session). `avcapture record --screen` asks the portal; the portal's
// real dialog appears on mutter's virtual monitor and is answered as a user would, with pointer clicks (through
// mutter's RemoteDesktop API, a virtual pointer); the frames come from mutter over the portal's PipeWire remote,
// and ffmpeg decodes the recording.

import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(
    "The ScreenCast portal streaming from headless mutter (xdg-desktop-portal-gnome)", .serialized,
    .enabled(
        if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct ScreenCastPortalGnomeTests {
    /// mutter's background near the pointer's place, and how far a pixel may stray from it and still be background
    /// (the gradient changes slowly; the arrow's black outline and white body are far from it).
    private static func isBackground(_ pixel: (Int, Int, Int), near reference: (Int, Int, Int)) -> Bool {
        abs(pixel.0 - reference.0) < 30 && abs(pixel.1 - reference.1) < 30 && abs(pixel.2 - reference.2) < 30
    }

    private static let cursor = (x: Int(GnomePortalSession.shareButton.x), y: Int(GnomePortalSession.shareButton.y))

    @Test("record --screen --cursor through the portal: the dialog answered, mutter's picture and cursor in the movie")
    func recordThroughPortal() throws {
        guard let desktop = try GnomePortalSession.start(for: "ScreenCastPortalGnomeTests.recordThroughPortal")
        else { return }
        let movie = desktop.state.appendingPathComponent("portal.mov")
        let recorder = try desktop.recorder([
            "record", movie.path, "--screen", "--cursor", "--audio", "none", "--duration", "2",
        ])
        try desktop.answerDialogs(while: recorder)
        try #require(recorder.wait() == 0, "avcapture failed: \(recorder.standardError)")

        let frame = try DecodedRGBFrame.last(of: movie, width: 1280, height: 720)
        // mutter's own background: a blue radial gradient, lightest in the middle (R and B swapped would be brown).
        let centre = frame.rgb(640, 360)
        #expect(centre.2 > centre.0 + 60 && centre.2 > centre.1 + 20, "centre \(centre)")
        let corner = frame.rgb(8, 8)
        #expect(corner.2 + 10 < centre.2, "corner \(corner), centre \(centre)")
        // The dialog has gone (its white list row was at the centre-ground), and the cursor is drawn in where the
        // last click left it (cursor mode embedded): its outline differs from the background.
        let row = frame.rgb(640, 386)
        #expect(row.2 > row.0 + 40, "the dialog's row still shows: \(row)")
        let background = frame.rgb(Self.cursor.x - 20, Self.cursor.y + 6)
        #expect(
            frame.pointerRegion(x: Self.cursor.x, y: Self.cursor.y).contains {
                !Self.isBackground($0, near: background)
            }, "no cursor near the last click")
    }

    @Test("record --screen without --cursor: one portal session in cursor mode hidden, one dialog, no pointer")
    func cursorHidden() throws {
        guard let desktop = try GnomePortalSession.start(for: "ScreenCastPortalGnomeTests.cursorHidden"),
            let monitor = try PortalRequestMonitor.start(
                bus: desktop.bus, for: "ScreenCastPortalGnomeTests.cursorHidden")
        else { return }
        var regions: [Bool: [(Int, Int, Int)]] = [:]
        var backgrounds: [Bool: (Int, Int, Int)] = [:]
        // The same pointer, still on the share button after the dialog's last click, recorded without and with.
        for withCursor in [false, true] {
            let movie = desktop.state.appendingPathComponent("cursor-\(withCursor).mov")
            let recorder = try desktop.recorder(
                ["record", movie.path, "--screen", "--audio", "none", "--duration", "2"]
                    + (withCursor ? ["--cursor"] : []))
            // The first recording asks (no remembered choice yet); the second is restored with the token. Its clicks
            // (none needed unless a dialog comes) stop once it records, so the pointer rests on the share button for
            // the rest of it: clicking on to the end could leave its last frame with the pointer on the way.
            try desktop.answerDialogs(while: recorder) { withCursor && (recorder.lastStatusSeconds ?? 0) >= 0.5 }
            try #require(recorder.wait() == 0, "avcapture failed: \(recorder.standardError)")
            if !withCursor {
                // One session, made in the mode the recording needs: one request of each kind, one dialog.
                for member in ["CreateSession", "SelectSources", "Start"] {
                    #expect(monitor.count(member) == 1, "\(member) calls: \(monitor.count(member))")
                }
                #expect(monitor.cursorModes == [1], "cursor_mode asked for: \(monitor.cursorModes) (1 is hidden)")
                let dialogs = monitor.count("Start", interface: "org.freedesktop.impl.portal.ScreenCast")
                #expect(dialogs == 1, "the backend's Start (its dialog) ran \(dialogs) times")
            }
            let frame = try DecodedRGBFrame.last(of: movie, width: 1280, height: 720)
            regions[withCursor] = frame.pointerRegion(x: Self.cursor.x, y: Self.cursor.y)
            backgrounds[withCursor] = frame.rgb(Self.cursor.x - 20, Self.cursor.y + 6)
        }
        monitor.stop()
        let shown = try #require(regions[true]).filter { !Self.isBackground($0, near: backgrounds[true]!) }
        let hidden = try #require(regions[false]).filter { !Self.isBackground($0, near: backgrounds[false]!) }
        #expect(shown.count >= 10, "the cursor should show with --cursor: \(shown.count) pixels off the background")
        #expect(hidden.isEmpty, "the cursor should not show without --cursor: \(hidden)")
    }

    @Test("Cursor mode metadata: the pointer drawn from the stream's cursor meta where RemoteDesktop moved it")
    func cursorFromMetadata() throws {
        let name = "ScreenCastPortalGnomeTests.cursorFromMetadata"
        guard let desktop = try GnomePortalSession.start(for: name),
            let monitor = try PortalRequestMonitor.start(bus: desktop.bus, for: name)
        else { return }
        let movie = desktop.state.appendingPathComponent("metadata.mov")
        let recorder = try desktop.recorder(
            ["record", movie.path, "--screen", "--cursor", "--audio", "none", "--duration", "4"],
            settings: ["OPENAV_SCREENCAST_CURSOR=metadata"])
        try desktop.answerDialogs(while: recorder) { (recorder.lastStatusSeconds ?? 0) >= 0.5 }
        // Away from the dialog's buttons, over the bare background: mutter sends the move as cursor meta alone.
        let moved = (x: 300, y: 500)
        // The pointer's session lives until the recording ends: stopping it at once can drop the motion not yet
        // applied (the pointer left in the corner it was homed to).
        let pointer = try RemoteDesktopPointer(bus: desktop.bus)
        try pointer.move(x: Double(moved.x), y: Double(moved.y))
        let status = recorder.wait()
        withExtendedLifetime(pointer) {}
        try #require(status == 0, "avcapture failed: \(recorder.standardError)")
        monitor.stop()
        #expect(monitor.cursorModes == [4], "cursor_mode asked for: \(monitor.cursorModes) (4 is metadata)")

        let frame = try DecodedRGBFrame.last(of: movie, width: 1280, height: 720)
        let background = frame.rgb(moved.x - 20, moved.y + 6)
        let drawn = frame.pointerRegion(x: moved.x, y: moved.y).filter { !Self.isBackground($0, near: background) }
        #expect(drawn.count >= 10, "no cursor where the pointer was moved: \(drawn.count) pixels off the background")
        // Nothing left where the pointer was before (the share button, the dialog gone).
        let before = frame.rgb(Self.cursor.x - 20, Self.cursor.y + 6)
        let stale = frame.pointerRegion(x: Self.cursor.x, y: Self.cursor.y).filter {
            !Self.isBackground($0, near: before)
        }
        #expect(stale.isEmpty, "a cursor still drawn at the old place: \(stale.count) pixels")
    }

    // How far window sources are tested: the request and its dialog, not a window chosen in it (the dialog's
    // window rows were not located for clicks), so not the recording of a window.
    @Test("record --screen window: SelectSources asks for windows, the dialog comes, Escape cancels it (exit 69)")
    func windowSource() throws {
        let name = "ScreenCastPortalGnomeTests.windowSource"
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/weston-simple-shm") else {
            print("Skipping \(name): weston-simple-shm is missing (Debian package weston)")
            return
        }
        guard let desktop = try GnomePortalSession.start(for: name),
            let monitor = try PortalRequestMonitor.start(bus: desktop.bus, for: name)
        else { return }
        // A window for the dialog to list.
        let client = try desktop.client(["/usr/bin/weston-simple-shm"])
        defer { kill(client.processIdentifier, SIGKILL) }  // The test's blocked signals include SIGTERM.
        let movie = desktop.state.appendingPathComponent("window.mov")
        let recorder = try desktop.recorder([
            "record", movie.path, "--screen", "window", "--audio", "none", "--duration", "2",
        ])
        let keyboard = try RemoteDesktopPointer(bus: desktop.bus)
        // Time must pass for the dialog to come up (the backend's Start shows it) and to take the key: Escape is
        // pressed each second once it is up, until the recorder gives up.
        _ = waitUntil(timeout: 60, every: 1) {
            if monitor.count("Start", interface: "org.freedesktop.impl.portal.ScreenCast") > 0 {
                try? keyboard.pressEscape()
            }
            return !recorder.isRunning
        }
        let status = recorder.wait(seconds: 10)
        monitor.stop()
        #expect(monitor.sourceTypes == [2], "types asked for: \(monitor.sourceTypes) (2 is window)")
        #expect(monitor.count("Start", interface: "org.freedesktop.impl.portal.ScreenCast") == 1, "no dialog")
        #expect(status == 69, "exit \(status), 69 expected: \(recorder.standardError)")
        #expect(recorder.standardError.contains("cancelled"), "\(recorder.standardError)")
    }

    @Test("frames --screen --changes-only: the capture alone, without an encoder: one BGRA frame of mutter's screen")
    func framesWithoutEncoder() throws {
        guard let desktop = try GnomePortalSession.start(for: "ScreenCastPortalGnomeTests.framesWithoutEncoder")
        else { return }
        let reader = try desktop.recorder(["frames", "--screen", "--changes-only", "--format", "bgra", "--count", "1"])
        try desktop.answerDialogs(while: reader)
        try #require(reader.wait() == 0, "avcapture failed: \(reader.standardError)")
        let bytes = [UInt8](reader.standardOutputData)
        try #require(bytes.count == 1280 * 720 * 4, "one 1280x720 BGRA frame expected, \(bytes.count) bytes")
        // mutter's blue background in the top-left corner, in BGRA order (no dialog reaches it).
        let corner = (blue: Int(bytes[(8 * 1280 + 8) * 4]), red: Int(bytes[(8 * 1280 + 8) * 4 + 2]))
        #expect(corner.blue > corner.red + 20, "the corner \(corner)")
    }

    @Test("The restore token: a second recording gets the remembered screen with no dialog and no input")
    func restoreWithoutDialog() throws {
        guard let desktop = try GnomePortalSession.start(for: "ScreenCastPortalGnomeTests.restoreWithoutDialog")
        else { return }
        let first = try desktop.recorder([
            "record", desktop.state.appendingPathComponent("first.mov").path, "--screen", "--audio", "none",
            "--duration", "1",
        ])
        try desktop.answerDialogs(while: first)
        try #require(first.wait() == 0, "avcapture failed: \(first.standardError)")
        // xdg-desktop-portal-gnome 43 ticks "Remember this selection" itself when persist_mode is not 0.
        let tokenFile = desktop.state.appendingPathComponent("openavcapture/screencast-restore-token")
        let token = try String(contentsOf: tokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(UUID(uuidString: token) != nil, "the stored token: \(token)")

        // Nothing answers a dialog now: a dialog would hold Start until the wait below ends it.
        let movie = desktop.state.appendingPathComponent("second.mov")
        let second = try desktop.recorder([
            "record", movie.path, "--screen", "--audio", "none", "--duration", "1", "--crop", "480,240,320,240",
        ])
        let status = second.wait(seconds: 60)
        try #require(status == 0, "the second recording needed an answer (status \(status)): \(second.standardError)")
        let frame = try DecodedRGBFrame.last(of: movie, width: 320, height: 240)
        // The middle of mutter's gradient, and no dialog over it.
        let middle = frame.rgb(160, 120)
        #expect(middle.2 > middle.0 + 60, "the middle of the crop: \(middle)")
        // The portal answers a restored session with a token again (xdg-desktop-portal 1.16 keeps the same one).
        let next = try String(contentsOf: tokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(UUID(uuidString: next) != nil, "the token after the second recording: \(next)")
    }

    @Test("mutter killed mid-recording: the recording ends with the disconnect, its file finalized")
    func compositorKilled() throws {
        guard let desktop = try GnomePortalSession.start(for: "ScreenCastPortalGnomeTests.compositorKilled")
        else { return }
        let movie = desktop.state.appendingPathComponent("killed.mov")
        let recorder = try desktop.recorder([
            "record", movie.path, "--screen", "--audio", "none", "--duration", "120", "--fps", "30",
        ])
        try desktop.answerDialogs(while: recorder) { (recorder.lastStatusSeconds ?? 0) >= 1.5 }
        // A second and a half recorded: the status lines come every half second of real time.
        try #require(
            (recorder.lastStatusSeconds ?? 0) >= 1.5, "the recording never got going: \(recorder.standardError)")
        try desktop.killCompositor()
        let status = recorder.wait(seconds: 60)
        let lastShown = try #require(recorder.lastStatusSeconds)
        #expect(status == 69, "exit \(status), 69 (unavailable) expected: \(recorder.standardError)")
        #expect(
            recorder.standardOutput.contains("stopped: the device was disconnected"),
            "stdout: \(recorder.standardOutput)")
        #expect(recorder.standardError.contains("the recording ended early"), "\(recorder.standardError)")
        // The file is whole: ffprobe reads its duration, and every frame decodes.
        let probe = try MediaTool.ffprobe.run([
            "-v", "error", "-show_entries", "format=duration", "-of", "default=noprint_wrappers=1:nokey=1", movie.path,
        ])
        try #require(probe.status == 0, "ffprobe: \(probe.error)")
        let duration = try #require(Double(probe.outputText.trimmingCharacters(in: .whitespacesAndNewlines)))
        // At least what the recorder last said it had recorded (the status line rounds to a tenth; a frame's
        // rounding aside).
        #expect(duration + 0.05 + 1.0 / 30 >= lastShown, "the file's \(duration) s, the recorder showed \(lastShown) s")
        // Each frame at its own time, in the file's own time base: a screen's frames come when they come, and under
        // load two can be closer than a tick of the rate ffmpeg guesses, which its null muxer then calls
        // "non monotonically increasing dts" of its own output (-fps_mode passthrough alone keeps that tick).
        let decode = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-i", movie.path, "-fps_mode", "passthrough", "-enc_time_base", "-1", "-f",
            "null", "-",
        ])
        #expect(decode.status == 0 && decode.error.isEmpty, "ffmpeg decoding the file: \(decode.error)")
        // And the file's own times strictly increase.
        let times = try MediaTool.ffprobe.run([
            "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=dts_time", "-of", "csv=p=0", movie.path,
        ]).outputText.split(whereSeparator: \.isNewline).compactMap { Double($0) }
        #expect(times.count >= 2 && zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "packet times \(times)")
    }
}
