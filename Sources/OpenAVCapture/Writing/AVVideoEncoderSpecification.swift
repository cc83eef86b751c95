// AVVideoEncoderSpecificationKey: whether a video track may, must or must not be encoded in hardware.

import MediaCodecs

/// The video settings key whose value chooses the encoder: a dictionary of VideoToolbox's
/// `kVTVideoEncoderSpecification_…` keys. Apple's `let AVVideoEncoderSpecificationKey: String` (AVFoundation).
public let AVVideoEncoderSpecificationKey = "AVVideoEncoderSpecificationKey"

/// In an encoder specification: `true` uses a hardware encoder where one works (else software, with one warning),
/// `false` never uses one. Apple declares it in VideoToolbox as a `CFString`
/// (`let kVTVideoEncoderSpecification_EnableHardwareAcceleratedVideoEncoder: CFString`), which capture code imports
/// VideoToolbox for and writes `as String`; OpenAVCapture has no VideoToolbox module, so it declares the key here, a
/// `String` (`as String` compiles either way).
public let kVTVideoEncoderSpecification_EnableHardwareAcceleratedVideoEncoder = "EnableHardwareAcceleratedVideoEncoder"

/// In an encoder specification: `true` uses a hardware encoder or fails — the writer's `startWriting()` returns
/// false with `AVError.encoderNotFound` when none works. Implies the Enable key. Apple's is a VideoToolbox
/// `CFString`, as above.
public let kVTVideoEncoderSpecification_RequireHardwareAcceleratedVideoEncoder =
    "RequireHardwareAcceleratedVideoEncoder"

extension WriterTrackSettings {
    /// The keys an encoder specification may hold.
    static let encoderSpecificationKeys: Set<String> = [
        kVTVideoEncoderSpecification_EnableHardwareAcceleratedVideoEncoder,
        kVTVideoEncoderSpecification_RequireHardwareAcceleratedVideoEncoder,
    ]

    /// The hardware policy of `settings`' `AVVideoEncoderSpecificationKey`: software without one. Require wins over
    /// Enable, as VideoToolbox documents ("the Enable key does nothing if the Require key is set").
    static func readEncoderSpecification(_ settings: [String: Any]) -> HardwareEncoderPolicy {
        guard let raw = settings[AVVideoEncoderSpecificationKey] else { return .software }
        guard let specification = raw as? [String: Any] else {
            invalid("AVVideoEncoderSpecificationKey must be a [String: Any] dictionary, not \(raw)")
        }
        for key in specification.keys.sorted() where !encoderSpecificationKeys.contains(key) {
            invalid(
                "unsupported key '\(key)' in AVVideoEncoderSpecificationKey; supported: "
                    + encoderSpecificationKeys.sorted().joined(separator: ", "))
        }
        func flag(_ key: String) -> Bool? {
            guard let value = specification[key] else { return nil }
            guard let flag = boolSetting(value) else { invalid("'\(key)' must be a Bool, not \(value)") }
            return flag
        }
        if flag(kVTVideoEncoderSpecification_RequireHardwareAcceleratedVideoEncoder) == true { return .requireHardware }
        return flag(kVTVideoEncoderSpecification_EnableHardwareAcceleratedVideoEncoder) == true
            ? .preferHardware : .software
    }
}
