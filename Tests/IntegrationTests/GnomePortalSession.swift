// What the ScreenCast portal tests on mutter share: the session of scripts/gnome-portal-session, `avcapture` run as
// that session's user, and a virtual pointer on mutter's RemoteDesktop API that answers the portal's dialog.

import CaptureDrivers
import Foundation
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A virtual pointer on mutter's RemoteDesktop API: moves (from the top-left corner) and clicks.
final class RemoteDesktopPointer {
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

    /// Moves the pointer to (`x`, `y`) of the virtual monitor.
    func move(x: Double, y: Double) throws {
        // Relative motion only (absolute motion needs a stream of the remote desktop's own): home to the corner.
        try call("NotifyPointerMotionRelative") {
            try $0.append(-5000.0); try $0.append(-5000.0)
        }
        try call("NotifyPointerMotionRelative") {
            try $0.append(x); try $0.append(y)
        }
    }

    /// Presses and releases Escape (on the focused window: the portal's dialog).
    func pressEscape() throws {
        for pressed in [true, false] {
            try call("NotifyKeyboardKeysym") {
                try $0.append(UInt32(0xff1b)); try $0.append(pressed)
            }  // XK_Escape
        }
    }

    /// Clicks the left button at (`x`, `y`) of the virtual monitor.
    func click(x: Double, y: Double) throws {
        try move(x: x, y: y)
        for pressed in [true, false] {
            try call("NotifyPointerButton") {
                try $0.append(Int32(0x110)); try $0.append(pressed)
            }  // BTN_LEFT
        }
    }

    deinit { try? call("Stop") }
}

/// scripts/gnome-portal-session's desktop, started for one test and stopped with it.
final class GnomePortalSession {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/gnome-portal-session").path
    /// Where the share button and the monitor's row of xdg-desktop-portal-gnome 43's dialog are on the 1280x720
    /// virtual monitor (the dialog is centred); the last click leaves the pointer on the share button.
    static let monitorRow = (x: 640.0, y: 386.0)
    static let shareButton = (x: 852.0, y: 232.0)

    let directory: URL
    let variables: [String: String]
    var bus: String { variables["DBUS_SESSION_BUS_ADDRESS"] ?? "" }
    var state: URL { URL(fileURLWithPath: variables["XDG_STATE_HOME"] ?? directory.path) }

    /// The session, or nil (said why) where a program is missing.
    static func start(for test: String) throws -> GnomePortalSession? {
        guard MediaTool.available(for: test) else { return nil }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "openav-gnome-\(getpid())-\(UUID().uuidString.prefix(8))")
        let started = try ToolResult.run(executable: script, ["start", directory.path])
        if started.status == 77 {
            print("Skipping \(test): \(started.error)")
            try? FileManager.default.removeItem(at: directory)
            return nil
        }
        guard started.status == 0 else {
            _ = try? ToolResult.run(executable: script, ["stop", directory.path])
            throw GnomeSessionFailure("gnome-portal-session failed: \(started.error)")
        }
        var variables: [String: String] = [:]
        for line in started.outputText.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { variables[parts[0]] = parts[1] }
        }
        return GnomePortalSession(directory: directory, variables: variables)
    }

    private init(directory: URL, variables: [String: String]) {
        self.directory = directory
        self.variables = variables
    }

    deinit {
        _ = try? ToolResult.run(executable: Self.script, ["stop", directory.path])
        try? FileManager.default.removeItem(at: directory)
    }

    /// Kills mutter (SIGKILL, as a crash), leaving the bus, PipeWire and the portal running.
    func killCompositor() throws {
        let result = try ToolResult.run(executable: Self.script, ["kill-compositor", directory.path])
        guard result.status == 0 else { throw GnomeSessionFailure("kill-compositor failed: \(result.error)") }
    }

    /// `avcapture ARGUMENTS` as the session's user (the portal identifies its caller through /proc/PID/root, which
    /// it cannot open for another user's process), started; `settings` are more NAME=VALUE variables for it.
    func recorder(_ arguments: [String], settings: [String] = []) throws -> PortalRecorder {
        let environment =
            settings + [
                "PATH=/usr/bin:/bin", "HOME=\(state.path)", "XDG_STATE_HOME=\(state.path)",
                "DBUS_SESSION_BUS_ADDRESS=\(bus)",
                "WAYLAND_DISPLAY=\(variables["WAYLAND_DISPLAY"] ?? "")", "OPENAV_DEVICES=all",
                "OPENAV_SCREENCAST=portal",
            ]
        let user = variables["RUN_AS"] ?? ""
        let process = Process()
        if getuid() == 0 && user != "root" {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments =
                ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", "--", "/usr/bin/env", "-i"] + environment
                + [toolPath!] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["-i"] + environment + [toolPath!] + arguments
        }
        return try PortalRecorder(process)
    }

    /// A Wayland client of mutter (`program` and its arguments) as the session's user, started; the caller ends it.
    func client(_ program: [String]) throws -> Process {
        let process = Process()
        let environment = [
            "PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=\(variables["XDG_RUNTIME_DIR"] ?? "")",
            "WAYLAND_DISPLAY=\(variables["WAYLAND_DISPLAY"] ?? "")",
        ]
        let user = variables["RUN_AS"] ?? ""
        process.executableURL = URL(
            fileURLWithPath: getuid() == 0 && user != "root" ? "/usr/bin/setpriv" : "/usr/bin/env")
        process.arguments =
            (getuid() == 0 && user != "root"
                ? ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", "--", "/usr/bin/env", "-i"] : ["-i"])
            + environment + program
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Answers the portal's dialog as a user would (the monitor's row, then Share) once a second while `recorder`
    /// runs, for at most `seconds`; the dialog appears once the portal reaches Start, and until then the clicks land
    /// on the empty desktop.
    /// Stops early once `done` says so.
    func answerDialogs(
        while recorder: PortalRecorder, seconds: Double = 60, until done: () -> Bool = { false }
    ) throws {
        let pointer = try RemoteDesktopPointer(bus: bus)
        let deadline = Date().addingTimeInterval(seconds)
        while recorder.isRunning && Date() < deadline && !done() {
            try pointer.click(x: Self.monitorRow.x, y: Self.monitorRow.y)
            try pointer.click(x: Self.shareButton.x, y: Self.shareButton.y)
            // Time must pass for the dialog to come up and for the recording to run.
            Thread.sleep(forTimeInterval: 1)
        }
    }
}

/// A running `avcapture`, its standard error collected as it comes (the status lines of a recording).
///
/// Threading: use it from one thread (a test's); the pipes' handlers write through `Collected`'s mutexes.
final class PortalRecorder {
    private let process: Process
    private let collected = Collected()

    /// What the pipes brought so far, filled on Foundation's reading threads.
    private final class Collected: Sendable {
        let errors = Mutex("")
        let output = Mutex(Data())
    }

    init(_ process: Process) throws {
        self.process = process
        let errorPipe = Pipe()
        let outputPipe = Pipe()
        process.standardError = errorPipe
        process.standardOutput = outputPipe
        let collected = self.collected
        errorPipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if !data.isEmpty { collected.errors.withLock { $0 += String(decoding: data, as: UTF8.self) } }
        }
        outputPipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if !data.isEmpty { collected.output.withLock { $0.append(data) } }
        }
        try process.run()
    }

    var isRunning: Bool { process.isRunning }
    var standardError: String { collected.errors.withLock { $0 } }
    var standardOutput: String { String(decoding: standardOutputData, as: UTF8.self) }
    var standardOutputData: Data { collected.output.withLock { $0 } }

    /// The recorded duration the newest status line shows ("    2.5 s   30.0 fps  dropped 0 …"), or nil.
    var lastStatusSeconds: Double? {
        standardError.split(separator: "\n").reversed().lazy.compactMap { line -> Double? in
            let fields = line.split(separator: " ")
            guard fields.count > 3, fields[1] == "s", fields[3] == "fps" else { return nil }
            return Double(fields[0])
        }.first
    }

    /// Waits for the exit, at most `seconds` (then kills it); the exit status.
    func wait(seconds: Double = 60) -> Int32 {
        // Polled: Process has no wait with a timeout.
        _ = waitUntil(timeout: seconds, every: 0.1) { !process.isRunning }
        process.killAndReap()
        // The last of the pipes: what was written just before the exit.
        Thread.sleep(forTimeInterval: 0.2)
        return process.terminationStatus
    }

    /// Killed, not terminated (see `killAndReap`): a recorder waiting on a dialog nobody answers would otherwise
    /// wait for the portal's own 300 s timeout.
    deinit { process.killAndReap() }
}

/// A frame of a movie as ffmpeg decodes it: RGB, `width` by `height`.
struct DecodedRGBFrame {
    let width: Int
    let bytes: [UInt8]

    /// The last frame of `movie` (ffmpeg seeks to half a second before the end).
    static func last(of movie: URL, width: Int, height: Int) throws -> DecodedRGBFrame {
        let decoded = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-sseof", "-0.5", "-i", movie.path, "-frames:v", "1", "-f", "rawvideo",
            "-pix_fmt", "rgb24", "-",
        ])
        try #require(decoded.status == 0, "\(decoded.error)")
        let bytes = [UInt8](decoded.output)
        try #require(bytes.count == width * height * 3, "a \(width)x\(height) frame expected, \(bytes.count) bytes")
        return DecodedRGBFrame(width: width, bytes: bytes)
    }

    func rgb(_ x: Int, _ y: Int) -> (Int, Int, Int) {
        let offset = (y * width + x) * 3
        return (Int(bytes[offset]), Int(bytes[offset + 1]), Int(bytes[offset + 2]))
    }

    /// The pixels of the 12x12 square below and right of (`x`, `y`): where the pointer's arrow is drawn.
    func pointerRegion(x: Int, y: Int) -> [(Int, Int, Int)] {
        (0..<12).flatMap { dy in (0..<12).map { dx in rgb(x + dx, y + dy) } }
    }
}

/// The session script failing, with what it said.
struct GnomeSessionFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
