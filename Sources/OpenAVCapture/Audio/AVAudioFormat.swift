// AVFAudio's format and PCM buffer classes, as capture code uses them beside AVFoundation: describing linear PCM and
// holding samples to process. Apple's AVAudioFormat and AVAudioPCMBuffer, for linear PCM.

import Foundation
import Synchronization

/// A number of audio frames. Apple's `AVAudioFrameCount`.
public typealias AVAudioFrameCount = UInt32
/// A number of audio channels. Apple's `AVAudioChannelCount`.
public typealias AVAudioChannelCount = UInt32

/// The sample formats an audio format may use. Apple's `AVAudioCommonFormat`.
///
/// Value type; safe to use from any thread.
public enum AVAudioCommonFormat: UInt, Sendable {
    case otherFormat = 0
    case pcmFormatFloat32 = 1
    case pcmFormatFloat64 = 2
    case pcmFormatInt16 = 3
    case pcmFormatInt32 = 4

    var bytesPerSample: UInt32 {
        switch self {
        case .pcmFormatInt16: 2
        case .pcmFormatInt32, .pcmFormatFloat32: 4
        case .pcmFormatFloat64: 8
        case .otherFormat: 0
        }
    }
}

/// A linear PCM format: sample rate, channels, sample type and layout. Apple's `AVAudioFormat`.
///
/// Threading: immutable; safe to share between threads.
open class AVAudioFormat: NSObject, @unchecked Sendable {
    /// The format as a stream description.
    let streamDescriptionValue: AudioStreamBasicDescription
    private let descriptionStorage: UnsafeMutablePointer<AudioStreamBasicDescription>
    /// The format as a CoreMedia audio description.
    public let formatDescription: CMAudioFormatDescription

    /// `rate` Hz and `channels` channels of 32-bit float samples, deinterleaved: Apple's "standard" format. Nil for
    /// a rate that is not positive or no channels.
    public convenience init?(standardFormatWithSampleRate rate: Double, channels: AVAudioChannelCount) {
        self.init(commonFormat: .pcmFormatFloat32, sampleRate: rate, channels: channels, interleaved: false)
    }

    /// A format of one of the common sample types. Nil for `.otherFormat`, a rate that is not positive or no
    /// channels.
    public init?(
        commonFormat format: AVAudioCommonFormat, sampleRate: Double, channels: AVAudioChannelCount, interleaved: Bool
    ) {
        guard format != .otherFormat, sampleRate > 0, sampleRate.isFinite, channels > 0 else { return nil }
        let bytes = format.bytesPerSample
        var flags: AudioFormatFlags = kAudioFormatFlagIsPacked
        flags |= (format == .pcmFormatFloat32 || format == .pcmFormatFloat64) ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger
        if !interleaved { flags |= kAudioFormatFlagIsNonInterleaved }
        let frameBytes = interleaved ? bytes * channels : bytes
        let description = AudioStreamBasicDescription(
            mSampleRate: sampleRate, mFormatID: kAudioFormatLinearPCM, mFormatFlags: flags, mBytesPerPacket: frameBytes,
            mFramesPerPacket: 1, mBytesPerFrame: frameBytes, mChannelsPerFrame: channels, mBitsPerChannel: bytes * 8,
            mReserved: 0)
        guard let made = try? CMFormatDescription(audioStreamBasicDescription: description) else { return nil }
        formatDescription = made
        streamDescriptionValue = description
        descriptionStorage = .allocate(capacity: 1)
        descriptionStorage.initialize(to: description)
        super.init()
    }

    /// The format a stream description describes; nil unless it is linear PCM of 16 or 32-bit integers or 32 or
    /// 64-bit floats.
    public convenience init?(streamDescription asbd: UnsafePointer<AudioStreamBasicDescription>) {
        let description = asbd.pointee
        guard description.mFormatID == kAudioFormatLinearPCM,
            description.mFormatFlags & kAudioFormatFlagIsBigEndian == 0
        else { return nil }
        let isFloat = description.mFormatFlags & kAudioFormatFlagIsFloat != 0
        let common: AVAudioCommonFormat
        switch (isFloat, description.mBitsPerChannel) {
        case (true, 32): common = .pcmFormatFloat32
        case (true, 64): common = .pcmFormatFloat64
        case (false, 16): common = .pcmFormatInt16
        case (false, 32): common = .pcmFormatInt32
        default: return nil
        }
        self.init(
            commonFormat: common, sampleRate: description.mSampleRate, channels: description.mChannelsPerFrame,
            interleaved: description.mFormatFlags & kAudioFormatFlagIsNonInterleaved == 0)
    }

    /// The format of an audio format description (what capture's audio sample buffers carry).
    public convenience init?(cmAudioFormatDescription formatDescription: CMAudioFormatDescription) {
        guard var description = formatDescription.audioStreamBasicDescription else { return nil }
        self.init(streamDescription: &description)
    }

    deinit {
        descriptionStorage.deinitialize(count: 1)
        descriptionStorage.deallocate()
    }

    /// The stream description; the pointer lives as long as the format.
    public var streamDescription: UnsafePointer<AudioStreamBasicDescription> { UnsafePointer(descriptionStorage) }
    public var sampleRate: Double { streamDescriptionValue.mSampleRate }
    public var channelCount: AVAudioChannelCount { streamDescriptionValue.mChannelsPerFrame }
    public var isInterleaved: Bool { streamDescriptionValue.mFormatFlags & kAudioFormatFlagIsNonInterleaved == 0 }
    public var commonFormat: AVAudioCommonFormat {
        let isFloat = streamDescriptionValue.mFormatFlags & kAudioFormatFlagIsFloat != 0
        switch (isFloat, streamDescriptionValue.mBitsPerChannel) {
        case (true, 32): return .pcmFormatFloat32
        case (true, 64): return .pcmFormatFloat64
        case (false, 16): return .pcmFormatInt16
        case (false, 32): return .pcmFormatInt32
        default: return .otherFormat
        }
    }
    /// Whether this is the standard format: 32-bit float, deinterleaved.
    public var isStandard: Bool { commonFormat == .pcmFormatFloat32 && !isInterleaved }

    /// The format as asset writer and file output settings (`AVFormatIDKey`, rate, channels, the PCM keys).
    public var settings: [String: Any] {
        [
            AVFormatIDKey: kAudioFormatLinearPCM, AVSampleRateKey: sampleRate, AVNumberOfChannelsKey: Int(channelCount),
            AVLinearPCMBitDepthKey: Int(streamDescriptionValue.mBitsPerChannel),
            AVLinearPCMIsFloatKey: streamDescriptionValue.mFormatFlags & kAudioFormatFlagIsFloat != 0,
            AVLinearPCMIsBigEndianKey: false, AVLinearPCMIsNonInterleaved: !isInterleaved,
        ]
    }

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? AVAudioFormat else { return false }
        return other.streamDescriptionValue == streamDescriptionValue
    }

    open override var description: String {
        "<AVAudioFormat: \(channelCount) ch, \(sampleRate) Hz, \(commonFormat), \(isInterleaved ? "interleaved" : "deinterleaved")>"
    }
}
