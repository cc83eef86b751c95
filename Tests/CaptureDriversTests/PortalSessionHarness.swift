// A private desktop session for tests of the camera portal: a D-Bus session bus of its own, Debian's
// xdg-permission-store and xdg-desktop-portal on it, a stand-in for the desktop's Access dialog, and, on request,
// PipeWire with WirePlumber and a camera node published by GStreamer. Nothing of the machine's own session is used or
// changed: the session has its own XDG_RUNTIME_DIR, HOME and XDG data directories (where the permission store keeps
// its database) under a temporary directory, removed at the end.

import CaptureDrivers
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A private desktop session: bus, permission store, portal, and optionally PipeWire and a camera.
///
/// `start` returns nil, printing why, only where the machine lacks the programs (`make test` installs them).
/// Every process it starts is in a process group of its own and is stopped (SIGTERM, then SIGKILL after 2 s) and
/// reaped when the session goes, the camera by `stopCamera()` or with the session.
///
/// PipeWire and WirePlumber start before the portal, as at login. xdg-desktop-portal up to 1.18 (Debian 12 has
/// 1.16) counts for `IsCameraPresent` only the cameras PipeWire had when the portal connected to it: it drops its
/// registry listener after the first round trip (fixed in 1.19.0), so a camera published later is seen only after
/// `restartPortal()`.
///
/// Threading: make, use and drop it on one thread (a test's).
final class PortalSession {
    /// How the stand-in for the desktop's Access dialog (`org.freedesktop.impl.portal.Access`) answers.
    enum AccessDialogAnswer: Sendable {
        /// The user allowed the camera (response 0).
        case allow
        /// The user said no (response 1, cancelled).
        case deny
        /// The dialog stays open: no answer until the request is closed.
        case leaveOpen
    }

    /// The programs the session runs. Debian 12's paths.
    static let dbusDaemon = "/usr/bin/dbus-daemon"
    static let permissionStore = "/usr/libexec/xdg-permission-store"
    static let desktopPortal = "/usr/libexec/xdg-desktop-portal"
    static let gdbus = "/usr/bin/gdbus"
    static let pipeWire = "/usr/bin/pipewire"
    static let wirePlumber = "/usr/bin/wireplumber"
    static let gstLaunch = "/usr/bin/gst-launch-1.0"
    static let pwCLI = "/usr/bin/pw-cli"

    /// The bus name the stand-in Access dialog takes, as a desktop's portal backend would.
    static let accessBackendName = "org.freedesktop.impl.portal.desktop.openavtest"

    /// The session's variables: what `CameraPortal.connect(environment:)` and every child process get.
    let environment: [String: String]
    /// The bus's address (`unix:path=…/run/bus`).
    let busAddress: String
    /// The stand-in Access dialog; nil when the session was started without one answering.
    let accessDialog: AccessDialogStandIn?
    let directory: URL
    private var processes: [String: SessionProcess] = [:]
    private var cameraNumber = 0

    /// A session with its bus and permission store; with the portal unless `portal` is false; with an Access
    /// backend declared to the portal (so it offers the Camera interface) unless `accessBackend` is `.undeclared`;
    /// with PipeWire and WirePlumber when `pipeWire`. Nil, with the reason printed, where the programs are missing.
    static func start(
        portal: Bool = true, accessBackend: AccessBackend = .answering(.allow), pipeWire: Bool = false,
        for test: String
    ) throws -> PortalSession? {
        var needed = [dbusDaemon, permissionStore, gdbus]
        if portal { needed.append(desktopPortal) }
        if pipeWire { needed += [Self.pipeWire, wirePlumber, gstLaunch, pwCLI] }
        for program in needed where !FileManager.default.isExecutableFile(atPath: program) {
            print("Skipping \(test): \(program) is not installed (make test installs it)")
            return nil
        }
        return try PortalSession(portal: portal, accessBackend: accessBackend, pipeWire: pipeWire)
    }

    /// Whether the portal is told of an Access backend (a `.portal` file naming it), and whether one answers.
    enum AccessBackend {
        /// No backend declared: the portal offers no Camera interface.
        case undeclared
        /// Declared, but nothing owns its bus name: every dialog the portal tries fails.
        case declaredButAbsent
        /// Declared and answering as given (changeable later through `accessDialog`).
        case answering(AccessDialogAnswer)
    }

    private init(portal: Bool, accessBackend: AccessBackend, pipeWire: Bool) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "openav-portal-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true)
        let runtime = directory.appendingPathComponent("run")
        let portals = directory.appendingPathComponent("portals")
        for sub in ["run", "home", "data", "config", "state", "cache", "portals", "logs"] {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent(sub), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        busAddress = "unix:path=\(runtime.path)/bus"
        environment = [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "HOME": directory.appendingPathComponent("home").path,
            "XDG_RUNTIME_DIR": runtime.path,
            "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": directory.appendingPathComponent("config").path,
            "XDG_STATE_HOME": directory.appendingPathComponent("state").path,
            "XDG_CACHE_HOME": directory.appendingPathComponent("cache").path,
            "DBUS_SESSION_BUS_ADDRESS": busAddress,
            // xdg-desktop-portal reads its backends' .portal files from here instead of /usr/share (its test hook).
            "XDG_DESKTOP_PORTAL_DIR": portals.path,
            "XDG_CURRENT_DESKTOP": "openavtest",
            // GStreamer's plugin registry outside the throw-away HOME: built once, not at every camera start.
            "GST_REGISTRY": FileManager.default.temporaryDirectory.appendingPathComponent(
                "openav-portal-gst-registry-\(getuid()).bin"
            ).path,
        ]
        accessDialog =
            if case .answering(let answer) = accessBackend { AccessDialogStandIn(answer: answer) } else { nil }
        if case .undeclared = accessBackend {
            // No .portal file: the portal finds no Access backend.
        } else {
            try """
            [portal]
            DBusName=\(Self.accessBackendName)
            Interfaces=org.freedesktop.impl.portal.Access;
            UseIn=openavtest

            """.write(to: portals.appendingPathComponent("openavtest.portal"), atomically: true, encoding: .utf8)
        }
        do {
            try startBus(runtime: runtime)
            try start("permission-store", Self.permissionStore, ["--replace"])
            try waitForName("org.freedesktop.impl.portal.PermissionStore")
            try accessDialog?.start(busAddress: busAddress)
            if pipeWire {
                try start("pipewire", Self.pipeWire, [])
                try waitFor("PipeWire's socket") {
                    FileManager.default.fileExists(atPath: runtime.path + "/pipewire-0")
                }
                try start("wireplumber", Self.wirePlumber, [])
                // WirePlumber has no bus name; its PipeWire client appearing is its readiness. It loads dozens of
                // scripts first: on a loaded two-core machine that once took over 15 s, so it gets 30.
                try waitFor("WirePlumber", timeout: .seconds(30)) { self.pipeWireHasClient(named: "WirePlumber") }
            }
            if portal {
                try start("portal", Self.desktopPortal, ["--verbose"])
                try waitForName("org.freedesktop.portal.Desktop")
            }
        } catch {
            stopAll()
            throw error
        }
    }

    deinit {
        stopAll()
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: The permission store, through gdbus (an outside writer and reader of what our client reads)

    /// Stores `words` (`["yes"]`, `["no"]`, `["ask"]`) for `appID` in table `devices`, id `camera`.
    func setCameraPermission(appID: String, _ words: [String]) throws {
        let list = "[" + words.map { "'\($0)'" }.joined(separator: ", ") + "]"
        _ = try gdbusCall(
            "org.freedesktop.impl.portal.PermissionStore", "/org/freedesktop/impl/portal/PermissionStore",
            "org.freedesktop.impl.portal.PermissionStore.SetPermission", "devices", "true", "camera",
            Self.gvariantString(appID), list)
    }

    /// The store's entry for the camera as gdbus prints it (`({'': ['yes']}, <byte 0x00>)`); throws when there is
    /// none.
    func cameraPermissionsAsGDBusPrintsThem() throws -> String {
        try gdbusCall(
            "org.freedesktop.impl.portal.PermissionStore", "/org/freedesktop/impl/portal/PermissionStore",
            "org.freedesktop.impl.portal.PermissionStore.Lookup", "devices", "camera")
    }

    /// A string in GVariant's text format, quoted (gdbus reads `''` as the empty string, which a bare empty
    /// argument is not).
    static func gvariantString(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    /// Runs `gdbus call` on the session's bus; its output, or a failure with gdbus's message.
    func gdbusCall(_ destination: String, _ path: String, _ method: String, _ arguments: String...) throws -> String {
        let words = ["call", "--session", "--dest", destination, "--object-path", path, "--method", method] + arguments
        let (status, output) = try SessionProcess.run(
            Self.gdbus, words, environment: environment, timeout: .seconds(10))
        guard status == 0 else { throw PortalSessionFailure("gdbus \(method) failed (status \(status)): \(output)") }
        return output
    }

    // MARK: Processes

    /// Publishes a camera in PipeWire: GStreamer's test pattern through `pipewiresink mode=provide`, a
    /// `Video/Source` node with `media.role` Camera (the node kind the portal counts). Returns once PipeWire lists it.
    func startCamera() throws {
        cameraNumber += 1
        let name = "openav-test-camera-\(cameraNumber)"
        try start(
            "camera", Self.gstLaunch,
            [
                "-q", "videotestsrc", "is-live=true", "!",
                "video/x-raw,format=NV12,width=640,height=480,framerate=30/1", "!", "pipewiresink", "mode=provide",
                "client-name=\(name)",
                "stream-properties=props,media.class=Video/Source,media.role=Camera,node.name=\(name)",
            ])
        try waitFor("the camera node \(name)") { self.pipeWireHasNode(named: name) }
    }

    /// Stops the camera `startCamera()` published.
    func stopCamera() {
        processes.removeValue(forKey: "camera")?.stop()
    }

    /// Stops the portal and starts it again; returns once it owns its bus name. Clients keep working: they address
    /// the portal by that name.
    func restartPortal() throws {
        stop("portal")
        try start("portal", Self.desktopPortal, ["--verbose"])
        try waitForName("org.freedesktop.portal.Desktop")
    }

    /// Stops one of the session's processes (`permission-store`, `portal`, `pipewire`, `wireplumber`, `camera`).
    func stop(_ name: String) {
        processes.removeValue(forKey: name)?.stop()
    }

    /// The last lines a process wrote, for failure messages.
    func log(of name: String, lines: Int = 20) -> String {
        let text = (try? String(contentsOf: logURL(name), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    private func logURL(_ name: String) -> URL { directory.appendingPathComponent("logs/\(name).log") }

    private func start(_ name: String, _ program: String, _ arguments: [String]) throws {
        processes[name] = try SessionProcess(
            program, arguments, environment: environment, log: logURL(name).path)
    }

    private func startBus(runtime: URL) throws {
        // The session bus's usual policy, but no service directories: nothing is started on demand, so a test
        // controls exactly which programs run (a real session would start the portal when first asked).
        let configuration = directory.appendingPathComponent("bus.conf")
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>\(busAddress)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>

        """.write(to: configuration, atomically: true, encoding: .utf8)
        try start("bus", Self.dbusDaemon, ["--config-file=\(configuration.path)", "--nofork", "--nopidfile"])
        try waitFor("the session bus") { (try? DBusConnection(address: self.busAddress)) != nil }
    }

    /// Waits until a process owns `name` on the bus.
    private func waitForName(_ name: String) throws {
        let connection = try DBusConnection(address: busAddress)
        try waitFor(name) {
            guard
                let call = try? DBusMessage.methodCall(
                    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                    interface: "org.freedesktop.DBus", member: "GetNameOwner"),
                (try? call.append(name)) != nil
            else { return false }
            // An error reply (NameHasNoOwner) until someone owns it.
            return (try? connection.call(call, timeout: .seconds(1))) != nil
        }
    }

    /// Polls `condition` every 50 ms until it holds; throws, with the session's logs, after `timeout`.
    func waitFor(_ what: String, timeout: Duration = .seconds(15), _ condition: () -> Bool) throws {
        // The programs offer no readiness notification we could wait on instead.
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        guard eventually(timeout: seconds, every: 0.05, condition) else {
            let logs = processes.keys.sorted().map { "--- \($0):\n\(log(of: $0))" }.joined(separator: "\n")
            throw PortalSessionFailure("\(what) not ready within \(timeout)\n\(logs)")
        }
    }

    private func pipeWireListing(_ type: String) -> String {
        // pw-cli is PipeWire's own client: it answers from the daemon's registry.
        (try? SessionProcess.run(Self.pwCLI, ["ls", type], environment: environment, timeout: .seconds(5)))?
            .output ?? ""
    }

    private func pipeWireHasClient(named name: String) -> Bool {
        pipeWireListing("Client").contains("application.name = \"\(name)\"")
    }

    private func pipeWireHasNode(named name: String) -> Bool {
        pipeWireListing("Node").contains("node.name = \"\(name)\"")
    }

    private func stopAll() {
        // The reverse of the start order: clients before the daemons they use, the bus last.
        for name in ["camera", "portal", "wireplumber", "pipewire", "permission-store"] {
            processes.removeValue(forKey: name)?.stop()
        }
        accessDialog?.stop()
        for process in processes.values { process.stop() }
        processes.removeAll()
    }
}

/// A harness failure: what did not start, with the logs.
struct PortalSessionFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A stand-in for a desktop's Access dialog (`org.freedesktop.impl.portal.Access.AccessDialog`, what
/// xdg-desktop-portal-gnome shows as "Turn On Camera?"): it answers as told and records what it was asked.
///
/// It serves its bus name from a thread of its own, on a connection of its own, until `stop()`.
///
/// Threading: thread safe; a mutex guards the answer and the record.
final class AccessDialogStandIn: Sendable {
    /// One dialog the portal asked for.
    struct Request: Sendable, Equatable {
        /// The app the portal asks for (`""` for a host app).
        var appID: String
        var title: String
        /// The request handle (the portal's object path for it).
        var handle: String
    }

    private struct State {
        var answer: PortalSession.AccessDialogAnswer
        var requests: [Request] = []
        var closedHandles: [String] = []
        var stopping = false
        var finished = false
        var startFailure: String?
        var serving = false
    }

    private let state: Mutex<State>

    init(answer: PortalSession.AccessDialogAnswer) {
        state = Mutex(State(answer: answer))
    }

    /// How the next dialogs are answered.
    var answer: PortalSession.AccessDialogAnswer {
        get { state.withLock { $0.answer } }
        set { state.withLock { $0.answer = newValue } }
    }

    /// The dialogs asked for so far.
    var requests: [Request] { state.withLock { $0.requests } }

    /// The requests the portal closed (`org.freedesktop.impl.portal.Request.Close`, when the app gave up).
    var closedHandles: [String] { state.withLock { $0.closedHandles } }

    /// Connects, takes the backend's bus name and starts answering; returns once the name is owned.
    func start(busAddress: String) throws {
        let thread = Thread { [self] in serve(busAddress: busAddress) }
        thread.name = "AccessDialogStandIn"
        thread.start()
        // The serving thread reports through the state, which has nothing to wait on.
        _ = eventually(timeout: 10, every: 0.01) { state.withLock { $0.serving || $0.startFailure != nil } }
        let (serving, failure) = state.withLock { ($0.serving, $0.startFailure) }
        if serving { return }
        if let failure { throw PortalSessionFailure("the Access dialog stand-in did not start: \(failure)") }
        stop()
        throw PortalSessionFailure("the Access dialog stand-in did not take its name within 10 s")
    }

    /// Stops serving and waits (at most 2 s) for the thread to leave the bus.
    func stop() {
        state.withLock { $0.stopping = true }
        // The thread notices `stopping` within its 100 ms read timeout.
        _ = eventually(timeout: 2, every: 0.01) { state.withLock { $0.finished } }
    }

    private func serve(busAddress: String) {
        defer { state.withLock { $0.finished = true } }
        let connection: DBusConnection
        do {
            connection = try DBusConnection(address: busAddress)
            try connection.requestName(PortalSession.accessBackendName)
        } catch {
            state.withLock { $0.startFailure = "\(error)" }
            return
        }
        state.withLock { $0.serving = true }
        while !state.withLock({ $0.stopping }) {
            guard let message = try? connection.nextMessage(until: .now + .milliseconds(100)) else { continue }
            guard message.isMethodCall else { continue }
            try? answer(message, on: connection)
        }
    }

    private func answer(_ call: DBusMessage, on connection: DBusConnection) throws {
        if call.isMethodCall(interface: "org.freedesktop.impl.portal.Access", member: "AccessDialog") {
            // AccessDialog(o handle, s app_id, s parent_window, s title, s subtitle, s body, a{sv} options)
            let request = Request(
                appID: call.string(at: 1) ?? "?", title: call.string(at: 3) ?? "?", handle: call.string(at: 0) ?? "?")
            let answer = state.withLock { state in
                state.requests.append(request)
                return state.answer
            }
            let response: UInt32
            switch answer {
            case .allow: response = 0
            case .deny: response = 1
            case .leaveOpen: return  // The portal's call stays unanswered, as a dialog nobody clicks.
            }
            let reply = try call.methodReturn()
            try reply.append(response)
            try reply.appendVardict()
            try connection.send(reply)
        } else if call.isMethodCall(interface: "org.freedesktop.impl.portal.Request", member: "Close") {
            state.withLock { $0.closedHandles.append(call.path ?? "?") }
            try connection.send(try call.methodReturn())
        } else {
            // The portal's proxy asks for properties first (Properties.GetAll); an error answers at once.
            try connection.send(
                try call.errorReply(
                    name: "org.freedesktop.DBus.Error.UnknownMethod", message: "\(call.member ?? "?") is not here"))
        }
    }
}

/// A child process in a process group of its own, its output in a log file; stopped and reaped by `stop()`.
///
/// posix_spawn, not Foundation's `Process`: a test's thread blocks signals that `Process` would pass on to the
/// child (so SIGTERM would never reach it), and `Process` cannot give the child its own process group, which is
/// what lets `stop()` end whatever the child started too.
///
/// Threading: make and stop it on one thread.
final class SessionProcess {
    let processID: pid_t
    private var reaped = false

    init(_ program: String, _ arguments: [String], environment: [String: String], log: String) throws {
        processID = try Self.spawn(program, arguments, environment: environment, output: log)
    }

    deinit { stop() }

    /// SIGTERM to the process group, SIGKILL to what is left of it after 2 s (at once if the leader is gone), then
    /// reaps the leader. The leader is reaped last: until then its process ID cannot be reused, so the group
    /// signalled is still ours.
    func stop() {
        guard !reaped else { return }
        reaped = true
        kill(-processID, SIGTERM)
        // WNOWAIT: notice the exit without reaping yet. (si_pid stays 0 while the child runs; Swift reaches it
        // through glibc's union.) Polled: waitid has no timeout of its own.
        _ = eventually(timeout: 2, every: 0.01) {
            var information = siginfo_t()
            return waitid(P_PID, id_t(processID), &information, WEXITED | WNOHANG | WNOWAIT) != 0
                || information._sifields._kill.si_pid != 0
        }
        kill(-processID, SIGKILL)
        var status: Int32 = 0
        while waitpid(processID, &status, 0) < 0, errno == EINTR {}
    }

    /// Runs a program to its end (at most `timeout`, then it is killed); its exit status and its output.
    static func run(
        _ program: String, _ arguments: [String], environment: [String: String], timeout: Duration
    )
        throws -> (status: Int32, output: String)
    {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("openav-run-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let child = try spawn(program, arguments, environment: environment, output: output.path)
        var status: Int32 = 0
        // Polled: waitpid has no timeout of its own.
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        if !eventually(timeout: seconds, every: 0.01, { waitpid(child, &status, WNOHANG) != 0 }) {
            kill(-child, SIGKILL)
            waitpid(child, &status, 0)
        }
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        let exited = status & 0x7f == 0
        return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), text)
    }

    private static func spawn(
        _ program: String, _ arguments: [String], environment: [String: String], output: String
    )
        throws -> pid_t
    {
        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group (so the whole group can be signalled), no blocked signals, default handlers.
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let result = posix_spawn(&child, program, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw PortalSessionFailure("cannot start \(program): \(String(cString: strerror(result)))")
        }
        return child
    }
}
