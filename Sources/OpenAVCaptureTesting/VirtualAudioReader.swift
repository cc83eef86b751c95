import CaptureDrivers
import Foundation

/// Measurements on virtual microphone sound: where the beeps are, and how loud it is.
///
/// The microphone plays a 440 Hz tone at −30 dBFS peak and, at every whole second of its sample clock, a 50 ms
/// 1 kHz beep at −6 dBFS peak; the virtual cameras flash at the same whole seconds, so a recording's A/V offset
/// is the difference between a beep and its flash. Works on tapped sample buffers and on PCM decoded from a file.
///
/// Beep onsets are accurate to a few hundredths of a millisecond on clean audio. A beep already sounding at the
/// first sample, or with less than 10 ms of it in the samples, is not reported.
///
/// Stateless; safe to use from any thread. Allocates working arrays: for tests, not the capture path.
public enum VirtualAudioReader {
    /// The presentation times of the beeps' onsets in `samples`: consecutive audio sample buffers of one stream
    /// (interleaved Float32 or Int16 PCM; channel 0 is read), concatenated to find the beeps. Each onset is timed
    /// from the buffer it falls in: that buffer's presentation time plus its position there at the nominal rate,
    /// so a sample clock running a few hundred ppm off still reads to the microsecond. The buffers must be
    /// contiguous (no period missing). With the virtual microphone at 0 ppm each onset is a whole second.
    public static func findBeeps(in samples: [CMSampleBuffer]) -> [CMTime] {
        guard let description = samples.first?.formatDescription?.audioStreamBasicDescription else { return [] }
        let channels = max(1, Int(description.mChannelsPerFrame))
        let isFloat = description.mBitsPerChannel == 32
        let rate = Int(description.mSampleRate)
        var mono: [Float] = []
        // Where each buffer starts in `mono`, and its presentation time.
        var starts: [(offset: Int, time: CMTime)] = []
        for sample in samples {
            starts.append((mono.count, sample.presentationTimeStamp))
            sample.dataBuffer?.withUnsafeBytes { bytes in
                if isFloat {
                    let floats = bytes.bindMemory(to: Float.self)
                    for index in stride(from: 0, to: floats.count, by: channels) { mono.append(floats[index]) }
                } else {
                    let ints = bytes.bindMemory(to: Int16.self)
                    for index in stride(from: 0, to: ints.count, by: channels) {
                        mono.append(Float(ints[index]) / 32767)
                    }
                }
            }
        }
        return findBeeps(samples: mono, sampleRate: rate, channels: 1).map { onset in
            let position = onset * Double(rate)
            let buffer = starts.last { Double($0.offset) <= position } ?? starts[0]
            let within = (position - Double(buffer.offset)) / Double(rate)
            return buffer.time + CMTime(seconds: within, preferredTimescale: 1_000_000_000)
        }
    }

    /// The beeps' onsets in interleaved float samples (full scale ±1), in seconds from the first frame; channel 0
    /// is read.
    public static func findBeeps(samples: [Float], sampleRate: Int, channels: Int = 1) -> [Double] {
        VirtualSoundReader.findBeeps(samples: samples, sampleRate: sampleRate, channels: channels)
    }

    /// The beeps' onsets in interleaved float samples, in seconds from the first frame.
    public static func findBeeps(samples: UnsafeBufferPointer<Float>, sampleRate: Int, channels: Int = 1) -> [Double] {
        VirtualSoundReader.findBeeps(samples: samples, sampleRate: sampleRate, channels: channels)
    }

    /// The beeps' onsets in interleaved 16-bit samples (full scale 32767), in seconds from the first frame.
    public static func findBeeps(samples: [Int16], sampleRate: Int, channels: Int = 1) -> [Double] {
        VirtualSoundReader.findBeeps(samples: samples, sampleRate: sampleRate, channels: channels)
    }

    /// The peak level of float samples in dBFS (1.0 is 0 dBFS; the beeps peak at −6, the tone at −30);
    /// −infinity for silence.
    public static func peakLevel(samples: [Float]) -> Double {
        VirtualSoundReader.peakLevel(samples: samples)
    }

    /// The peak level of 16-bit samples in dBFS (32767 is 0 dBFS); −infinity for silence.
    public static func peakLevel(samples: [Int16]) -> Double {
        VirtualSoundReader.peakLevel(samples: samples)
    }
}
