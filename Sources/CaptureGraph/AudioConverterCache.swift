import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo

/// The audio converter of an audio data output, remade when the device's format or the requested one changes.
///
/// Threading: used on one queue at a time (the output's delegate queue).
package struct AudioConverterCache {
    package init() {}
    private var converter: AudioConverter?
    private var key: (source: AudioStreamBasicDescription, target: AudioStreamBasicDescription)?

    /// Converts `sample` to `partial` (zero fields keep the source's) and hands each result to `emit`; a buffer
    /// already in the requested format goes through untouched.
    package mutating func convert(
        _ sample: CMSampleBuffer, to partial: AudioStreamBasicDescription, emit: (CMSampleBuffer) -> Void
    ) {
        guard let source = sample.formatDescription?.audioStreamBasicDescription else { return emit(sample) }
        let target = Self.resolve(partial, against: source)
        guard AudioConverter.needsConversion(from: source, to: target) else { return emit(sample) }
        if key?.source != source || key?.target != target {
            converter = try? AudioConverter(from: source, to: target)
            key = (source, target)
        }
        try? converter?.convert(sample, emit: emit)
    }

    /// Forgets the stream: the next buffer starts a new run (after a stop, or a gap).
    package mutating func reset() {
        try? converter?.reset()
    }

    /// Fills the fields `partial` leaves at zero from `source`.
    package static func resolve(_ partial: AudioStreamBasicDescription, against source: AudioStreamBasicDescription)
        -> AudioStreamBasicDescription
    {
        let isFloat =
            partial.mFormatFlags == 0
            ? source.mFormatFlags & kAudioFormatFlagIsFloat != 0 : partial.mFormatFlags & kAudioFormatFlagIsFloat != 0
        let bits = partial.mBitsPerChannel != 0 ? partial.mBitsPerChannel : (isFloat ? 32 : source.mBitsPerChannel)
        return .linearPCM(
            sampleRate: partial.mSampleRate != 0 ? partial.mSampleRate : source.mSampleRate,
            channels: partial.mChannelsPerFrame != 0 ? partial.mChannelsPerFrame : source.mChannelsPerFrame,
            bitsPerChannel: bits, isFloat: isFloat)
    }
}
