/// A microphone discovery lists: a card's capture device, `default` where it reaches no card, or a PCM the ALSA
/// configuration defines.
///
/// Value type; safe to use from any thread.
package struct ALSACaptureDeviceEntry: Sendable, Hashable {
    /// The device's unique ID: `alsa:hw:CARD=Webcam,DEV=0` for a card's device (the card's id, which survives a
    /// reboot where its index may not), else `alsa:` and the PCM's name (`alsa:default`, `alsa:pulse`).
    package var uniqueID: String
    /// What to open: a card's device through `plughw:` (ALSA converts what the card lacks), else the PCM's name.
    package var pcmName: String
    /// The name for people: the card's name, or the hint's description's first line, or the PCM's name.
    package var localizedName: String
    /// The card's number for a card's device (it may change when the card is plugged again); nil for other PCMs.
    package var cardIndex: Int32?
    /// The card's id for a card's device; nil for other PCMs.
    package var cardID: String?
    /// The PCM device's number on its card; nil for other PCMs.
    package var device: Int32?

    package init(
        uniqueID: String, pcmName: String, localizedName: String, cardIndex: Int32? = nil, cardID: String? = nil,
        device: Int32? = nil
    ) {
        self.uniqueID = uniqueID
        self.pcmName = pcmName
        self.localizedName = localizedName
        self.cardIndex = cardIndex
        self.cardID = cardID
        self.device = device
    }

    /// The microphones of `cards`, the default first, then the PCMs of the configuration.
    ///
    /// - One entry per card and capture device, named as the card names itself ("OpenAV Test Webcam"); a card
    ///   with several capture devices adds the device's name ("HDA Intel PCH, ALC892 Alt Analog"), or its number
    ///   when the driver gives none.
    /// - The default: when `default` reaches a card's device, that device comes first and there is no entry for
    ///   `default` itself (it is the same microphone); when it reaches no card (a sound server's plugin, a PCM of
    ///   the user's), an entry for `default` comes first; when it cannot be opened, none.
    /// - From `hints`, the capture PCMs that are not one of ALSA's aliases of a card or of `default` (see
    ///   `isAlias(_:)`): those an asoundrc or a plugin package defines with a hint (`pulse`, `pipewire`, `jack`,
    ///   an asoundrc's own), kept as routes of their own. A PCM of the user's that leads to a card is kept too: its
    ///   hint asks for it to be shown.
    /// - Names still alike (snd-aloop's two "Loopback PCM" devices, two cards of one model) are told apart by
    ///   `distinguishingNames(_:)`.
    package static func microphones(
        cards: [ALSACard], defaultRoute: ALSADefaultRoute, hints: [ALSANameHint]
    ) -> [ALSACaptureDeviceEntry] {
        var cardEntries = cards.flatMap { card in
            card.captureDevices.map { device in
                let name = card.name.isEmpty ? card.id : card.name
                let title =
                    card.captureDevices.count == 1
                    ? name : device.name.isEmpty ? "\(name) device \(device.number)" : "\(name), \(device.name)"
                let hardware = "hw:CARD=\(card.id),DEV=\(device.number)"
                return ALSACaptureDeviceEntry(
                    uniqueID: "alsa:\(hardware)", pcmName: "plug\(hardware)", localizedName: title,
                    cardIndex: card.index, cardID: card.id, device: device.number)
            }
        }
        var first: [ALSACaptureDeviceEntry] = []
        switch defaultRoute {
        case .card(let index, let device):
            let position =
                cardEntries.firstIndex { $0.cardIndex == index && $0.device == device }
                ?? cardEntries.firstIndex { $0.cardIndex == index }
            if let position { first = [cardEntries.remove(at: position)] }
        case .notACard:
            let hint = hints.first { $0.name == "default" }
            first = [
                ALSACaptureDeviceEntry(
                    uniqueID: "alsa:default", pcmName: "default", localizedName: hint.map(title) ?? "Default")
            ]
        case .unavailable:
            break
        }
        var seen: Set<String> = []
        let configured = hints.filter { hint in
            (hint.direction == nil || hint.direction == "Input") && !isAlias(hint.name)
                && seen.insert(hint.name).inserted
        }.map { hint in
            ALSACaptureDeviceEntry(uniqueID: "alsa:\(hint.name)", pcmName: hint.name, localizedName: title(hint))
        }
        return distinguishingNames(first + cardEntries + configured)
    }

    /// Whether a hinted PCM is another way into a card's device or into `default`, not a microphone of its own:
    /// - `default` (listed from where it leads, above), `null`, and every name with a `CARD=` argument
    ///   (`default:CARD=…`, `sysdefault:`, `front:`, `dsnoop:`, `hw:`, `plughw:`, `usbstream:`, …);
    /// - the plugins of ALSA's card configuration by name, with or without arguments (`sysdefault`, `front`, `rear`,
    ///   `center_lfe`, `side`, `surround*`, `iec958`, `spdif`, `hdmi`, `dmix`, `dsnoop`, `hw`, `plughw`);
    /// - alsa-plugins' converters over `default` (`samplerate`, `speexrate`, `lavrate`, `lavcrate`, `speex`,
    ///   `upmix`, `vdownmix`, and their `_best`, `_medium`, … variants): the default microphone resampled.
    package static func isAlias(_ name: String) -> Bool {
        if name.contains("CARD=") { return true }
        let plugin = name.prefix { $0 != ":" }
        let aliases: Set<Substring> = [
            "default", "null", "sysdefault", "front", "rear", "center_lfe", "side", "iec958", "spdif", "hdmi", "dmix",
            "dsnoop", "hw", "plughw", "usbstream",
        ]
        let converters: Set<Substring> = [
            "samplerate", "speexrate", "lavrate", "lavcrate", "speex", "upmix", "vdownmix",
        ]
        return aliases.contains(plugin) || plugin.hasPrefix("surround")
            || converters.contains(plugin.prefix { $0 != "_" })
    }

    /// A hint's description's first line, or its name.
    private static func title(_ hint: ALSANameHint) -> String {
        hint.description?.split(separator: "\n").first.map(String.init) ?? hint.name
    }

    /// Microphones whose names are alike (snd-aloop's two "Loopback PCM" devices, two cards of one model) get
    /// where they are appended: `hw:CARD,DEV` for a card's device ("Loopback, Loopback PCM (hw:Loopback,1)", the
    /// card's id, which survives a reboot where its index may not), else the PCM's name.
    static func distinguishingNames(_ entries: [ALSACaptureDeviceEntry]) -> [ALSACaptureDeviceEntry] {
        var counts: [String: Int] = [:]
        for entry in entries { counts[entry.localizedName, default: 0] += 1 }
        return entries.map { entry in
            guard counts[entry.localizedName, default: 0] > 1 else { return entry }
            var named = entry
            if let cardID = entry.cardID, let device = entry.device {
                named.localizedName += " (hw:\(cardID),\(device))"
            } else {
                named.localizedName += " (\(entry.pcmName))"
            }
            return named
        }
    }
}
