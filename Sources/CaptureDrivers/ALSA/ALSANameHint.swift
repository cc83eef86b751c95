import CALSA

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
