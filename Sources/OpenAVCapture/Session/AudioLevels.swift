import Foundation

/// Measures audio sample buffers for `AVCaptureAudioChannel` levels, on the capture thread.
enum AudioLevels {
    /// Adds one buffer of interleaved PCM (Int16, Int32 or Float32) to each channel's meter. Allocation-free.
    static func measure(_ sampleBuffer: CMSampleBuffer, into channels: [AVCaptureAudioChannel]) {
        guard let layout = sampleBuffer.formatDescription?.audioStreamBasicDescription,
            layout.mFormatID == kAudioFormatLinearPCM, let data = sampleBuffer.dataBuffer
        else { return }
        let channelCount = Int(layout.mChannelsPerFrame)
        let frames = sampleBuffer.numSamples
        guard channelCount > 0, frames > 0, channelCount <= 64 else { return }
        let duration = Double(frames) / layout.mSampleRate
        let isFloat = layout.mFormatFlags & kAudioFormatFlagIsFloat != 0
        let bits = Int(layout.mBitsPerChannel)
        withUnsafeTemporaryAllocation(of: (sum: Double, peak: Double).self, capacity: channelCount) { totals in
            totals.initialize(repeating: (0, 0))
            data.withUnsafeBytes { bytes in
                func accumulate(_ value: Double, channel: Int) {
                    totals[channel].sum += value * value
                    totals[channel].peak = max(totals[channel].peak, abs(value))
                }
                switch (isFloat, bits) {
                case (true, 32):
                    let samples = bytes.bindMemory(to: Float.self)
                    for index in 0..<min(samples.count, frames * channelCount) {
                        accumulate(Double(samples[index]), channel: index % channelCount)
                    }
                case (false, 16):
                    let samples = bytes.bindMemory(to: Int16.self)
                    for index in 0..<min(samples.count, frames * channelCount) {
                        accumulate(Double(samples[index]) / 32768, channel: index % channelCount)
                    }
                case (false, 32):
                    let samples = bytes.bindMemory(to: Int32.self)
                    for index in 0..<min(samples.count, frames * channelCount) {
                        accumulate(Double(samples[index]) / 2_147_483_648, channel: index % channelCount)
                    }
                default:
                    break
                }
            }
            for (index, channel) in channels.prefix(channelCount).enumerated() {
                channel.measure(sumOfSquares: totals[index].sum, peak: totals[index].peak, count: frames, duration: duration)
            }
        }
    }
}
