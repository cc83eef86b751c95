import Foundation

/// A headless PipeWire session of the tests' own: a private session bus, `pipewire` and `wireplumber`, all in a
/// private XDG_RUNTIME_DIR, plus the source nodes a test publishes into it (GStreamer's `pipewiresink` in provide
/// mode for cameras, `pw-loopback` with a tone played into it for microphones).
///
/// The process's own PipeWire client reaches the session through `PIPEWIRE_RUNTIME_DIR`, which `start` sets for
/// the whole test process (and `stop` clears): PipeWire reads it at every connection, before XDG_RUNTIME_DIR.
/// Child processes (the avcapture binary) get `environment`.
///
/// Threading: one test at a time (the suites that use it are serialized).
public final class PipeWireTestSession: @unchecked Sendable {
    public let runtimeDirectory: URL
    /// What a child process needs to reach this session.
    public let environment: [String: String]
    private var processes: [ChildProcess] = []

    /// Why the session and its node publishers (GStreamer, pw-loopback) cannot run here, or nil.
    public static var unavailableReason: String? {
        missing(["pipewire", "wireplumber", "dbus-daemon", "gst-launch-1.0", "pw-loopback", "pw-dump"])
    }

    /// Why the session alone (the daemons, which find the kernel's devices themselves) cannot run here, or nil.
    public static var daemonsUnavailableReason: String? {
        missing(["pipewire", "wireplumber", "dbus-daemon", "pw-dump"])
    }

    private static func missing(_ tools: [String]) -> String? {
        for tool in tools where findExecutable(tool) == nil {
            return "\(tool) is not installed (make deps installs pipewire, wireplumber, pipewire-bin, dbus, "
                + "gstreamer1.0-pipewire)"
        }
        return nil
    }

    /// Starts the bus, the daemon and the session manager; returns when the daemon answers.
    public static func start() throws -> PipeWireTestSession {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "openav-pw-\(getpid())-\(UInt32.random(in: 0...UInt32.max))", isDirectory: true)
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = directory.path
        environment["PIPEWIRE_RUNTIME_DIR"] = directory.path
        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(directory.path)/bus"
        environment["XDG_CONFIG_HOME"] = directory.appendingPathComponent("config").path
        environment["XDG_STATE_HOME"] = directory.appendingPathComponent("state").path
        environment["PIPEWIRE_LOG_SYSTEMD"] = "false"
        environment.removeValue(forKey: "PIPEWIRE_REMOTE")
        let session = PipeWireTestSession(directory: directory, environment: environment)
        do {
            try session.launch(
                "dbus-daemon", ["--session", "--nofork", "--nopidfile", "--address=unix:path=\(directory.path)/bus"])
            try session.waitFor("the session bus") { FileManager.default.fileExists(atPath: "\(directory.path)/bus") }
            try session.launch("pipewire", [])
            try session.waitFor("the PipeWire daemon") {
                FileManager.default.fileExists(atPath: "\(directory.path)/pipewire-0")
            }
            try writeWirePlumberConfiguration(under: directory.appendingPathComponent("config"))
            try session.launch("wireplumber", [])
            // The session manager is up when it has registered as a client of the daemon.
            try session.waitFor("WirePlumber") { session.pwDump().contains("\"application.name\": \"WirePlumber\"") }
        } catch {
            session.stop()
            throw error
        }
        setenv("PIPEWIRE_RUNTIME_DIR", directory.path, 1)
        return session
    }

    /// WirePlumber's settings for a machine without Bluetooth or logind (a container, the kernel-test VM): its
    /// Bluetooth monitor wants systemd-logind's seat files, and where there are none WirePlumber quits at start.
    private static func writeWirePlumberConfiguration(under configuration: URL) throws {
        let directory = configuration.appendingPathComponent("wireplumber/bluetooth.lua.d", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data("bluez_monitor.enabled = false\n".utf8).write(to: directory.appendingPathComponent("80-openav-tests.lua"))
    }

    private init(directory: URL, environment: [String: String]) {
        runtimeDirectory = directory
        self.environment = environment
    }

    deinit { stop() }

    /// Stops every process this session started, newest first, and removes its directory.
    public func stop() {
        for process in processes.reversed() { Self.terminate(process) }
        processes.removeAll()
        if ProcessInfo.processInfo.environment["PIPEWIRE_RUNTIME_DIR"] == runtimeDirectory.path {
            unsetenv("PIPEWIRE_RUNTIME_DIR")
        }
        try? FileManager.default.removeItem(at: runtimeDirectory)
    }

    // MARK: Nodes

    /// Publishes a camera node that plays `clip`, raw NV12 frames of `width` by `height` (paced at `frameRate` by
    /// the pipeline's clock). Returns the publishing process: kill it to make the node vanish.
    @discardableResult
    public func publishCamera(
        name: String, description: String, clip: URL, width: Int, height: Int, frameRate: Int,
        extraProperties: String = ""
    ) throws -> ChildProcess {
        let properties = Self.streamProperties(name: name, description: description, extra: extraProperties)
        // rawvideoparse, not y4mdec: pipewiresink (1.22) crashes on y4mdec's buffers once a consumer links.
        return try launch(
            "gst-launch-1.0",
            [
                "-q", "filesrc", "location=\(clip.path)", "!", "rawvideoparse", "format=nv12", "width=\(width)",
                "height=\(height)", "framerate=\(frameRate)/1", "!", "pipewiresink", "mode=provide",
                "stream-properties=\(properties)",
            ])
    }

    /// Publishes a camera node of GStreamer's test source, as `caps` (a GStreamer caps string), live.
    @discardableResult
    public func publishTestCamera(name: String, description: String, caps: String) throws -> ChildProcess {
        let properties = Self.streamProperties(name: name, description: description, extra: "")
        return try launch(
            "gst-launch-1.0",
            [
                "-q", "videotestsrc", "is-live=true", "!", caps, "!", "pipewiresink", "mode=provide",
                "stream-properties=\(properties)",
            ])
    }

    /// `pipewiresink`'s `stream-properties` for a camera node, quoted for gst-launch (which joins its arguments and
    /// parses them again, so a description with spaces must be quoted inside the value).
    static func streamProperties(name: String, description: String, extra: String) -> String {
        "\"props,media.class=Video/Source,node.name=\(name),node.description=\\\"\(description)\\\"\(extra)\""
    }

    /// Publishes a microphone node: a `pw-loopback` whose capture side is an `Audio/Source` named `description`,
    /// fed a sine of `frequency` Hz by GStreamer through its playback side. Both sides join the Dummy-Driver's
    /// group, the timer a headless daemon has instead of a sound card: a source with no driver of its own is
    /// otherwise hung on whatever driver runs, a 30 fps camera node included, and then delivers 256 frames per
    /// video frame.
    @discardableResult
    public func publishMicrophone(name: String, description: String, frequency: Int) throws -> [ChildProcess] {
        let loopback = try launch(
            "pw-loopback",
            [
                "--capture-props=media.class=Audio/Sink node.name=\(name)-in node.group=pipewire.dummy",
                "--playback-props=media.class=Audio/Source node.name=\(name) node.description=\"\(description)\" "
                    + "node.group=pipewire.dummy",
                "--channels=2",
            ])
        try waitForNode("\(name)-in")
        let tone = try launch(
            "gst-launch-1.0",
            [
                "-q", "audiotestsrc", "is-live=true", "wave=sine", "freq=\(frequency)", "volume=0.5", "!",
                "audio/x-raw,rate=48000,channels=2", "!", "pipewiresink", "target-object=\(name)-in",
            ])
        return [loopback, tone]
    }

    /// Waits until the daemon lists a node named `name` (or no longer lists it, when `present` is false).
    public func waitForNode(_ name: String, present: Bool = true) throws {
        try waitFor("node \(name) \(present ? "to appear" : "to go")") {
            self.pwDump().contains("\"node.name\": \"\(name)\"") == present
        }
    }

    /// Ends a publishing process (SIGKILL: a node's program that dies, not one that says goodbye).
    public func kill(_ process: ChildProcess) {
        process.signal(SIGKILL)
        _ = process.waitForExit(seconds: 10)
    }

    /// `pw-dump`'s JSON of the whole graph (empty when it fails).
    public func pwDump() -> String {
        guard let executable = Self.findExecutable("pw-dump"),
            let result = try? ToolResult.run(executable: executable, [], environment: environment)
        else { return "" }
        return result.outputText
    }

    // MARK: Processes

    @discardableResult
    private func launch(_ tool: String, _ arguments: [String]) throws -> ChildProcess {
        guard let executable = Self.findExecutable(tool) else { throw SessionFailure("\(tool) is not installed") }
        let log = runtimeDirectory.appendingPathComponent("\(tool)-\(processes.count).log")
        let process = try ChildProcess(executable: executable, arguments: arguments, environment: environment, log: log)
        processes.append(process)
        return process
    }

    /// Polls `condition` until it holds, for at most ten seconds: these are other processes starting.
    private func waitFor(_ what: String, _ condition: () -> Bool) throws {
        guard waitUntil(timeout: 10, every: 0.05, condition) else { throw SessionFailure("timed out waiting for \(what)") }
    }

    private static func terminate(_ process: ChildProcess) {
        process.signal(SIGTERM)
        if !process.waitForExit(seconds: 3) {
            process.signal(SIGKILL)
            _ = process.waitForExit(seconds: 10)
        }
    }

    private static func findExecutable(_ tool: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return (path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin"])
            .map { "\($0)/\(tool)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    public struct SessionFailure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }
}

/// A program the tests start and reap themselves (posix_spawn and waitpid on its pid): Foundation's `Process` left a
/// crashed child unreaped here and then waited for it forever.
///
/// Threading: one thread at a time.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    private var exited = false

    init(executable: String, arguments: [String], environment: [String: String], log: URL) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, log.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard result == 0 else {
            throw PipeWireTestSession.SessionFailure("cannot start \(executable): \(String(cString: strerror(result)))")
        }
        self.pid = pid
    }

    deinit {
        if !exited {
            signal(SIGKILL)
            _ = waitForExit(seconds: 10)
        }
    }

    public var isRunning: Bool { !reap(blocking: false) }

    public func signal(_ number: Int32) {
        if !exited { _ = Foundation.kill(pid, number) }
    }

    /// Waits until the program has exited; false when `seconds` passed first.
    public func waitForExit(seconds: Double) -> Bool {
        waitUntil(timeout: seconds) { reap(blocking: false) }
    }

    private func reap(blocking: Bool) -> Bool {
        if exited { return true }
        var status: Int32 = 0
        let result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
        if result == pid || (result < 0 && errno == ECHILD) { exited = true }
        return exited
    }
}
