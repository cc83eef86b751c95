import CaptureDrivers
import Foundation
import Synchronization
import Testing

/// One camera, one entry: a raw device a PipeWire node stands for is listed as that node only, and
/// `OPENAV_BACKEND` picks the backends.
@Suite("Device ownership between PipeWire and the raw backends")
struct DeviceOwnershipTests {
    /// A driver of the PipeWire family whose one device claims a raw device.
    final class ClaimingDriver: CaptureDriver {
        let claims: Set<String>
        let device: any CaptureBackend
        init(claims: Set<String>, device: any CaptureBackend) {
            self.claims = claims
            self.device = device
        }
        var origin: DeviceOrigin { .real }
        var family: DriverFamily { .pipeWire }
        var claimedRawDevices: Set<String> { claims }
        func discoverDevices() -> [any CaptureBackend] { [device] }
    }

    /// The simulated V4L2 camera at /dev/video0, through the real V4L2 driver over a fake sysfs.
    func rawDriver() throws -> (V4L2CameraDriver, V4L2CameraDriverTests.FakeSysfs) {
        let sysfs = try V4L2CameraDriverTests.FakeSysfs()
        try sysfs.add("video0")
        let kernel = V4L2CameraDriverTests().kernel()
        return (V4L2CameraDriver(system: kernel.system, sysfsRoot: sysfs.root, deviceRoot: "/dev"), sysfs)
    }

    func node(claiming path: String) -> PipeWireDevice {
        PipeWireDevice(
            node: PipeWireNode(
                id: 3,
                properties: [
                    "media.class": "Video/Source", "api.v4l2.path": path, "object.path": "v4l2:\(path)",
                    "node.description": "Mock Camera (V4L2)",
                ]),
            connection: { nil })
    }

    @Test("the node stands for the raw camera it reads; another raw camera stays listed")
    func nodeHidesItsRawDevice() throws {
        let (raw, sysfs) = try rawDriver()
        let rawCamera = try #require(raw.discoverDevices().first)
        #expect(rawCamera.rawDeviceKey == "v4l2:/dev/video0")
        let owning = ClaimingDriver(claims: ["v4l2:/dev/video0"], device: node(claiming: "/dev/video0"))
        let registry = DeviceRegistry(drivers: [owning, raw], selection: .real)
        #expect(registry.devices().map(\.identity.localizedName) == ["Mock Camera (V4L2)"])

        let elsewhere = ClaimingDriver(claims: ["v4l2:/dev/video7"], device: node(claiming: "/dev/video7"))
        let both = DeviceRegistry(drivers: [elsewhere, raw], selection: .real)
        #expect(both.devices().count == 2)
        withExtendedLifetime(sysfs) {}
    }

    @Test("an ALSA card's microphone has the key PipeWire's ALSA nodes name; a user's PCM has none")
    func alsaKeys() {
        let card = ALSAMicrophone(pcmName: "plughw:CARD=Webcam,DEV=0", cardIndex: 1, cardID: "Webcam")
        #expect(card.rawDeviceKey == "alsa:card:1")
        let node = PipeWireNode(
            id: 9, properties: ["media.class": "Audio/Source", "device.api": "alsa", "alsa.card": "1"])
        #expect(node.rawDeviceKey == card.rawDeviceKey)
        #expect(ALSAMicrophone(pcmName: "pulse").rawDeviceKey == nil)
    }

    @Test("a claimed raw device's hot-plug events are not reported again")
    func claimedEventsAreQuiet() throws {
        let (raw, sysfs) = try rawDriver()
        let rawCamera = try #require(raw.discoverDevices().first)
        let owning = ClaimingDriver(claims: ["v4l2:/dev/video0"], device: node(claiming: "/dev/video0"))
        let registry = DeviceRegistry(drivers: [owning, raw], selection: .real)
        let heard = ConnectionLog(registry)
        registry.report(.disconnected(rawCamera))
        registry.report(.disconnected(owning.device))
        #expect(heard.kinds == ["disconnected"])
        withExtendedLifetime(sysfs) {}
    }

    @Test("OPENAV_BACKEND: pipewire lists only nodes, raw only kernel devices, auto both")
    func backendPreference() throws {
        let (raw, sysfs) = try rawDriver()
        let owning = ClaimingDriver(claims: [], device: node(claiming: "/dev/video9"))
        func names(_ preference: BackendPreference) -> [String] {
            DeviceRegistry(drivers: [owning, raw], selection: .real, backendPreference: preference).devices()
                .map(\.identity.localizedName)
        }
        #expect(names(.pipewire) == ["Mock Camera (V4L2)"])
        #expect(names(.raw) == ["Mock Camera"])
        #expect(names(.auto).count == 2)
        #expect(BackendPreference.fromEnvironment(["OPENAV_BACKEND": "PipeWire"]) == .pipewire)
        #expect(BackendPreference.fromEnvironment([:]) == .auto)
        withExtendedLifetime(sysfs) {}
    }

    @Test("no daemon: the PipeWire driver lists nothing and does not try to connect")
    func noDaemon() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("no-pw-\(UUID().uuidString)").path
        let environment = ["XDG_RUNTIME_DIR": empty]
        #expect(!PipeWireDeviceDriver.daemonSocketExists(environment: environment))
        let driver = PipeWireDeviceDriver(environment: { environment })
        #expect(driver.discoverDevices().isEmpty)
        #expect(driver.claimedRawDevices.isEmpty)
    }
}
