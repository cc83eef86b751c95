import Foundation

/// Measurements on PCM: what tests read back from virtual microphone audio, ours or decoded from a file.
///
/// Stateless; safe from any thread. Readers allocate working arrays; they are for tests, not the capture path.
package enum VirtualSoundReader {
    /// The onsets of the 1 kHz beeps in interleaved float samples, in seconds from the first frame, read from
    /// channel 0.
    ///
    /// The 1 kHz amplitude is demodulated sample by sample (I/Q against 1 kHz, low-passed by two one-cycle
    /// moving averages, which cancel the 2 kHz product), a beep is found where it rises past half its maximum (and past
    /// −26 dBFS, so a buffer of tone alone has none), and its onset is where the amplitude crosses half the
    /// beep's own plateau, minus the averaging delay and half a ramp: the raised-cosine ramp is symmetric about
    /// its midpoint, so the half crossing sits exactly there. Accurate to a few hundredths of a millisecond on
    /// clean audio. A beep already sounding at the first sample, or with less than 10 ms in the buffer, is not
    /// reported.
    package static func findBeeps(samples: UnsafeBufferPointer<Float>, sampleRate: Int, channels: Int) -> [Double] {
        precondition(sampleRate > 0 && channels > 0, "a sample rate and a channel count must be positive")
        let frameCount = samples.count / channels
        let rate = Double(sampleRate)
        let window = max(1, Int((rate / Double(VirtualMicrophoneSynth.beepFrequency)).rounded()))
        let ramp = Double(VirtualMicrophoneSynth.rampSampleCount(sampleRate: sampleRate))
        let beepLength = VirtualMicrophoneSynth.beepSampleCount(sampleRate: sampleRate)
        guard frameCount > window + 2 else { return [] }

        // amplitude[n]: the 1 kHz amplitude through two cascaded one-cycle moving averages (a triangle 2·window − 1
        // long, delay window − 1). One average cancels the 2 kHz product only where the envelope is constant; on
        // a ramp it leaks and shifts the half crossing by about 4 samples. The triangle's double zero at 2 kHz
        // cancels the leak of a linear ramp too.
        var inPhase = [Double](repeating: 0, count: frameCount)
        var quadrature = [Double](repeating: 0, count: frameCount)
        for n in 0..<frameCount {
            let phase = 2 * Double.pi * Double(VirtualMicrophoneSynth.beepFrequency * n % sampleRate) / rate
            let x = Double(samples[n * channels])
            inPhase[n] = x * cos(phase)
            quadrature[n] = x * sin(phase)
        }
        movingAverage(&inPhase, window: window)
        movingAverage(&quadrature, window: window)
        movingAverage(&inPhase, window: window)
        movingAverage(&quadrature, window: window)
        let delay = Double(window - 1)
        var amplitude = [Double](repeating: 0, count: frameCount)
        for n in 2 * (window - 1)..<frameCount {
            amplitude[n] = 2 * (inPhase[n] * inPhase[n] + quadrature[n] * quadrature[n]).squareRoot()
        }

        let peak = amplitude.max() ?? 0
        let threshold = max(0.05, peak / 2)
        let plateauSkip = Int(ramp.rounded(.up)) + 2 * window
        let minimumPlateau = Int(rate * 0.01)
        var onsets = [Double]()
        var n = 2 * window
        while n < frameCount {
            guard amplitude[n - 1] < threshold && amplitude[n] >= threshold else {
                n += 1
                continue
            }
            // The beep's own plateau, then the crossing of half of it, searched from before the ramp.
            let plateauStart = n + plateauSkip
            let plateauEnd = min(frameCount, n + beepLength - plateauSkip)
            guard plateauEnd - plateauStart >= minimumPlateau else { break }
            let plateau = amplitude[plateauStart..<plateauEnd].reduce(0, +) / Double(plateauEnd - plateauStart)
            let half = plateau / 2
            var j = max(2 * window, n - plateauSkip)
            while j < plateauStart && !(amplitude[j - 1] < half && amplitude[j] >= half) { j += 1 }
            if j < plateauStart {
                let crossing = Double(j - 1) + (half - amplitude[j - 1]) / (amplitude[j] - amplitude[j - 1])
                onsets.append((crossing - delay - ramp / 2) / rate)
            }
            n += beepLength
        }
        return onsets
    }

    /// Replaces each value by the mean of it and the `window − 1` before it (fewer at the start).
    private static func movingAverage(_ values: inout [Double], window: Int) {
        var sum = 0.0
        let history = values
        for n in values.indices {
            sum += history[n]
            if n >= window { sum -= history[n - window] }
            values[n] = sum / Double(window)
        }
    }

    /// The onsets of the beeps in interleaved float samples (see the pointer version).
    package static func findBeeps(samples: [Float], sampleRate: Int, channels: Int) -> [Double] {
        samples.withUnsafeBufferPointer { findBeeps(samples: $0, sampleRate: sampleRate, channels: channels) }
    }

    /// The onsets of the beeps in interleaved 16-bit samples (full scale 32767).
    package static func findBeeps(samples: [Int16], sampleRate: Int, channels: Int) -> [Double] {
        findBeeps(samples: samples.map { Float($0) / 32767 }, sampleRate: sampleRate, channels: channels)
    }

    /// The peak level of float samples in dBFS (1.0 is 0 dBFS); −infinity for silence.
    package static func peakLevel(samples: UnsafeBufferPointer<Float>) -> Double {
        let peak = samples.reduce(Float(0)) { max($0, abs($1)) }
        return 20 * log10(Double(peak))
    }

    /// The peak level of float samples in dBFS (1.0 is 0 dBFS); −infinity for silence.
    package static func peakLevel(samples: [Float]) -> Double {
        samples.withUnsafeBufferPointer { peakLevel(samples: $0) }
    }

    /// The peak level of 16-bit samples in dBFS (32767 is 0 dBFS); −infinity for silence.
    package static func peakLevel(samples: [Int16]) -> Double {
        let peak = samples.reduce(0) { max($0, abs(Int($1))) }
        return 20 * log10(Double(peak) / 32767)
    }
}
