import Foundation

/// Applies a connection's `AVCaptureAudioChannel` `volume` and `isEnabled` to the audio a file output records
/// (Apple applies them to macOS file outputs only, and so do we): each channel's samples are scaled by its volume,
/// or silenced when it is disabled.
///
/// Buffers pass untouched (no copy) while every channel is enabled at volume 1; otherwise the gain is applied to a
/// copy, since the device's buffer is shared with the session's other outputs. Interleaved linear PCM of 16 or
/// 32-bit integers or 32-bit floats, as devices deliver; other formats pass untouched.
///
/// Threading: stateless; called on the capture thread.
enum AudioChannelGain {
    static func apply(to buffer: CMSampleBuffer, channels: [AVCaptureAudioChannel]) -> CMSampleBuffer {
        let gains = channels.map { $0.isEnabled ? $0.volume : 0 }
        guard gains.contains(where: { $0 != 1 }), let source = buffer.dataBuffer,
            let format = buffer.formatDescription, let description = format.audioStreamBasicDescription,
            description.mFormatID == kAudioFormatLinearPCM,
            description.mFormatFlags & kAudioFormatFlagIsNonInterleaved == 0,
            Int(description.mChannelsPerFrame) == gains.count
        else { return buffer }
        let isFloat = description.mFormatFlags & kAudioFormatFlagIsFloat != 0
        let bits = Int(description.mBitsPerChannel)
        guard (isFloat && bits == 32) || (!isFloat && (bits == 16 || bits == 32)) else { return buffer }
        let copy = CMBlockBuffer(length: source.dataLength)
        source.withUnsafeBytes { input in
            copy.withUnsafeMutableBytes { output in
                output.copyMemory(from: input)
                switch (isFloat, bits) {
                case (true, _): scale(output.bindMemory(to: Float.self), gains) { $0 * $1 }
                case (false, 16): scale(output.bindMemory(to: Int16.self), gains) { Int16(Float($0) * $1) }
                default: scale(output.bindMemory(to: Int32.self), gains) { Int32(clamping: Int64(Double($0) * Double($1))) }
                }
            }
        }
        guard let timings = try? buffer.sampleTimingInfos(), let sizes = try? buffer.sampleSizes(),
            let scaled = try? CMSampleBuffer(
                dataBuffer: copy, formatDescription: format, numSamples: buffer.numSamples, sampleTimings: timings,
                sampleSizes: sizes)
        else { return buffer }
        return scaled
    }

    /// Multiplies sample `i` by the gain of its channel (`i % channels`).
    private static func scale<Sample>(
        _ samples: UnsafeMutableBufferPointer<Sample>, _ gains: [Float], _ multiply: (Sample, Float) -> Sample
    ) {
        let channelCount = gains.count
        for index in samples.indices { samples[index] = multiply(samples[index], gains[index % channelCount]) }
    }
}
