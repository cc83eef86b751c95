import Foundation

/// Audio in memory with its format. Apple's `AVAudioBuffer`.
///
/// Threading: not thread safe; use a buffer from one thread at a time.
open class AVAudioBuffer: NSObject, @unchecked Sendable {
    /// The samples' format.
    public let format: AVAudioFormat

    init(format: AVAudioFormat) {
        self.format = format
        super.init()
    }
}

/// Linear PCM samples in memory: `frameCapacity` frames, `frameLength` of them valid, reached through the channel
/// pointers of the format's sample type. Deinterleaved formats have one pointer per channel (stride 1);
/// interleaved ones one pointer to all channels (stride = channels). Apple's `AVAudioPCMBuffer`.
///
/// Threading: not thread safe; use a buffer from one thread at a time.
open class AVAudioPCMBuffer: AVAudioBuffer, @unchecked Sendable {
    /// The frames the buffer can hold.
    public let frameCapacity: AVAudioFrameCount
    private let samples: UnsafeMutableRawPointer
    /// The channel pointers, bound to the pointer type of the format's samples (`UnsafeMutablePointer<Float>` …).
    private let channels: UnsafeMutableRawPointer
    private var validFrames: AVAudioFrameCount = 0

    /// A buffer for `frameCapacity` frames of `format`, zeroed; nil for a capacity of 0 or a format without a common
    /// sample type.
    public init?(pcmFormat format: AVAudioFormat, frameCapacity: AVAudioFrameCount) {
        let sampleBytes = Int(format.commonFormat.bytesPerSample)
        guard frameCapacity > 0, sampleBytes > 0 else { return nil }
        self.frameCapacity = frameCapacity
        let channelCount = Int(format.channelCount)
        let perChannel = Int(frameCapacity) * sampleBytes * (format.isInterleaved ? channelCount : 1)
        let pointerCount = format.isInterleaved ? 1 : channelCount
        // Each channel starts on a 16-byte boundary, as Apple's do, for vector code.
        let channelStride = (perChannel + 15) & ~15
        let storage = UnsafeMutableRawPointer.allocate(byteCount: channelStride * pointerCount, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: channelStride * pointerCount)
        let starts = (0..<pointerCount).map { storage + $0 * channelStride }
        let pointers = UnsafeMutableRawPointer.allocate(
            byteCount: pointerCount * MemoryLayout<UnsafeMutableRawPointer>.stride,
            alignment: MemoryLayout<UnsafeMutableRawPointer>.alignment)
        switch format.commonFormat {
        case .pcmFormatFloat32: AVAudioPCMBuffer.bind(pointers, to: starts, as: Float.self)
        case .pcmFormatFloat64: AVAudioPCMBuffer.bind(pointers, to: starts, as: Double.self)
        case .pcmFormatInt16: AVAudioPCMBuffer.bind(pointers, to: starts, as: Int16.self)
        case .pcmFormatInt32, .otherFormat: AVAudioPCMBuffer.bind(pointers, to: starts, as: Int32.self)
        }
        samples = storage
        channels = pointers
        super.init(format: format)
    }

    deinit {
        samples.deallocate()
        channels.deallocate()
    }

    /// Stores typed pointers to `starts` in `pointers`, bound to `UnsafeMutablePointer<Sample>`.
    private static func bind<Sample>(_ pointers: UnsafeMutableRawPointer, to starts: [UnsafeMutableRawPointer], as _: Sample.Type) {
        let typed = pointers.bindMemory(to: UnsafeMutablePointer<Sample>.self, capacity: starts.count)
        for (index, start) in starts.enumerated() {
            (typed + index).initialize(to: start.assumingMemoryBound(to: Sample.self))
        }
    }

    /// The frames that hold samples, at most ``frameCapacity``; a larger value is taken as the capacity (logged
    /// once: Apple documents no exception).
    public var frameLength: AVAudioFrameCount {
        get { validFrames }
        set {
            if newValue > frameCapacity {
                ToleratedMisuse.report(
                    "AVAudioPCMBuffer.frameLength",
                    "AVAudioPCMBuffer: frameLength \(newValue) exceeds frameCapacity \(frameCapacity); it is the capacity")
            }
            validFrames = min(newValue, frameCapacity)
        }
    }

    /// The distance between a channel's consecutive samples, in samples: the channel count when interleaved, else 1.
    public var stride: Int { format.isInterleaved ? Int(format.channelCount) : 1 }

    private func channelData<Sample>(
        _ common: AVAudioCommonFormat, as _: Sample.Type
    ) -> UnsafePointer<UnsafeMutablePointer<Sample>>? {
        guard format.commonFormat == common else { return nil }
        return UnsafePointer(channels.assumingMemoryBound(to: UnsafeMutablePointer<Sample>.self))
    }

    /// The channels' 32-bit float samples, or nil for another sample type.
    public var floatChannelData: UnsafePointer<UnsafeMutablePointer<Float>>? { channelData(.pcmFormatFloat32, as: Float.self) }
    /// The channels' 16-bit integer samples, or nil for another sample type.
    public var int16ChannelData: UnsafePointer<UnsafeMutablePointer<Int16>>? { channelData(.pcmFormatInt16, as: Int16.self) }
    /// The channels' 32-bit integer samples, or nil for another sample type.
    public var int32ChannelData: UnsafePointer<UnsafeMutablePointer<Int32>>? { channelData(.pcmFormatInt32, as: Int32.self) }
}
