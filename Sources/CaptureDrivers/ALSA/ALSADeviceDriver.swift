import CALSA
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// ALSA's microphones: one per card and capture device, the default first, and the PCMs of the configuration that
/// are not aliases of those (`ALSACaptureDeviceEntry.microphones(cards:defaultRoute:hints:)`).
///
/// Threading: thread safe; a mutex guards the table of backends, so a microphone keeps its backend object for the
/// process's life (one that disappears is marked disconnected, and the same object comes back with it).
package final class ALSADeviceDriver: CaptureDriver {
    /// The driver `DeviceRegistry.shared` lists; it follows `sound` uevents once discovery first runs.
    package static let shared = ALSADeviceDriver(hotPlugMonitor: .shared)

    private let known = Mutex<[String: ALSAMicrophone]>([:])
    /// Where connection changes found by hot-plug rescans are reported (nil: `DeviceRegistry.shared`).
    private let registry: DeviceRegistry?
    private let hotPlugMonitor: DeviceHotPlugMonitor?
    private let isMonitoring = Atomic<Bool>(false)
    /// Where `default` led when last probed, and the cards present then: probed again only when the cards change, so
    /// that a rescan does not open the default card while one of ours streams from it, nor has ALSA print its
    /// complaint about a `default` that leads nowhere (on its standard error) at every discovery.
    private let lastDefaultRoute = Mutex<(cards: [ALSACard], route: ALSADefaultRoute)?>(nil)

    /// A driver whose hot-plug rescans (on `hotPlugMonitor`'s `sound` events, when given) report to `registry`.
    package init(registry: DeviceRegistry? = nil, hotPlugMonitor: DeviceHotPlugMonitor? = nil) {
        self.registry = registry
        self.hotPlugMonitor = hotPlugMonitor
    }

    package var origin: DeviceOrigin { .real }
    package var family: DriverFamily { .raw }

    /// The microphones present now, the default first, except those that cannot be opened at all (no formats: a
    /// card gone since, a sound server that is not running), which no device object could stand for. Probing opens
    /// each PCM once (then cached), outside the table's lock.
    ///
    /// A microphone this scan finds gone or back is reported to the registry here too, not only by the `sound`
    /// uevent's rescan: whichever scan sees the change first flips the microphone's state, and the other then finds
    /// nothing to report, so a discovery that wins the race must report it (else the device object stays
    /// disconnected after a replug). New microphones are not announced from discovery: they are being discovered.
    package func discoverDevices() -> [any CaptureBackend] {
        startMonitoring()
        let (present, changes) = scan()
        report(changes.filter { !$0.isArrival })
        return present.filter { !$0.formats.isEmpty }
    }

    /// A change a scan found: a known microphone gone or back, or a new one (`isArrival`).
    private struct ScanChange {
        var event: ConnectionEvent
        var isArrival: Bool
    }

    /// Reports scan changes to the registry, outside the table's lock (a microphone back but without formats, its
    /// PCM not openable yet, is left for a later scan).
    private func report(_ changes: [ScanChange]) {
        for change in changes {
            if case .connected(let backend) = change.event, backend.formats.isEmpty { continue }
            (registry ?? DeviceRegistry.shared).report(change.event)
        }
    }

    /// Where `default` leads with `cards` present: the last answer while the cards are the same, else probed. While
    /// `default` is busy (another process holds the card behind it) the last answer stands, or none.
    private func defaultRoute(cards: [ALSACard]) -> ALSADefaultRoute {
        if let last = lastDefaultRoute.withLock({ $0 }), last.cards == cards { return last.route }
        guard let route = ALSADefaultRoute.probe() else {
            return lastDefaultRoute.withLock { $0?.route } ?? .unavailable
        }
        lastDefaultRoute.withLock { $0 = (cards, route) }
        return route
    }

    /// Lists the microphones again: those gone are marked disconnected, those back connected, new ones made.
    private func scan() -> (present: [any CaptureBackend], changes: [ScanChange]) {
        let cards = ALSACard.all()
        let entries = ALSACaptureDeviceEntry.microphones(
            cards: cards, defaultRoute: defaultRoute(cards: cards), hints: ALSANameHint.all())
        return known.withLock { known in
            var changes: [ScanChange] = []
            let present = Set(entries.map(\.uniqueID))
            for (name, microphone) in known where !present.contains(name) {
                if microphone.setConnected(false) {
                    changes.append(ScanChange(event: .disconnected(microphone), isArrival: false))
                }
            }
            let microphones: [any CaptureBackend] = entries.map { entry in
                if let existing = known[entry.uniqueID] {
                    existing.setCardIndex(entry.cardIndex)
                    if existing.setConnected(true) {
                        changes.append(ScanChange(event: .connected(existing), isArrival: false))
                    }
                    return existing
                }
                let microphone = ALSAMicrophone(
                    pcmName: entry.pcmName, localizedName: entry.localizedName, uniqueID: entry.uniqueID,
                    cardIndex: entry.cardIndex, cardID: entry.cardID)
                known[entry.uniqueID] = microphone
                changes.append(ScanChange(event: .connected(microphone), isArrival: true))
                return microphone
            }
            return (microphones, changes)
        }
    }

    /// From the first discovery on, every `sound` uevent (a card added or removed) rescans and reports what
    /// changed, outside the table's lock.
    private func startMonitoring() {
        guard let hotPlugMonitor, !isMonitoring.exchange(true, ordering: .relaxed) else { return }
        hotPlugMonitor.addHandler(subsystem: "sound") { [weak self] _ in
            guard let self else { return }
            report(scan().changes)
        }
    }
}
