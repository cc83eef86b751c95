/// An audio format identifier (`'lpcm'`, `'aac '`), as CoreAudioTypes' `AudioFormatID`.
public typealias AudioFormatID = UInt32

/// Flags that refine an audio format, as CoreAudioTypes' `AudioFormatFlags`.
public typealias AudioFormatFlags = UInt32

/// Linear PCM. The corresponding Apple constant is `kAudioFormatLinearPCM` (`'lpcm'`).
public let kAudioFormatLinearPCM = fourCharCode("lpcm")!
/// MPEG-4 AAC. The corresponding Apple constant is `kAudioFormatMPEG4AAC` (`'aac '`).
public let kAudioFormatMPEG4AAC = fourCharCode("aac ")!
/// Apple Lossless. The corresponding Apple constant is `kAudioFormatAppleLossless` (`'alac'`).
public let kAudioFormatAppleLossless = fourCharCode("alac")!
/// MPEG-1/2 Layer 3. The corresponding Apple constant is `kAudioFormatMPEGLayer3` (`'.mp3'`).
public let kAudioFormatMPEGLayer3 = fourCharCode(".mp3")!

/// Samples are floating point. Apple's value: 1 << 0.
public let kAudioFormatFlagIsFloat: AudioFormatFlags = 1 << 0
/// Samples are big-endian. Apple's value: 1 << 1.
public let kAudioFormatFlagIsBigEndian: AudioFormatFlags = 1 << 1
/// Integer samples are signed. Apple's value: 1 << 2.
public let kAudioFormatFlagIsSignedInteger: AudioFormatFlags = 1 << 2
/// Sample bits fill the bytes of each channel. Apple's value: 1 << 3.
public let kAudioFormatFlagIsPacked: AudioFormatFlags = 1 << 3
/// Channels are in separate buffers rather than interleaved. Apple's value: 1 << 5.
public let kAudioFormatFlagIsNonInterleaved: AudioFormatFlags = 1 << 5
/// Native-endian packed floats (little-endian on every Linux we build for).
public let kAudioFormatFlagsNativeFloatPacked: AudioFormatFlags = kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked
/// The linear PCM spellings of the same flags.
public let kLinearPCMFormatFlagIsFloat = kAudioFormatFlagIsFloat
public let kLinearPCMFormatFlagIsBigEndian = kAudioFormatFlagIsBigEndian
public let kLinearPCMFormatFlagIsSignedInteger = kAudioFormatFlagIsSignedInteger
public let kLinearPCMFormatFlagIsPacked = kAudioFormatFlagIsPacked
public let kLinearPCMFormatFlagIsNonInterleaved = kAudioFormatFlagIsNonInterleaved

/// The layout of a stream of audio, as CoreAudioTypes' struct of the same name.
///
/// For linear PCM every field is set; for compressed formats (AAC) the byte counts are 0 and
/// `mFramesPerPacket` is the codec's (1024 for AAC).
///
/// Value type; safe to use from any thread.
public struct AudioStreamBasicDescription: Hashable, Sendable {
    /// Frames per second of the stream.
    public var mSampleRate: Float64
    /// The format: `kAudioFormatLinearPCM`, `kAudioFormatMPEG4AAC`, ...
    public var mFormatID: AudioFormatID
    /// Format-specific flags: `kAudioFormatFlagIsFloat`, `kAudioFormatFlagIsSignedInteger`, ...
    public var mFormatFlags: AudioFormatFlags
    /// Bytes in a packet; 0 for variable-size packets.
    public var mBytesPerPacket: UInt32
    /// Frames in a packet: 1 for linear PCM.
    public var mFramesPerPacket: UInt32
    /// Bytes from the start of one frame to the next; 0 for compressed formats.
    public var mBytesPerFrame: UInt32
    /// Channels in each frame.
    public var mChannelsPerFrame: UInt32
    /// Bits of sample data per channel; 0 for compressed formats.
    public var mBitsPerChannel: UInt32
    /// Padding for 8-byte alignment, as Apple's struct has.
    public var mReserved: UInt32

    /// A description with every field zero, as `AudioStreamBasicDescription()` is on Apple's platforms.
    public init() {
        self.init(
            mSampleRate: 0, mFormatID: 0, mFormatFlags: 0, mBytesPerPacket: 0, mFramesPerPacket: 0,
            mBytesPerFrame: 0, mChannelsPerFrame: 0, mBitsPerChannel: 0, mReserved: 0)
    }

    /// A description from its fields, in Apple's order.
    public init(
        mSampleRate: Float64, mFormatID: AudioFormatID, mFormatFlags: AudioFormatFlags, mBytesPerPacket: UInt32,
        mFramesPerPacket: UInt32, mBytesPerFrame: UInt32, mChannelsPerFrame: UInt32, mBitsPerChannel: UInt32,
        mReserved: UInt32
    ) {
        self.mSampleRate = mSampleRate
        self.mFormatID = mFormatID
        self.mFormatFlags = mFormatFlags
        self.mBytesPerPacket = mBytesPerPacket
        self.mFramesPerPacket = mFramesPerPacket
        self.mBytesPerFrame = mBytesPerFrame
        self.mChannelsPerFrame = mChannelsPerFrame
        self.mBitsPerChannel = mBitsPerChannel
        self.mReserved = mReserved
    }

    /// Interleaved, packed linear PCM: what a capture device delivers.
    ///
    /// - Parameters:
    ///   - sampleRate: frames per second.
    ///   - channels: channels per frame.
    ///   - bitsPerChannel: 16 or 32 for integers, 32 for floats.
    ///   - isFloat: floating-point samples when true, signed integers otherwise.
    package static func linearPCM(sampleRate: Float64, channels: UInt32, bitsPerChannel: UInt32, isFloat: Bool)
        -> AudioStreamBasicDescription
    {
        let bytesPerFrame = channels * bitsPerChannel / 8
        return AudioStreamBasicDescription(
            mSampleRate: sampleRate, mFormatID: kAudioFormatLinearPCM,
            mFormatFlags: (isFloat ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger)
                | kAudioFormatFlagIsPacked,
            mBytesPerPacket: bytesPerFrame, mFramesPerPacket: 1, mBytesPerFrame: bytesPerFrame,
            mChannelsPerFrame: channels, mBitsPerChannel: bitsPerChannel, mReserved: 0)
    }
}
