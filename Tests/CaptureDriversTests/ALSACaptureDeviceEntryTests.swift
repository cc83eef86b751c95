import CaptureDrivers
import Testing

/// Which microphones ALSA's cards, its `default` and its name hints make, without hardware: the cards are described
/// as the control API reads them, the hints as `snd_device_name_hint` lists them on such a machine.
@Suite("ALSA microphones from cards, default and hints")
struct ALSACaptureDeviceEntryTests {
    /// A laptop's HDA card (two capture devices) at 0 and a USB webcam at 1.
    static let cards = [
        ALSACard(
            index: 0, id: "PCH", name: "HDA Intel PCH",
            captureDevices: [.init(number: 0, name: "ALC892 Analog"), .init(number: 2, name: "ALC892 Alt Analog")]),
        ALSACard(
            index: 1, id: "Webcam", name: "OpenAV Test Webcam", captureDevices: [.init(number: 0, name: "USB Audio")]),
    ]

    /// What ALSA's name hints list on that machine: `default`, `null`, alsa-plugins' PCMs, a PCM of the user's, a
    /// playback-only one, and each card's many aliases.
    static let hints: [ALSANameHint] = {
        func hint(_ name: String, _ description: String, _ direction: String? = nil) -> ALSANameHint {
            ALSANameHint(name: name, description: description, direction: direction)
        }
        var hints = [
            hint("null", "Discard all samples (playback) or generate zero samples (capture)"),
            hint("samplerate", "Rate Converter Plugin Using Samplerate Library"),
            hint("speexrate_best", "Rate Converter Plugin Using Speex Resampler"),
            hint("upmix", "Plugin for channel upmix (4,6,8)"),
            hint("vdownmix", "Plugin for channel downmix (stereo) with a simple spacialization"),
            hint("pulse", "PulseAudio Sound Server"),
            hint("default", "Default ALSA Output (currently PulseAudio Sound Server)"),
            hint("openav_test_file", "OpenAVCapture test input"),
            hint("speakers", "Speakers", "Output"),
        ]
        for (card, devices) in [("PCH", [0, 2]), ("Webcam", [0])] {
            for device in devices {
                hints += [
                    hint("hw:CARD=\(card),DEV=\(device)", "\(card)\nDirect hardware device without any conversions"),
                    hint("plughw:CARD=\(card),DEV=\(device)", "\(card)\nHardware device with all software conversions"),
                    hint("dsnoop:CARD=\(card),DEV=\(device)", "\(card)\nDirect sample snooping device"),
                ]
            }
            hints += [
                hint("default:CARD=\(card)", "\(card)\nDefault Audio Device"),
                hint("sysdefault:CARD=\(card)", "\(card)\nDefault Audio Device"),
                hint("front:CARD=\(card),DEV=0", "\(card)\nFront output / input"),
                hint("surround51:CARD=\(card),DEV=0", "\(card)\n5.1 Surround output", "Output"),
                hint("iec958:CARD=\(card),DEV=0", "\(card)\nIEC958 (S/PDIF) Digital Audio Output", "Output"),
                hint("hdmi:CARD=\(card),DEV=0", "\(card)\nHDMI Audio Output", "Output"),
                hint("dmix:CARD=\(card),DEV=0", "\(card)\nDirect sample mixing device", "Output"),
                hint("usbstream:CARD=\(card)", "\(card)\nUSB Stream Output", "Output"),
            ]
        }
        return hints
    }()

    @Test("default reaching a card: that card's device first and no entry for default; one entry per card and device")
    func defaultReachingACard() {
        let entries = ALSACaptureDeviceEntry.microphones(
            cards: Self.cards, defaultRoute: .card(index: 1, device: 0), hints: Self.hints)
        #expect(
            entries.map(\.uniqueID) == [
                "alsa:hw:CARD=Webcam,DEV=0", "alsa:hw:CARD=PCH,DEV=0", "alsa:hw:CARD=PCH,DEV=2", "alsa:pulse",
                "alsa:openav_test_file",
            ])
        #expect(
            entries.map(\.localizedName) == [
                "OpenAV Test Webcam", "HDA Intel PCH, ALC892 Analog", "HDA Intel PCH, ALC892 Alt Analog",
                "PulseAudio Sound Server", "OpenAVCapture test input",
            ])
        #expect(
            entries.map(\.pcmName) == [
                "plughw:CARD=Webcam,DEV=0", "plughw:CARD=PCH,DEV=0", "plughw:CARD=PCH,DEV=2", "pulse",
                "openav_test_file",
            ])
        #expect(entries.map(\.cardIndex) == [1, 0, 0, nil, nil])
        #expect(entries.map(\.cardID) == ["Webcam", "PCH", "PCH", nil, nil])
    }

    @Test("default reaching a card's second device: that device first, the card's first after it")
    func defaultReachingASecondDevice() {
        let entries = ALSACaptureDeviceEntry.microphones(
            cards: Self.cards, defaultRoute: .card(index: 0, device: 2), hints: [])
        #expect(
            entries.map(\.uniqueID) == [
                "alsa:hw:CARD=PCH,DEV=2", "alsa:hw:CARD=PCH,DEV=0", "alsa:hw:CARD=Webcam,DEV=0",
            ])
    }

    @Test("default reaching a device discovery does not list: the card's first device stands for it")
    func defaultReachingAnUnlistedDevice() {
        let entries = ALSACaptureDeviceEntry.microphones(
            cards: Self.cards, defaultRoute: .card(index: 1, device: 7), hints: [])
        #expect(entries.first?.uniqueID == "alsa:hw:CARD=Webcam,DEV=0")
        #expect(entries.count == 3)
    }

    @Test("default reaching no card (a sound server): one entry for default first, named by its hint")
    func defaultReachingNoCard() {
        let entries = ALSACaptureDeviceEntry.microphones(cards: Self.cards, defaultRoute: .notACard, hints: Self.hints)
        #expect(
            entries.map(\.uniqueID) == [
                "alsa:default", "alsa:hw:CARD=PCH,DEV=0", "alsa:hw:CARD=PCH,DEV=2", "alsa:hw:CARD=Webcam,DEV=0",
                "alsa:pulse", "alsa:openav_test_file",
            ])
        #expect(entries[0].pcmName == "default" && entries[0].cardIndex == nil && entries[0].cardID == nil)
        #expect(entries[0].localizedName == "Default ALSA Output (currently PulseAudio Sound Server)")
        let unhinted = ALSACaptureDeviceEntry.microphones(cards: [], defaultRoute: .notACard, hints: [])
        #expect(unhinted.map(\.localizedName) == ["Default"])
    }

    @Test("default that cannot be opened: no entry for it, the cards in order")
    func defaultUnavailable() {
        let entries = ALSACaptureDeviceEntry.microphones(
            cards: Self.cards, defaultRoute: .unavailable, hints: Self.hints)
        #expect(entries.first?.uniqueID == "alsa:hw:CARD=PCH,DEV=0")
        #expect(!entries.contains { $0.uniqueID == "alsa:default" })
        #expect(ALSACaptureDeviceEntry.microphones(cards: [], defaultRoute: .unavailable, hints: []).isEmpty)
    }

    @Test(
        "ALSA's aliases of a card or of default are not microphones; the configuration's own PCMs are",
        arguments: [
            ("default", true), ("null", true), ("default:CARD=Webcam", true), ("sysdefault:CARD=PCH", true),
            ("sysdefault", true), ("front:CARD=PCH,DEV=0", true), ("dsnoop:CARD=PCH,DEV=0", true),
            ("dsnoop", true), ("dmix", true), ("hw:CARD=PCH,DEV=0", true), ("plughw:CARD=PCH,DEV=0", true),
            ("hw", true), ("plughw", true), ("surround51:CARD=PCH,DEV=0", true), ("surround40", true),
            ("iec958:CARD=PCH,DEV=0", true), ("spdif", true), ("hdmi:CARD=PCH,DEV=3", true),
            ("usbstream:CARD=Webcam", true), ("center_lfe", true), ("samplerate", true), ("samplerate_best", true),
            ("speexrate_medium", true), ("lavrate", true), ("speex", true), ("upmix", true), ("vdownmix", true),
            ("pulse", false), ("pipewire", false), ("jack", false), ("oss", false), ("openav_test_file", false),
            ("my_usb_mic", false), ("hw_mic", false), ("speakers", false),
        ])
    func aliases(name: String, isAlias: Bool) {
        #expect(ALSACaptureDeviceEntry.isAlias(name) == isAlias)
    }

    @Test("playback-only hints, repeated hints and null are left out")
    func playbackOnlyAndRepeats() {
        let hints = [
            ALSANameHint(name: "speakers", description: "Speakers", direction: "Output"),
            ALSANameHint(name: "mic", description: "My microphone", direction: "Input"),
            ALSANameHint(name: "mic", description: "My microphone", direction: "Input"),
            ALSANameHint(name: "null", description: "Discard all samples", direction: nil),
        ]
        let entries = ALSACaptureDeviceEntry.microphones(cards: [], defaultRoute: .unavailable, hints: hints)
        #expect(entries.map(\.uniqueID) == ["alsa:mic"])
        #expect(entries.map(\.localizedName) == ["My microphone"])
    }

    @Test("a card without capture devices is not a microphone; a device without a name is told by its number")
    func cardsWithoutCaptureOrNames() {
        let cards = [
            ALSACard(index: 0, id: "HDMI", name: "HDA ATI HDMI", captureDevices: []),
            ALSACard(
                index: 1, id: "Interface", name: "USB Interface",
                captureDevices: [.init(number: 0, name: "USB Audio"), .init(number: 1, name: "")]),
            ALSACard(index: 2, id: "Nameless", name: "", captureDevices: [.init(number: 0, name: "")]),
        ]
        let entries = ALSACaptureDeviceEntry.microphones(cards: cards, defaultRoute: .unavailable, hints: [])
        #expect(entries.map(\.localizedName) == ["USB Interface, USB Audio", "USB Interface device 1", "Nameless"])
        #expect(
            entries.map(\.uniqueID) == [
                "alsa:hw:CARD=Interface,DEV=0", "alsa:hw:CARD=Interface,DEV=1", "alsa:hw:CARD=Nameless,DEV=0",
            ])
    }

    @Test("microphones with the same name are told apart by card id and device; unique names stay as they are")
    func sameNamesToldApart() {
        let cards = [
            ALSACard(
                index: 0, id: "Loopback", name: "Loopback",
                captureDevices: [.init(number: 0, name: "Loopback PCM"), .init(number: 1, name: "Loopback PCM")]),
            ALSACard(
                index: 1, id: "PCH", name: "HDA Intel PCH", captureDevices: [.init(number: 0, name: "ALC892 Analog")]),
            ALSACard(index: 2, id: "Webcam", name: "USB Camera", captureDevices: [.init(number: 0, name: "USB Audio")]),
            ALSACard(
                index: 3, id: "Webcam_1", name: "USB Camera", captureDevices: [.init(number: 0, name: "USB Audio")]),
        ]
        let hints = [
            ALSANameHint(name: "mic", description: "USB Camera", direction: nil)
        ]
        let names = ALSACaptureDeviceEntry.microphones(cards: cards, defaultRoute: .unavailable, hints: hints)
            .map(\.localizedName)
        #expect(
            names == [
                "Loopback, Loopback PCM (hw:Loopback,0)", "Loopback, Loopback PCM (hw:Loopback,1)", "HDA Intel PCH",
                "USB Camera (hw:Webcam,0)", "USB Camera (hw:Webcam_1,0)", "USB Camera (mic)",
            ], "\(names)")
        #expect(Set(names).count == names.count)
    }
}
