// How AVAssetWriterInput reads its output settings: every key checked, none ignored.

import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo

/// H.264 profile: High, level chosen by the encoder (the writer's default). The other profiles and levels are in
/// AVVideoSettings+StreamTags.swift.
public let AVVideoProfileLevelH264HighAutoLevel = "H264_High_AutoLevel"
/// H.264 profile: Main, level chosen by the encoder.
public let AVVideoProfileLevelH264MainAutoLevel = "H264_Main_AutoLevel"
/// H.264 profile: Baseline (CAVLC only), level chosen by the encoder.
public let AVVideoProfileLevelH264BaselineAutoLevel = "H264_Baseline_AutoLevel"
/// HEVC profile: Main, level chosen by the encoder. The one HEVC profile the writer encodes.
public let kVTProfileLevel_HEVC_Main_AutoLevel = "HEVC_Main_AutoLevel"

/// The encoder an input's output settings describe, read and validated once, in the input's initializer.
///
/// Every key is checked: an unknown key, a key that does not apply to the codec or a value out of range stops the
/// program with a message naming it, as Apple's `-[AVAssetWriterInput initWithMediaType:outputSettings:]` raises
/// `NSInvalidArgumentException`. Nothing is silently ignored.
///
/// Threading: a value; `Sendable`.
enum WriterTrackSettings: Sendable {
    /// Video: the encoder configuration except the pixel format, which the source decides at `startWriting()`.
    case video(VideoEncoder.Configuration)
    /// Audio: the encoder configuration.
    case audio(AudioEncoder.Configuration)
    /// Nil output settings: compressed sample buffers written as they are, in the format of the source hint.
    case passthrough(CMFormatDescription)

    /// The keys a video settings dictionary may hold.
    static let videoKeys: Set<String> = Set([
        AVVideoCodecKey, AVVideoWidthKey, AVVideoHeightKey, AVVideoCompressionPropertiesKey, AVVideoScalingModeKey,
        AVVideoEncoderSpecificationKey,
    ]).union(streamTagKeys)
    /// The keys a video compression properties dictionary may hold.
    static let compressionKeys: Set<String> = Set([
        AVVideoAverageBitRateKey, AVVideoMaxKeyFrameIntervalKey, AVVideoMaxKeyFrameIntervalDurationKey,
        AVVideoExpectedSourceFrameRateKey, AVVideoQualityKey, AVVideoAllowFrameReorderingKey,
    ]).union(streamTagCompressionKeys)
    /// The keys an audio settings dictionary may hold.
    static let audioKeys: Set<String> = [
        AVFormatIDKey, AVSampleRateKey, AVNumberOfChannelsKey, AVEncoderBitRateKey, AVLinearPCMBitDepthKey,
        AVLinearPCMIsFloatKey, AVLinearPCMIsBigEndianKey, AVLinearPCMIsNonInterleaved,
    ]

    /// Reads `settings` for `mediaType`, or stops the program naming what is wrong.
    static func read(mediaType: AVMediaType, settings: [String: Any]?, hint: CMFormatDescription?) -> Self {
        guard let settings else {
            // Passthrough: the file's track is made at startWriting, before any sample, so it needs the format.
            let hintMedia: AVMediaType? =
                hint?.mediaType == .video ? .video : hint?.mediaType == .audio ? .audio : nil
            guard let hint, hintMedia == mediaType else {
                invalid(
                    "nil output settings (passthrough) need a sourceFormatHint of the samples' \(mediaType.rawValue) "
                        + "format, e.g. the reader track's formatDescriptions.first")
            }
            return .passthrough(hint)
        }
        switch mediaType {
        case .video: return .video(readVideo(settings))
        case .audio: return .audio(readAudio(settings, hint: hint))
        default: invalid("media type '\(mediaType.rawValue)' is not supported; use .video or .audio")
        }
    }

    static func invalid(_ message: String) -> Never {
        preconditionFailure(
            "*** -[AVAssetWriterInput initWithMediaType:outputSettings:sourceFormatHint:] invalid output settings: "
                + message)
    }

    private static func checkKeys(_ settings: [String: Any], allowed: Set<String>, in place: String) {
        for key in settings.keys.sorted() where !allowed.contains(key) {
            invalid("unsupported key '\(key)' in \(place); supported: \(allowed.sorted().joined(separator: ", "))")
        }
    }

    private static func positiveInteger(_ settings: [String: Any], _ key: String, range: ClosedRange<Int>) -> Int? {
        guard let raw = settings[key] else { return nil }
        guard let value = integerSetting(raw), range.contains(value) else {
            invalid("'\(key)' must be an integer in \(range.lowerBound)...\(range.upperBound), not \(raw)")
        }
        return value
    }

    private static func readVideo(_ settings: [String: Any]) -> VideoEncoder.Configuration {
        checkKeys(settings, allowed: videoKeys, in: "video settings")
        let codec: VideoEncoder.Codec
        switch settings[AVVideoCodecKey] {
        case let type as AVVideoCodecType: codec = videoCodec(type)
        case let name as String: codec = videoCodec(AVVideoCodecType(rawValue: name))
        case nil: invalid("video settings need AVVideoCodecKey")
        case let other?: invalid("AVVideoCodecKey must be an AVVideoCodecType, not \(other)")
        }
        guard let width = positiveInteger(settings, AVVideoWidthKey, range: 16...8192) else {
            invalid("video settings need AVVideoWidthKey")
        }
        guard let height = positiveInteger(settings, AVVideoHeightKey, range: 16...8192) else {
            invalid("video settings need AVVideoHeightKey")
        }
        if codec != .proRes422, width % 2 != 0 || height % 2 != 0 {
            invalid("\(codec) needs an even width and height, not \(width)x\(height)")
        }
        if let raw = settings[AVVideoScalingModeKey], (raw as? String).flatMap(VideoScalingMode.init(rawValue:)) == nil {
            invalid(
                "'\(AVVideoScalingModeKey)' must be AVVideoScalingModeFit, AVVideoScalingModeResize, "
                    + "AVVideoScalingModeResizeAspect or AVVideoScalingModeResizeAspectFill, not \(raw)")
        }
        var properties: [String: Any] = [:]
        if let raw = settings[AVVideoCompressionPropertiesKey] {
            guard let dictionary = raw as? [String: Any] else {
                invalid("AVVideoCompressionPropertiesKey must be a [String: Any] dictionary, not \(raw)")
            }
            properties = dictionary
        }
        checkKeys(properties, allowed: compressionKeys, in: "AVVideoCompressionPropertiesKey")
        var frameRate = 30
        if let raw = properties[AVVideoExpectedSourceFrameRateKey] {
            guard let rate = doubleSetting(raw), rate >= 1, rate <= 1000 else {
                invalid("'\(AVVideoExpectedSourceFrameRateKey)' must be a number in 1...1000, not \(raw)")
            }
            frameRate = Int(rate.rounded())
        }
        var configuration = VideoEncoder.Configuration(codec: codec, width: width, height: height, frameRate: frameRate)
        if let bitRate = positiveInteger(properties, AVVideoAverageBitRateKey, range: 1...2_000_000_000) {
            guard codec == .h264 || codec == .hevc else {
                invalid("'\(AVVideoAverageBitRateKey)' applies to H.264 and HEVC, not \(codec)")
            }
            configuration.averageBitRate = bitRate
        }
        if let interval = positiveInteger(properties, AVVideoMaxKeyFrameIntervalKey, range: 1...100_000) {
            configuration.maxKeyFrameInterval = interval
        }
        if let raw = properties[AVVideoMaxKeyFrameIntervalDurationKey] {
            guard let seconds = doubleSetting(raw), seconds > 0, seconds <= 3600 else {
                invalid("'\(AVVideoMaxKeyFrameIntervalDurationKey)' must be seconds in (0, 3600], not \(raw)")
            }
            let frames = max(1, Int((seconds * Double(frameRate)).rounded(.down)))
            configuration.maxKeyFrameInterval = min(configuration.maxKeyFrameInterval, frames)
        }
        if let raw = properties[AVVideoQualityKey] {
            guard let quality = doubleSetting(raw), (0...1).contains(quality) else {
                invalid("'\(AVVideoQualityKey)' must be a number in 0...1, not \(raw)")
            }
            guard codec == .jpeg else { invalid("'\(AVVideoQualityKey)' applies to JPEG, not \(codec)") }
            configuration.quality = quality
        }
        if let raw = properties[AVVideoAllowFrameReorderingKey] {
            // Accepted either way: reordering is allowed, never required, and the encoders do not reorder.
            guard boolSetting(raw) != nil else {
                invalid("'\(AVVideoAllowFrameReorderingKey)' must be a Bool, not \(raw)")
            }
        }
        readStreamTags(settings, properties: properties, into: &configuration)
        configuration.hardwarePolicy = readEncoderSpecification(settings)
        return configuration
    }

    private static func videoCodec(_ type: AVVideoCodecType) -> VideoEncoder.Codec {
        switch type {
        case .h264: .h264
        case .hevc: .hevc
        case .jpeg: .jpeg
        case .proRes422: .proRes422
        default: invalid("AVVideoCodecKey '\(type.rawValue)' is not supported; use .h264, .hevc, .jpeg or .proRes422")
        }
    }

    private static func readAudio(_ settings: [String: Any], hint: CMFormatDescription?) -> AudioEncoder.Configuration {
        checkKeys(settings, allowed: audioKeys, in: "audio settings")
        guard let rawFormat = settings[AVFormatIDKey] else { invalid("audio settings need AVFormatIDKey") }
        guard let formatNumber = integerSetting(rawFormat), let format = UInt32(exactly: formatNumber) else {
            invalid("AVFormatIDKey must be an AudioFormatID, not \(rawFormat)")
        }
        let pcmKeys = [
            AVLinearPCMBitDepthKey, AVLinearPCMIsFloatKey, AVLinearPCMIsBigEndianKey, AVLinearPCMIsNonInterleaved,
        ]
        let codec: AudioEncoder.Codec
        switch format {
        case kAudioFormatMPEG4AAC, kAudioFormatAppleLossless:
            if let key = pcmKeys.first(where: { settings[$0] != nil }) {
                invalid("'\(key)' applies to kAudioFormatLinearPCM only")
            }
            codec = format == kAudioFormatMPEG4AAC ? .aac : .alac
        case kAudioFormatLinearPCM:
            let bits = positiveInteger(settings, AVLinearPCMBitDepthKey, range: 8...64) ?? 16
            let isFloat = flag(settings, AVLinearPCMIsFloatKey)
            let isBigEndian = flag(settings, AVLinearPCMIsBigEndianKey)
            guard !flag(settings, AVLinearPCMIsNonInterleaved) else {
                invalid("'\(AVLinearPCMIsNonInterleaved)' true is not supported; files hold interleaved PCM")
            }
            codec = .linearPCM(bitsPerSample: bits, isFloat: isFloat, isBigEndian: isBigEndian)
            guard codec.encoderName != nil else {
                invalid(
                    "linear PCM of \(bits) bits\(isFloat ? " float" : "") is not supported; use 16, 24 or 32-bit "
                        + "integers or 32-bit floats")
            }
        default:
            invalid(
                "AVFormatIDKey '\(fourCharCodeString(format))' is not supported; use kAudioFormatMPEG4AAC, "
                    + "kAudioFormatAppleLossless or kAudioFormatLinearPCM")
        }
        let hinted = hint?.audioStreamBasicDescription
        let sampleRate: Int
        if let raw = settings[AVSampleRateKey] {
            guard let rate = doubleSetting(raw), rate == rate.rounded(), (8000...192_000).contains(rate) else {
                invalid("'\(AVSampleRateKey)' must be a whole number of hertz in 8000...192000, not \(raw)")
            }
            sampleRate = Int(rate)
        } else if let hinted, hinted.mSampleRate > 0 {
            sampleRate = Int(hinted.mSampleRate.rounded())
        } else {
            invalid("audio settings need AVSampleRateKey (or a sourceFormatHint)")
        }
        let channels: Int
        if let count = positiveInteger(settings, AVNumberOfChannelsKey, range: 1...8) {
            channels = count
        } else if let hinted, (1...8).contains(hinted.mChannelsPerFrame) {
            channels = Int(hinted.mChannelsPerFrame)
        } else {
            invalid("audio settings need AVNumberOfChannelsKey (or a sourceFormatHint)")
        }
        var configuration = AudioEncoder.Configuration(codec: codec, sampleRate: sampleRate, channelCount: channels)
        if let bitRate = positiveInteger(settings, AVEncoderBitRateKey, range: 8000...1_536_000) {
            guard codec == .aac else { invalid("'\(AVEncoderBitRateKey)' applies to AAC only, not \(codec)") }
            configuration.bitRate = bitRate
        }
        return configuration
    }

    private static func flag(_ settings: [String: Any], _ key: String) -> Bool {
        guard let raw = settings[key] else { return false }
        guard let value = boolSetting(raw) else { invalid("'\(key)' must be a Bool, not \(raw)") }
        return value
    }

    private static func fourCharCodeString(_ code: UInt32) -> String {
        let bytes = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: code >> $0) }
        return bytes.allSatisfy({ (32...126).contains($0) }) ? String(decoding: bytes, as: UTF8.self) : "\(code)"
    }
}
