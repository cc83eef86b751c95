import CaptureDrivers
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The camera portal client against Debian's own xdg-desktop-portal and xdg-permission-store, each test in a private
/// session (`PortalSession`): the store's decision read back, what `AccessCamera` answers for each decision, the
/// Access dialog when nothing is decided, the cases without a portal, and, with PipeWire, `IsCameraPresent` and
/// `OpenPipeWireRemote`.
///
/// The test process is a host (unsandboxed) app, so the portal knows it by the empty app id `""`.
@Suite(.serialized) struct CameraPortalTests {
    /// The id xdg-desktop-portal 1.16 gives every unsandboxed process.
    static let hostAppID = ""

    /// Checks that `body` throws a `CameraPortalError` of `kind` (its case's name) whose text contains `words`.
    static func expect<R>(
        _ kind: String, saying words: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws -> R
    ) {
        let error = #expect(throws: CameraPortalError.self, sourceLocation: sourceLocation) { try body() }
        guard let error else { return }
        // An enum case with a payload reflects as one child labelled with the case's name.
        #expect(Mirror(reflecting: error).children.first?.label == kind, "\(error)", sourceLocation: sourceLocation)
        #expect(error.description.contains(words), "\(error)", sourceLocation: sourceLocation)
    }

    // MARK: Where there is no portal, there is no client

    @Test func noSessionBusGivesNoPortal() throws {
        #expect(CameraPortal.connect(environment: [:]) == nil)
        #expect(CameraPortal.connect(environment: ["XDG_RUNTIME_DIR": "/nonexistent"]) == nil)
        Self.expect("noSessionBus", saying: "DBUS_SESSION_BUS_ADDRESS") { try CameraPortal.open(environment: [:]) }
        Self.expect("noSessionBus", saying: "/nonexistent/bus") {
            try CameraPortal.open(environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
        }
    }

    @Test func aBusWithoutPortalGivesNoPortal() throws {
        guard let session = try PortalSession.start(portal: false, for: "aBusWithoutPortalGivesNoPortal") else {
            return
        }
        #expect(CameraPortal.connect(environment: session.environment) == nil)
        Self.expect("noCameraPortal", saying: "no xdg-desktop-portal") {
            try CameraPortal.open(environment: session.environment, timeout: .seconds(5))
        }
    }

    /// xdg-desktop-portal offers the Camera interface only with an Access backend (the desktop's dialogs).
    @Test func aPortalWithoutAccessBackendHasNoCameraInterface() throws {
        guard
            let session = try PortalSession.start(
                accessBackend: .undeclared, for: "aPortalWithoutAccessBackendHasNoCameraInterface")
        else { return }
        #expect(CameraPortal.connect(environment: session.environment) == nil)
        Self.expect("noCameraPortal", saying: "org.freedesktop.impl.portal.Access") {
            try CameraPortal.open(environment: session.environment, timeout: .seconds(5))
        }
    }

    // MARK: The store's decision, and what AccessCamera answers for it

    /// `yes` or `no` in the store: that is the status, and `AccessCamera` answers it without a dialog.
    @Test(arguments: [("yes", CameraPortalPermission.granted), ("no", .denied)])
    func decidedInTheStoreAnswersWithoutADialog(word: String, permission: CameraPortalPermission) throws {
        guard let session = try PortalSession.start(for: "decidedInTheStoreAnswersWithoutADialog") else { return }
        let portal = try CameraPortal.open(environment: session.environment)
        #expect(portal.version >= 1)
        try session.setCameraPermission(appID: Self.hostAppID, [word])
        #expect(portal.storedPermission(appID: Self.hostAppID) == permission)
        #expect(try portal.accessCamera(timeout: .seconds(10)) == (permission == .granted))
        #expect(session.accessDialog?.requests == [])
        // Another app's decision is not ours.
        #expect(portal.storedPermission(appID: "org.example.Other") == .notDetermined)
        if permission == .denied {
            // Without permission the portal gives no PipeWire connection, and says so before trying PipeWire.
            Self.expect("notAllowed", saying: "AccessCamera") { try portal.openPipeWireRemote() }
        }
    }

    /// Nothing stored: the portal shows the desktop's dialog (here the stand-in) and keeps the user's answer, which
    /// gdbus reads back from the store as we do.
    @Test(arguments: [true, false]) func undecidedAsksTheUserAndKeepsTheAnswer(allow: Bool) throws {
        guard
            let session = try PortalSession.start(
                accessBackend: .answering(allow ? .allow : .deny), for: "undecidedAsksTheUserAndKeepsTheAnswer")
        else { return }
        let portal = try CameraPortal.open(environment: session.environment)
        #expect(portal.storedPermission(appID: Self.hostAppID) == .notDetermined)
        #expect(try portal.accessCamera(timeout: .seconds(10)) == allow)
        let requests = session.accessDialog?.requests ?? []
        #expect(requests.count == 1)
        #expect(requests.first?.appID == Self.hostAppID)
        #expect(requests.first?.title == "Turn On Camera?")
        #expect(portal.storedPermission(appID: Self.hostAppID) == (allow ? .granted : .denied))
        #expect(try session.cameraPermissionsAsGDBusPrintsThem().contains("{'': ['\(allow ? "yes" : "no")']}"))
        // Decided now: asking again answers the same without another dialog.
        #expect(try portal.accessCamera(timeout: .seconds(10)) == allow)
        #expect(session.accessDialog?.requests.count == 1)
    }

    /// `ask` in the store: the portal asks every time and stores nothing.
    @Test func askInTheStoreAsksEveryTime() throws {
        guard let session = try PortalSession.start(for: "askInTheStoreAsksEveryTime") else { return }
        let portal = try CameraPortal.open(environment: session.environment)
        try session.setCameraPermission(appID: Self.hostAppID, ["ask"])
        #expect(portal.storedPermission(appID: Self.hostAppID) == .notDetermined)
        #expect(try portal.accessCamera(timeout: .seconds(10)) == true)
        session.accessDialog?.answer = .deny
        #expect(try portal.accessCamera(timeout: .seconds(10)) == false)
        #expect(session.accessDialog?.requests.count == 2)
        #expect(portal.storedPermission(appID: Self.hostAppID) == .notDetermined)
    }

    /// A desktop whose Access backend is declared but does not answer (not running): the portal answers denied at
    /// once. xdg-desktop-portal up to 1.18 also stores that as the user's `no` (1.19.0 stopped it), so the app stays
    /// denied until the user changes it in the privacy settings.
    @Test func anAbsentAccessBackendIsADenial() throws {
        guard
            let session = try PortalSession.start(
                accessBackend: .declaredButAbsent, for: "anAbsentAccessBackendIsADenial")
        else { return }
        let portal = try CameraPortal.open(environment: session.environment)
        #expect(portal.storedPermission(appID: Self.hostAppID) == .notDetermined)
        #expect(try portal.accessCamera(timeout: .seconds(10)) == false)
        let stored = portal.storedPermission(appID: Self.hostAppID)
        print("After a dialog that could not be shown, the store holds: \(stored)")
        #expect(stored != .granted)
    }

    /// A dialog nobody answers: the wait ends at the timeout, and the request is closed (the portal passes the
    /// Close on to the dialog).
    @Test func anUnansweredDialogTimesOutAndIsClosed() throws {
        guard
            let session = try PortalSession.start(
                accessBackend: .answering(.leaveOpen), for: "anUnansweredDialogTimesOutAndIsClosed")
        else { return }
        let portal = try CameraPortal.open(environment: session.environment)
        let started = ContinuousClock.now
        Self.expect("timedOut", saying: "the request was closed") { try portal.accessCamera(timeout: .seconds(1)) }
        let waited = ContinuousClock.now - started
        #expect(waited >= .seconds(1) && waited < .seconds(5), "waited \(waited)")
        let dialog = try #require(session.accessDialog)
        try session.waitFor("the portal closing the dialog", timeout: .seconds(5)) { !dialog.closedHandles.isEmpty }
        #expect(dialog.closedHandles == dialog.requests.map(\.handle))
        // The portal still answers afterwards.
        try session.setCameraPermission(appID: Self.hostAppID, ["yes"])
        #expect(try portal.accessCamera(timeout: .seconds(10)) == true)
    }

    /// The store gone (its process ended): nothing can be read, which is undecided, not a crash or a hang.
    @Test func aStoreThatIsGoneIsUndecided() throws {
        guard let session = try PortalSession.start(for: "aStoreThatIsGoneIsUndecided") else { return }
        let portal = try CameraPortal.open(environment: session.environment)
        try session.setCameraPermission(appID: Self.hostAppID, ["yes"])
        #expect(portal.storedPermission(appID: Self.hostAppID) == .granted)
        session.stop("permission-store")
        let started = ContinuousClock.now
        #expect(portal.storedPermission(appID: Self.hostAppID) == .notDetermined)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    /// The portal gone: every call fails or answers false quickly; none hangs.
    @Test func aPortalThatIsGoneFailsWithoutHanging() throws {
        guard let session = try PortalSession.start(for: "aPortalThatIsGoneFailsWithoutHanging") else { return }
        let portal = try CameraPortal.open(environment: session.environment, timeout: .seconds(3))
        session.stop("portal")
        let started = ContinuousClock.now
        #expect(portal.isCameraPresent == false)
        #expect(throws: CameraPortalError.self) { try portal.accessCamera(timeout: .seconds(3)) }
        #expect(throws: CameraPortalError.self) { try portal.openPipeWireRemote() }
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    // MARK: With PipeWire: cameras and the PipeWire connection

    /// `IsCameraPresent` follows PipeWire's camera nodes (a GStreamer `pipewiresink` here), and with permission
    /// `OpenPipeWireRemote` hands over a PipeWire socket.
    @Test func cameraPresenceAndThePipeWireConnection() throws {
        guard
            let session = try PortalSession.start(pipeWire: true, for: "cameraPresenceAndThePipeWireConnection")
        else { return }
        let portal = try CameraPortal.open(environment: session.environment)
        #expect(portal.isCameraPresent == false)
        try session.startCamera()
        // xdg-desktop-portal before 1.19 sees only the cameras there when it connected to PipeWire (see
        // PortalSession); a restart makes it look again, and later versions see the camera at once anyway.
        try session.restartPortal()
        try session.waitFor("IsCameraPresent", timeout: .seconds(10)) { portal.isCameraPresent }

        // Without permission: refused. With it: a socket to PipeWire.
        Self.expect("notAllowed", saying: "no camera permission") { try portal.openPipeWireRemote() }
        try session.setCameraPermission(appID: Self.hostAppID, ["yes"])
        let descriptor = try portal.openPipeWireRemote()
        defer { close(descriptor) }
        var status = stat()
        #expect(fstat(descriptor, &status) == 0)
        #expect(status.st_mode & S_IFMT == S_IFSOCK, "OpenPipeWireRemote's descriptor is not a socket")
        var peer = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(descriptor, $0, &length) }
        }
        #expect(named == 0, "OpenPipeWireRemote's socket is not connected")
    }

    /// Without PipeWire the portal still answers, but has no camera and no PipeWire connection to give.
    @Test func withoutPipeWireThereIsNoCameraAndNoConnection() throws {
        guard let session = try PortalSession.start(for: "withoutPipeWireThereIsNoCameraAndNoConnection") else {
            return
        }
        let portal = try CameraPortal.open(environment: session.environment)
        try session.setCameraPermission(appID: Self.hostAppID, ["yes"])
        #expect(portal.isCameraPresent == false)
        Self.expect("failed", saying: "is the PipeWire daemon running") { try portal.openPipeWireRemote() }
    }

    // MARK: Finding the app id and the bus

    @Test func applicationIDComesFromFlatpakInfo() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "openav-flatpak-info-\(getpid())", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let info = directory.appendingPathComponent("flatpak-info")
        // The shape Flatpak writes: the runtime's group also has a `name`, which is not the app's.
        try """
        [Runtime]
        name=org.gnome.Platform

        [Application]
        runtime=runtime/org.gnome.Platform/x86_64/45
        name = org.example.Camera

        [Instance]
        instance-id=1234

        """.write(to: info, atomically: true, encoding: .utf8)
        let absent = directory.appendingPathComponent("absent").path
        #expect(CameraPortal.applicationID(flatpakInfo: info.path, cgroup: absent) == "org.example.Camera")
        #expect(CameraPortal.applicationID(flatpakInfo: absent, cgroup: absent) == "")
        // This test process is no Flatpak app, and no app the desktop launched.
        #expect(CameraPortal.applicationID() == "")
    }

    /// A host app's id from its systemd user unit, as xdg-desktop-portal 1.16 reads it.
    @Test(arguments: [
        // cgroup v2, launched by GNOME.
        (
            "0::/user.slice/user-7.slice/user@7.service/app.slice/app-gnome-org.example.Camera-4242.scope\n",
            "org.example.Camera"
        ),
        // A service unit with an instance, the convention's other form.
        (
            "0::/user.slice/user-7.slice/user@7.service/app.slice/app-org.kde.kamoso@2f1e.service\n",
            "org.kde.kamoso"
        ),
        // systemd's escaping of '-' in an id.
        (
            "0::/user.slice/user-7.slice/user@7.service/app.slice/app-gnome-org.example.Camera\\x2dlite-7.scope\n",
            "org.example.Camera-lite"
        ),
        // Hybrid cgroups: systemd's own v1 hierarchy decides.
        (
            "12:name=systemd:/user.slice/user-7.slice/user@7.service/app.slice/app-org.example.Cam-9.scope\n"
                + "0::/\n", "org.example.Cam"
        ),
        // A shell's program, a login session, a container: no app unit.
        ("0::/user.slice/user-7.slice/user@7.service/app.slice/vte-spawn-1f2e.scope\n", ""),
        ("0::/user.slice/user-7.slice/session-2.scope\n", ""),
        ("0::/\n", ""),
    ])
    func hostApplicationIDComesFromTheSystemdUnit(cgroup: String, expected: String) {
        #expect(CameraPortal.hostApplicationID(cgroup: cgroup) == expected)
    }

    @Test func sessionBusAddressFromTheEnvironment() throws {
        #expect(
            CameraPortal.sessionBusAddress(environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/7/bus"])
                == "unix:path=/run/user/7/bus")
        #expect(CameraPortal.sessionBusAddress(environment: [:]) == nil)
        // systemd's user bus socket, where DBUS_SESSION_BUS_ADDRESS is not set.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "openav bus \(getpid())", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(CameraPortal.sessionBusAddress(environment: ["XDG_RUNTIME_DIR": directory.path]) == nil)
        let socketDescriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socketDescriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = directory.path + "/bus"
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            path.utf8CString.withUnsafeBytes {
                bytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(bytes.count - 1)))
            }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(bound == 0)
        // The space is escaped, as D-Bus addresses require.
        #expect(
            CameraPortal.sessionBusAddress(environment: ["XDG_RUNTIME_DIR": directory.path])
                == "unix:path=" + directory.path.replacingOccurrences(of: " ", with: "%20") + "/bus")
    }
}
