import Foundation

/// A video codec, with Apple's raw values (`AVVideoCodecType`).
///
/// Value type; safe to use from any thread.
public struct AVVideoCodecType: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let h264 = AVVideoCodecType("avc1")
    public static let hevc = AVVideoCodecType("hvc1")
    public static let jpeg = AVVideoCodecType("jpeg")
    public static let proRes422 = AVVideoCodecType("apcn")
    public static let proRes422HQ = AVVideoCodecType("apch")
    public static let proRes422LT = AVVideoCodecType("apcs")
    public static let proRes422Proxy = AVVideoCodecType("apco")
    public static let proRes4444 = AVVideoCodecType("ap4h")
}

/// A file format, with Apple's raw values (uniform type identifiers).
///
/// Value type; safe to use from any thread.
public struct AVFileType: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let mov = AVFileType("com.apple.quicktime-movie")
    public static let mp4 = AVFileType("public.mpeg-4")
    public static let m4v = AVFileType("com.apple.m4v-video")
    public static let m4a = AVFileType("com.apple.m4a-audio")
    public static let wav = AVFileType("com.microsoft.waveform-audio")
    public static let aiff = AVFileType("public.aiff-audio")
    public static let aifc = AVFileType("public.aifc-audio")
    public static let caf = AVFileType("com.apple.coreaudio-format")
    public static let mp3 = AVFileType("public.mp3")
    public static let jpg = AVFileType("public.jpeg")
    public static let heic = AVFileType("public.heic")
    /// HEIF holding H.264 stills (`.avci`). No output here writes it (`availablePhotoFileTypes` leaves it out), as
    /// on Apple's devices without an AVC still encoder; the constant exists so code that checks for it compiles.
    public static let avci = AVFileType("public.avci")
}

/// Video settings: the codec.
public let AVVideoCodecKey = "AVVideoCodecKey"
/// Video settings: width in pixels.
public let AVVideoWidthKey = "AVVideoWidthKey"
/// Video settings: height in pixels.
public let AVVideoHeightKey = "AVVideoHeightKey"
/// Video settings: a dictionary of compression properties.
public let AVVideoCompressionPropertiesKey = "AVVideoCompressionPropertiesKey"
/// Compression property: average bit rate, bits per second.
public let AVVideoAverageBitRateKey = "AverageBitRate"
/// Compression property: the longest distance between key frames, in frames.
public let AVVideoMaxKeyFrameIntervalKey = "MaxKeyFrameInterval"
/// Compression property: the longest distance between key frames, in seconds.
public let AVVideoMaxKeyFrameIntervalDurationKey = "MaxKeyFrameIntervalDuration"
/// Compression property: quality 0...1 (JPEG, HEIC).
public let AVVideoQualityKey = "Quality"
/// Compression property: the H.264/HEVC profile.
public let AVVideoProfileLevelKey = "ProfileLevel"
/// Compression property: expected frame rate.
public let AVVideoExpectedSourceFrameRateKey = "ExpectedFrameRate"
/// Compression property: whether frames may be reordered (B-frames).
public let AVVideoAllowFrameReorderingKey = "AllowFrameReordering"
/// Video settings: how to scale into the width and height.
public let AVVideoScalingModeKey = "AVVideoScalingModeKey"

/// Audio settings: the format (`kAudioFormatLinearPCM`, `kAudioFormatMPEG4AAC`, ...).
public let AVFormatIDKey = "AVFormatIDKey"
/// Audio settings: sample rate in Hz.
public let AVSampleRateKey = "AVSampleRateKey"
/// Audio settings: channel count.
public let AVNumberOfChannelsKey = "AVNumberOfChannelsKey"
/// Audio settings: encoder bit rate, bits per second.
public let AVEncoderBitRateKey = "AVEncoderBitRateKey"
/// Audio settings: encoder quality.
public let AVEncoderAudioQualityKey = "AVEncoderAudioQualityKey"
/// Audio settings (linear PCM): bits per sample.
public let AVLinearPCMBitDepthKey = "AVLinearPCMBitDepthKey"
/// Audio settings (linear PCM): floating-point samples.
public let AVLinearPCMIsFloatKey = "AVLinearPCMIsFloatKey"
/// Audio settings (linear PCM): big-endian samples.
public let AVLinearPCMIsBigEndianKey = "AVLinearPCMIsBigEndianKey"
/// Audio settings (linear PCM): one buffer per channel.
public let AVLinearPCMIsNonInterleaved = "AVLinearPCMIsNonInterleaved"
/// Audio settings: the channel layout (an `AudioChannelLayout` as data).
public let AVChannelLayoutKey = "AVChannelLayoutKey"

/// Reads an integer setting whatever number type the caller used (`Int`, `UInt32`, `NSNumber`, `Double`).
package func integerSetting(_ value: Any?) -> Int? {
    switch value {
    case let value as Int: value
    case let value as Int32: Int(value)
    case let value as UInt32: Int(value)
    case let value as UInt: Int(value)
    case let value as Int64: Int(value)
    case let value as Double where value.rounded() == value: Int(value)
    case let value as NSNumber: value.intValue
    default: nil
    }
}

/// Reads a floating-point setting whatever number type the caller used.
package func doubleSetting(_ value: Any?) -> Double? {
    switch value {
    case let value as Double: value
    case let value as Float: Double(value)
    case let value as NSNumber: value.doubleValue
    default: integerSetting(value).map(Double.init)
    }
}

/// Reads a Boolean setting.
package func boolSetting(_ value: Any?) -> Bool? {
    switch value {
    case let value as Bool: value
    case let value as NSNumber: value.boolValue
    default: integerSetting(value).map { $0 != 0 }
    }
}

/// Reads a codec setting given as an `AVVideoCodecType` or as its raw string ("jpeg").
package func codecSetting(_ value: Any?) -> AVVideoCodecType? {
    value as? AVVideoCodecType ?? (value as? String).map(AVVideoCodecType.init(rawValue:))
}

/// Traps, naming `owner`, the key and what is supported, when `settings` holds a key outside `known`, as Apple's
/// raises `NSInvalidArgumentException`.
package func requireKnownSettingKeys(_ settings: [String: Any], _ known: Set<String>, owner: String) {
    for key in settings.keys.sorted() where !known.contains(key) {
        preconditionFailure(
            "\(owner): key \(key) is not supported; use \(known.sorted().joined(separator: ", ")) (Apple raises"
                + " NSInvalidArgumentException)")
    }
}
