import CaptureDrivers
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// snd-aloop unloaded and loaded again: the kernel's `sound` uevents reach the ALSA driver through the hot-plug
/// monitor, which reports the loopback microphones gone and back. In the VM only (`make test-kernel`, in the boot
/// that may take modules away); elsewhere it skips, saying why.
@Suite(.serialized, .enabled(if: Loopback.isPresent, Loopback.skipReason))
struct SoundHotPlugKernelTests {
    @Test func unloadingAndLoadingSndAloopIsAnUnplugAndAReplug() throws {
        let registry = DeviceRegistry(drivers: [], selection: .all)
        let heard = Mutex<[(kind: String, id: String)]>([])
        _ = registry.addListener { event in
            let kind =
                switch event {
                case .connected: "connected"
                case .disconnected: "disconnected"
                case .availabilityChanged: "availabilityChanged"
                }
            heard.withLock { $0.append((kind, event.backend.identity.uniqueID)) }
        }
        let driver = ALSADeviceDriver(registry: registry, hotPlugMonitor: DeviceHotPlugMonitor())
        let loopbacks = driver.discoverDevices().filter { $0.identity.uniqueID.contains("Loopback") }
        #expect(!loopbacks.isEmpty)
        let ids = Set(loopbacks.map(\.identity.uniqueID))

        #expect(spawn("/sbin/modprobe", ["-r", "snd-aloop"])?.status == 0)
        #expect(
            eventually(timeout: 20) {
                ids.isSubset(of: heard.withLock { Set($0.filter { $0.kind == "disconnected" }.map(\.id)) })
            }, "every loopback microphone reported gone")
        #expect(loopbacks.allSatisfy { !$0.isConnected })

        #expect(spawn("/sbin/modprobe", ["snd-aloop"])?.status == 0)
        #expect(
            eventually(timeout: 20) {
                ids.isSubset(of: heard.withLock { Set($0.filter { $0.kind == "connected" }.map(\.id)) })
            }, "every loopback microphone reported back")
        #expect(loopbacks.allSatisfy { $0.isConnected }, "the same objects come back")
        // Under the card's number now (the one /proc/asound/Loopback links to), whichever it was before.
        let link = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/asound/Loopback")
        #expect(
            loopbacks.allSatisfy { ($0 as? ALSAMicrophone)?.cardIndex.map { "card\($0)" } == link },
            "\(loopbacks.map { ($0 as? ALSAMicrophone)?.cardIndex }) for \(link)")
    }
}

/// Whether snd-aloop's card is here.
enum Loopback {
    static var isPresent: Bool {
        ALSADeviceDriver().discoverDevices().contains { $0.identity.uniqueID.contains("Loopback") }
    }

    static let skipReason: Comment = "no snd-aloop card here: this runs in the VM (`make test-kernel`), which loads it"
}
