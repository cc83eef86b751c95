import CALSA
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One entry of ALSA's device name hints (`snd_device_name_hint` for `pcm`).
///
/// Value type; safe to use from any thread.
package struct ALSANameHint: Sendable, Hashable {
    /// `NAME`: what `snd_pcm_open` takes.
    package var name: String
    /// `DESC`: one or two lines for people.
    package var description: String?
    /// `IOID`: `Input`, `Output`, or nil for both.
    package var direction: String?

    package init(name: String, description: String?, direction: String?) {
        self.name = name
        self.description = description
        self.direction = direction
    }

    /// Every PCM hint of the ALSA configuration (the global one: `ALSA_CONFIG_PATH`, /etc/asound.conf,
    /// ~/.asoundrc, the cards' own files).
    package static func all() -> [ALSANameHint] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) >= 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        func field(_ hint: UnsafeMutableRawPointer, _ key: String) -> String? {
            guard let value = snd_device_name_get_hint(hint, key) else { return nil }
            defer { free(value) }
            return String(cString: value)
        }
        var result: [ALSANameHint] = []
        var cursor = hints
        while let hint = cursor.pointee {
            if let name = field(hint, "NAME") {
                result.append(
                    ALSANameHint(name: name, description: field(hint, "DESC"), direction: field(hint, "IOID")))
            }
            cursor += 1
        }
        return result
    }
}

/// A capture PCM discovery shows as a microphone.
///
/// Value type; safe to use from any thread.
package struct ALSACaptureDeviceEntry: Sendable, Hashable {
    /// The hint's name, which the unique ID is made from (`alsa:default`, `alsa:hw:CARD=PCH,DEV=0`).
    package var hintName: String
    /// What to open: the hint's name, or a hardware device's `plughw:` twin, which converts formats the card lacks.
    package var pcmName: String
    /// The description's first line, or the name.
    package var localizedName: String

    /// The microphones among `hints`, `default` first: every capture-capable PCM, except the many aliases ALSA
    /// lists for each card (`sysdefault`, `front`, `dsnoop`, `plughw`, surround and digital outputs), which are the
    /// same microphone as the card's `hw:` entry, and `null`.
    package static func microphones(from hints: [ALSANameHint]) -> [ALSACaptureDeviceEntry] {
        let aliases = [
            "sysdefault:", "front:", "rear:", "center_lfe:", "side:", "surround", "iec958:", "spdif:", "hdmi:",
            "dmix:", "dsnoop:", "plughw:", "usbstream:",
        ]
        let entries: [ALSACaptureDeviceEntry] = hints.compactMap { hint in
            guard hint.direction == nil || hint.direction == "Input", hint.name != "null",
                !aliases.contains(where: hint.name.hasPrefix)
            else { return nil }
            let title = hint.description?.split(separator: "\n").first.map(String.init) ?? hint.name
            let pcm = hint.name.hasPrefix("hw:") ? "plug" + hint.name : hint.name
            return ALSACaptureDeviceEntry(hintName: hint.name, pcmName: pcm, localizedName: title)
        }
        let ordered = entries.filter { $0.hintName == "default" } + entries.filter { $0.hintName != "default" }
        return distinguishingNames(ordered)
    }

    /// Microphones whose names are alike (snd-aloop's eight "Loopback PCM" subdevices, two cards of one model) get
    /// where they are appended: `hw:CARD,DEV` for a card's device ("Loopback PCM (hw:Loopback,1)", the card's id,
    /// which survives a reboot where its index may not), else the PCM's name.
    static func distinguishingNames(_ entries: [ALSACaptureDeviceEntry]) -> [ALSACaptureDeviceEntry] {
        var counts: [String: Int] = [:]
        for entry in entries { counts[entry.localizedName, default: 0] += 1 }
        return entries.map { entry in
            guard counts[entry.localizedName, default: 0] > 1 else { return entry }
            var named = entry
            named.localizedName += " (\(shortName(ofHint: entry.hintName)))"
            return named
        }
    }

    /// `hw:CARD=Loopback,DEV=1` → `hw:Loopback,1`; any other name as it is.
    static func shortName(ofHint name: String) -> String {
        guard name.hasPrefix("hw:") else { return name }
        var card: Substring?
        var device: Substring?
        for field in name.dropFirst(3).split(separator: ",") {
            if field.hasPrefix("CARD=") { card = field.dropFirst(5) }
            if field.hasPrefix("DEV=") { device = field.dropFirst(4) }
        }
        guard let card else { return name }
        return "hw:\(card),\(device ?? "0")"
    }
}

/// ALSA's capture PCMs as microphones.
///
/// Threading: thread safe; a mutex guards the table of backends, so a PCM keeps its backend object for the
/// process's life (a PCM that disappears is marked disconnected, and the same object comes back with it).
package final class ALSADeviceDriver: CaptureDriver {
    /// The driver `DeviceRegistry.shared` lists; it follows `sound` uevents once discovery first runs.
    package static let shared = ALSADeviceDriver(hotPlugMonitor: .shared)

    private let known = Mutex<[String: ALSAMicrophone]>([:])
    /// Where connection changes found by hot-plug rescans are reported (nil: `DeviceRegistry.shared`).
    private let registry: DeviceRegistry?
    private let hotPlugMonitor: DeviceHotPlugMonitor?
    private let isMonitoring = Atomic<Bool>(false)

    /// A driver whose hot-plug rescans (on `hotPlugMonitor`'s `sound` events, when given) report to `registry`.
    package init(registry: DeviceRegistry? = nil, hotPlugMonitor: DeviceHotPlugMonitor? = nil) {
        self.registry = registry
        self.hotPlugMonitor = hotPlugMonitor
    }

    package var origin: DeviceOrigin { .real }
    package var family: DriverFamily { .raw }

    /// The capture PCMs ALSA's name hints list now, `default` first, except those that cannot be opened at all (no
    /// formats: a hint for a card that is gone, a sound server that is not running), which no device object could
    /// stand for. Probing opens each PCM once (then cached), outside the table's lock.
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

    /// Lists the PCMs again: those gone are marked disconnected, those back connected, new ones made.
    private func scan() -> (present: [any CaptureBackend], changes: [ScanChange]) {
        let entries = ALSACaptureDeviceEntry.microphones(from: ALSANameHint.all())
        return known.withLock { known in
            var changes: [ScanChange] = []
            let present = Set(entries.map(\.hintName))
            for (name, microphone) in known where !present.contains(name) {
                if microphone.setConnected(false) {
                    changes.append(ScanChange(event: .disconnected(microphone), isArrival: false))
                }
            }
            let microphones: [any CaptureBackend] = entries.map { entry in
                if let existing = known[entry.hintName] {
                    if existing.setConnected(true) {
                        changes.append(ScanChange(event: .connected(existing), isArrival: false))
                    }
                    return existing
                }
                let microphone = ALSAMicrophone(
                    pcmName: entry.pcmName, localizedName: entry.localizedName, uniqueID: "alsa:\(entry.hintName)")
                known[entry.hintName] = microphone
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
