// A headless Wayland desktop of the tests' own: sway (wlroots' headless backend, pixman renderer) showing a known
// picture and a changing window, started by scripts/wayland-session (which `make test` gives its Debian packages:
// sway, swaybg, foot, grim). Tests skip, saying why, where it cannot start.

import Foundation

/// A running `scripts/wayland-session`, stopped when the object goes.
///
/// `WAYLAND_DISPLAY` is set to its socket (an absolute path) while it runs, as `XvfbServer` sets `DISPLAY`, and
/// restored after; the suites run serially, so one session at a time owns the variable.
///
/// The picture (`scripts/wayland-session` says so too): a 1280x720 output, quadrants of 640x360 red (top left),
/// green (top right), blue (bottom left), yellow (bottom right); a white 200x100 window at (100, 100).
///
/// Threading: make and drop it on one thread.
public final class WaylandTestSession: @unchecked Sendable {
    /// The quadrants' colours as (red, green, blue), top left, top right, bottom left, bottom right.
    public static let quadrantColours = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0)]
    /// The output's size and the marker window's place.
    public static let width = 1280
    public static let height = 720
    public static let window = (x: 100, y: 100, width: 200, height: 100)

    /// The session's variables as the script printed them (WAYLAND_DISPLAY, XDG_RUNTIME_DIR, SWAYSOCK, and with
    /// the portal DBUS_SESSION_BUS_ADDRESS).
    public let variables: [String: String]
    public let directory: URL
    private let previousWaylandDisplay: String?

    /// The script, in this checkout.
    public static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/wayland-session").path

    /// A session, or nil (with the reason printed) where it cannot start here. `size` is the output's in pixels (the
    /// picture is stretched over it); `scale` 2 makes it HiDPI, its layout (window places, swaymsg) in units of 2x2
    /// pixels. `weston` starts Weston's headless backend instead: a compositor without wlr-screencopy, and nothing
    /// on it. `chooserCancels` (with `portal`) gives xdg-desktop-portal-wlr a chooser that chooses nothing, as a
    /// user who closes it.
    public static func start(
        portal: Bool = false, chooserCancels: Bool = false, size: String = "1280x720", scale: Int = 1,
        weston: Bool = false, for test: String
    ) -> WaylandTestSession? {
        do {
            let options =
                ["--size", size, "--scale", String(scale)] + (portal ? ["--portal"] : [])
                + (chooserCancels ? ["--chooser-cancels"] : []) + (weston ? ["--weston"] : [])
            return try WaylandTestSession(options: options, test: test)
        } catch let skip as Skip {
            print("Skipping \(test): \(skip.reason)")
            return nil
        } catch {
            print("Skipping \(test): the Wayland session did not start: \(error)")
            return nil
        }
    }

    private struct Skip: Error { var reason: String }

    private init(options: [String], test: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "openav-wayland-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true)
        let result = try ToolResult.run(executable: Self.script, ["start", directory.path] + options)
        if result.status == 77 { throw Skip(reason: result.error.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard result.status == 0 else {
            throw MediaToolFailure(description: "wayland-session failed (status \(result.status)): \(result.error)")
        }
        var variables: [String: String] = [:]
        for line in result.outputText.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            variables[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        self.variables = variables
        previousWaylandDisplay = ProcessInfo.processInfo.environment["WAYLAND_DISPLAY"]
        setenv("WAYLAND_DISPLAY", displayPath, 1)
    }

    deinit {
        if let previousWaylandDisplay {
            setenv("WAYLAND_DISPLAY", previousWaylandDisplay, 1)
        } else {
            unsetenv("WAYLAND_DISPLAY")
        }
        stopCompositor()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The compositor's socket.
    public var displayPath: String { variables["WAYLAND_DISPLAY"] ?? "" }

    /// Ends every process of the session now (the compositor exiting under a recording).
    public func stopCompositor() {
        _ = try? ToolResult.run(executable: Self.script, ["stop", directory.path])
    }

    /// Runs a sway command (`[app_id=openav-marker] move position 800 450`) through swaymsg; throws when it fails.
    public func swaymsg(_ command: String) throws {
        let result = try ToolResult.run(
            executable: "/usr/bin/swaymsg", ["-s", variables["SWAYSOCK"] ?? "", command])
        guard result.status == 0 else {
            throw MediaToolFailure(description: "swaymsg \(command) failed: \(result.error)\(result.outputText)")
        }
    }

    /// The expected colour of the background picture at (`x`, `y`) of the output.
    public static func backgroundColour(x: Int, y: Int) -> (Int, Int, Int) {
        quadrantColours[(y < height / 2 ? 0 : 2) + (x < width / 2 ? 0 : 1)]
    }
}
