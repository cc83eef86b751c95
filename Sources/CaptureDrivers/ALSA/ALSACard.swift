import CALSA
import SystemPackage

/// A sound card as its control device describes it: its number, its id and name, and its PCM devices that capture.
///
/// Read with ALSA's control API (`snd_card_next`, `snd_ctl_open` on `hw:N`, `snd_ctl_card_info`,
/// `snd_ctl_pcm_next_device`, `snd_ctl_pcm_info` for `SND_PCM_STREAM_CAPTURE`), which lists the kernel's devices
/// and none of the aliases the configuration adds (`sysdefault`, `dsnoop`, `front`, …).
///
/// Value type; safe to use from any thread.
package struct ALSACard: Sendable, Hashable {
    /// A PCM device of the card with a capture stream.
    package struct CaptureDevice: Sendable, Hashable {
        /// The device number, `DEV=` of `hw:CARD=…,DEV=…`.
        package var number: Int32
        /// What the driver calls the device (`snd_pcm_info_get_name`: "USB Audio", "ALC892 Analog").
        package var name: String

        package init(number: Int32, name: String) {
            self.number = number
            self.name = name
        }
    }

    /// The card's number (`hw:N`), given in the order cards appear: it may change across reboots and replugs.
    package var index: Int32
    /// The card's id (`snd_ctl_card_info_get_id`: "Webcam", "PCH", "Loopback"), unique among the cards present and
    /// the same across reboots: what `CARD=` takes.
    package var id: String
    /// The card's name for people (`snd_ctl_card_info_get_name`: "OpenAV Test Webcam", "HDA Intel PCH").
    package var name: String
    /// Its devices that capture, by number.
    package var captureDevices: [CaptureDevice]

    package init(index: Int32, id: String, name: String, captureDevices: [CaptureDevice]) {
        self.index = index
        self.id = id
        self.name = name
        self.captureDevices = captureDevices
    }

    /// Every card present, by number. A card whose control device cannot be opened (gone since, not ours to open)
    /// is left out.
    package static func all() -> [ALSACard] {
        var cards: [ALSACard] = []
        var index: Int32 = -1
        while snd_card_next(&index) >= 0, index >= 0 {
            if let card = ALSACard(reading: index) { cards.append(card) }
        }
        return cards
    }

    /// Reads card `index` through its control device; nil when that cannot be opened or answers nothing.
    init?(reading index: Int32) {
        var opened: OpaquePointer?
        guard snd_ctl_open(&opened, "hw:\(index)", 0) >= 0, let control = opened else { return nil }
        defer { snd_ctl_close(control) }
        var cardInfo: OpaquePointer?
        guard snd_ctl_card_info_malloc(&cardInfo) >= 0, let cardInfo else { return nil }
        defer { snd_ctl_card_info_free(cardInfo) }
        var pcmInfo: OpaquePointer?
        guard snd_pcm_info_malloc(&pcmInfo) >= 0, let pcmInfo else { return nil }
        defer { snd_pcm_info_free(pcmInfo) }
        guard snd_ctl_card_info(control, cardInfo) >= 0 else { return nil }

        var devices: [CaptureDevice] = []
        var device: Int32 = -1
        while snd_ctl_pcm_next_device(control, &device) >= 0, device >= 0 {
            snd_pcm_info_set_device(pcmInfo, UInt32(device))
            snd_pcm_info_set_subdevice(pcmInfo, 0)
            snd_pcm_info_set_stream(pcmInfo, SND_PCM_STREAM_CAPTURE)
            // ENOENT: the device only plays.
            guard snd_ctl_pcm_info(control, pcmInfo) >= 0 else { continue }
            devices.append(CaptureDevice(number: device, name: String(cString: snd_pcm_info_get_name(pcmInfo))))
        }
        self.init(
            index: index, id: String(cString: snd_ctl_card_info_get_id(cardInfo)),
            name: String(cString: snd_ctl_card_info_get_name(cardInfo)), captureDevices: devices)
    }
}

/// Where ALSA's `default` PCM leads for capture: which card's device, if any, stands behind it.
///
/// Value type; safe to use from any thread.
package enum ALSADefaultRoute: Sendable, Hashable {
    /// `default` reaches card `index`'s capture device `device` (ALSA's own configuration: `plug` or `dsnoop` over
    /// the card of `defaults.pcm.card`).
    case card(index: Int32, device: Int32)
    /// `default` opens, but reaches no card: a sound server's plugin (`pulse`, `pipewire`), or a PCM of the user's
    /// own.
    case notACard
    /// `default` cannot be opened for capture (no card, none that captures, a sound server that is not running).
    case unavailable

    /// Opens `default` for capture, non-blocking, and asks which card it reached (`snd_pcm_info_get_card`); nil when
    /// the PCM is busy (`EBUSY`: another process holds the card behind it, so it leads to a card, but to which is
    /// not known now). Holds the lock under which this process opens PCMs, so the probe never makes one of ours
    /// look busy.
    package static func probe() -> ALSADefaultRoute? {
        ALSAMicrophone.opening.withLock { _ in
            do throws(Errno) {
                let pcm = try ALSAPCM(capture: "default")
                guard let card = try pcm.card() else { return .notACard }
                return .card(index: card.index, device: card.device)
            } catch {
                return error == .resourceBusy ? nil : .unavailable
            }
        }
    }
}
