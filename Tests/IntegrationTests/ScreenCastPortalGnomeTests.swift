// The ScreenCast portal really streaming: headless mutter 43 with xdg-desktop-portal-gnome 43 and the real
// xdg-desktop-portal 1.16 (scripts/gnome-portal-session). `avcapture record --screen` asks the portal; the portal's
// real dialog appears on mutter's virtual monitor and is answered as a user would, with pointer clicks (through
// mutter's RemoteDesktop API, a virtual pointer); the frames come from mutter over the portal's PipeWire remote,
// and ffmpeg decodes the recording.

import CaptureDrivers
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A virtual pointer on mutter's RemoteDesktop API: moves (from the top-left corner) and clicks.
private final class RemoteDesktopPointer {
    private static let service = "org.gnome.Mutter.RemoteDesktop"
    private static let session = "org.gnome.Mutter.RemoteDesktop.Session"
    private let connection: DBusConnection
    private let path: String

    init(bus: String) throws {
        connection = try DBusConnection(address: bus)
        let create = try DBusMessage.methodCall(
            destination: Self.service, path: "/org/gnome/Mutter/RemoteDesktop", interface: Self.service,
            member: "CreateSession")
        path = try #require(try connection.call(create, timeout: .seconds(5)).string(at: 0))
        try call("Start")
    }

    private func call(_ member: String, _ build: (DBusMessage) throws -> Void = { _ in }) throws {
        let message = try DBusMessage.methodCall(
            destination: Self.service, path: path, interface: Self.session, member: member)
        try build(message)
        _ = try connection.call(message, timeout: .seconds(5))
    }

    /// Clicks the left button at (`x`, `y`) of the virtual monitor.
    func click(x: Double, y: Double) throws {
        // Relative motion only (absolute motion needs a stream of the remote desktop's own): home to the corner.
        try call("NotifyPointerMotionRelative") { try $0.append(-5000.0); try $0.append(-5000.0) }
        try call("NotifyPointerMotionRelative") { try $0.append(x); try $0.append(y) }
        for pressed in [true, false] {
            try call("NotifyPointerButton") { try $0.append(Int32(0x110)); try $0.append(pressed) }  // BTN_LEFT
        }
    }

    deinit { try? call("Stop") }
}

@Suite(
    "The ScreenCast portal streaming from headless mutter (xdg-desktop-portal-gnome)", .serialized,
    .enabled(
        if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct ScreenCastPortalGnomeTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/gnome-portal-session").path

    @Test("record --screen through the portal: the dialog answered, mutter's picture and cursor in the movie")
    func recordThroughPortal() throws {
        guard MediaTool.available(for: "ScreenCastPortalGnomeTests.recordThroughPortal") else { return }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "openav-gnome-\(getpid())-\(UUID().uuidString.prefix(8))")
        let started = try ToolResult.run(executable: Self.script, ["start", directory.path])
        defer {
            _ = try? ToolResult.run(executable: Self.script, ["stop", directory.path])
            try? FileManager.default.removeItem(at: directory)
        }
        if started.status == 77 {
            print("Skipping ScreenCastPortalGnomeTests.recordThroughPortal: \(started.error)")
            return
        }
        try #require(started.status == 0, "gnome-portal-session failed: \(started.error)")
        var variables: [String: String] = [:]
        for line in started.outputText.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { variables[parts[0]] = parts[1] }
        }
        let bus = try #require(variables["DBUS_SESSION_BUS_ADDRESS"])
        let state = try #require(variables["XDG_STATE_HOME"])
        let movie = URL(fileURLWithPath: state).appendingPathComponent("portal.mov")

        // avcapture as the session's user: the portal identifies its caller through /proc/PID/root.
        let recorder = Process()
        let arguments = [
            toolPath!, "record", movie.path, "--screen", "--audio", "none", "--duration", "2",
        ]
        let environment = [
            "PATH=/usr/bin:/bin", "HOME=\(state)", "XDG_STATE_HOME=\(state)", "DBUS_SESSION_BUS_ADDRESS=\(bus)",
            "WAYLAND_DISPLAY=\(variables["WAYLAND_DISPLAY"] ?? "")", "OPENAV_DEVICES=all", "OPENAV_SCREENCAST=portal",
        ]
        let user = variables["RUN_AS"] ?? ""
        if getuid() == 0 && user != "root" {
            recorder.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            recorder.arguments =
                ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", "--", "/usr/bin/env", "-i"] + environment
                + arguments
        } else {
            recorder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            recorder.arguments = ["-i"] + environment + arguments
        }
        let errors = Pipe()
        recorder.standardError = errors
        recorder.standardOutput = FileHandle.nullDevice
        try recorder.run()

        // The dialog appears once the portal reaches Start; until then the clicks land on the empty desktop.
        // The row of the one monitor, then Share (xdg-desktop-portal-gnome 43's dialog, centred on 1280x720).
        let pointer = try RemoteDesktopPointer(bus: bus)
        let deadline = Date().addingTimeInterval(60)
        while recorder.isRunning && Date() < deadline {
            try pointer.click(x: 640, y: 386)
            try pointer.click(x: 852, y: 232)
            // Time must pass for the dialog to come up and for the recording to run.
            Thread.sleep(forTimeInterval: 1)
        }
        if recorder.isRunning { recorder.terminate() }
        recorder.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        try #require(recorder.terminationStatus == 0, "avcapture failed: \(stderr)")

        let decoded = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-sseof", "-0.5", "-i", movie.path, "-frames:v", "1", "-f", "rawvideo",
            "-pix_fmt", "rgb24", "-",
        ])
        try #require(decoded.status == 0, "\(decoded.error)")
        let frame = [UInt8](decoded.output)
        try #require(frame.count == 1280 * 720 * 3, "a 1280x720 frame expected, \(frame.count) bytes")
        func rgb(_ x: Int, _ y: Int) -> (Int, Int, Int) {
            let offset = (y * 1280 + x) * 3
            return (Int(frame[offset]), Int(frame[offset + 1]), Int(frame[offset + 2]))
        }
        // mutter's own background: a blue radial gradient, lightest in the middle (R and B swapped would be brown).
        let centre = rgb(640, 360)
        #expect(centre.2 > centre.0 + 60 && centre.2 > centre.1 + 20, "centre \(centre)")
        let corner = rgb(8, 8)
        #expect(corner.2 + 10 < centre.2, "corner \(corner), centre \(centre)")
        // The dialog has gone (its white list row was at the centre-ground), and the cursor is drawn in where the
        // last click left it (cursor mode embedded): its outline differs from the background.
        let row = rgb(640, 386)
        #expect(row.2 > row.0 + 40, "the dialog's row still shows: \(row)")
        let nearCursor = (0..<12).flatMap { dy in (0..<12).map { dx in rgb(852 + dx, 232 + dy) } }
        #expect(nearCursor.contains { abs($0.2 - centre.2) > 60 }, "no cursor near the last click")
    }
}
