import Foundation

/// The virtual microphone's sound as a pure function of the sample index.
///
/// A continuous 440 Hz sine at −30 dBFS peak; at every whole second (sample index a multiple of the rate) a
/// 50 ms 1 kHz beep at −6 dBFS peak that *replaces* the tone, cross-faded with 2 ms raised-cosine ramps:
///
///     e(m) = ½ − ½·cos(π·m / ramp)          for 0 ≤ m < ramp
///          = 1                               for ramp ≤ m < beep − ramp
///          = ½ − ½·cos(π·(beep − m) / ramp)  for beep − ramp ≤ m < beep, 0 afterwards
///     s(n) = (1 − e(m))·A_tone·sin(2π·440·n / R) + e(m)·A_beep·sin(2π·1000·m / R),   m = n mod R
///
/// so the beep starts exactly at the whole second (e = 0 there, rising), its 1 kHz starts at phase 0, and the
/// peak of the whole signal is exactly −6 dBFS. Both frequencies are whole cycles per second, so the signal
/// repeats every second and is kept as a one-second table built in `init`; sample `n` is `table[n mod R]`, with
/// no phase accumulated from one period to the next. Every channel carries the same signal.
///
/// The sample clock's error against the host clock does not change what sample `n` is, only when it arrives;
/// see `VirtualSampleClock`. Int16 samples are `round(s · 32767)`.
///
/// Value type (the tables are shared copy-on-write arrays, never written after `init`); safe from any thread.
package struct VirtualMicrophoneSynth: Sendable {
    /// The continuous tone's frequency, in hertz.
    package static let toneFrequency = 440
    /// The continuous tone's peak level, in dBFS.
    package static let tonePeakDBFS = -30.0
    /// The beep's frequency, in hertz.
    package static let beepFrequency = 1000
    /// The beep's peak level, in dBFS.
    package static let beepPeakDBFS = -6.0
    /// The beep's duration, ramps included, in seconds.
    package static let beepDuration = 0.05
    /// Each raised-cosine ramp's duration, in seconds.
    package static let rampDuration = 0.002

    /// Samples per second per channel.
    package let sampleRate: Int
    /// Interleaved channels per frame, 1 or more.
    package let channelCount: Int
    /// The beep's length in samples, ramps included.
    package let beepSampleCount: Int
    /// Each ramp's length in samples.
    package let rampSampleCount: Int

    private let floatTable: [Float]
    private let int16Table: [Int16]

    /// A synthesizer at `sampleRate` hertz with `channelCount` interleaved channels; builds its one-second tables
    /// (6 bytes per sample of the rate).
    package init(sampleRate: Int = 48_000, channelCount: Int = 1) {
        precondition(sampleRate >= 4_000, "the beep needs a sample rate of at least 4 kHz, not \(sampleRate)")
        precondition(channelCount >= 1, "a microphone has at least one channel")
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        let beep = Self.beepSampleCount(sampleRate: sampleRate)
        let ramp = Self.rampSampleCount(sampleRate: sampleRate)
        beepSampleCount = beep
        rampSampleCount = ramp
        let toneAmplitude = pow(10, Self.tonePeakDBFS / 20)
        let beepAmplitude = pow(10, Self.beepPeakDBFS / 20)
        var floats = [Float](repeating: 0, count: sampleRate)
        var ints = [Int16](repeating: 0, count: sampleRate)
        for m in 0..<sampleRate {
            // Phases reduced exactly in integers, so sample m of the table is as exact as sin allows.
            let tonePhase = Double(Self.toneFrequency * m % sampleRate) / Double(sampleRate)
            let tone = toneAmplitude * sin(2 * Double.pi * tonePhase)
            var value = tone
            if m < beep {
                let envelope: Double
                if m < ramp {
                    envelope = 0.5 - 0.5 * cos(Double.pi * Double(m) / Double(ramp))
                } else if m < beep - ramp {
                    envelope = 1
                } else {
                    envelope = 0.5 - 0.5 * cos(Double.pi * Double(beep - m) / Double(ramp))
                }
                let beepPhase = Double(Self.beepFrequency * m % sampleRate) / Double(sampleRate)
                value = (1 - envelope) * tone + envelope * beepAmplitude * sin(2 * Double.pi * beepPhase)
            }
            floats[m] = Float(value)
            ints[m] = Int16((value * 32767).rounded())
        }
        floatTable = floats
        int16Table = ints
    }

    /// The beep's length in samples at `sampleRate`, ramps included: 50 ms, rounded.
    package static func beepSampleCount(sampleRate: Int) -> Int {
        Int((Double(sampleRate) * beepDuration).rounded())
    }

    /// Each ramp's length in samples at `sampleRate`: 2 ms, rounded.
    package static func rampSampleCount(sampleRate: Int) -> Int {
        max(1, Int((Double(sampleRate) * rampDuration).rounded()))
    }

    /// Sample `index` of the stream (any channel), as a float in −1 ... 1.
    package func sample(at index: Int64) -> Float {
        floatTable[tableIndex(index)]
    }

    /// Writes `frameCount` frames starting at sample `startIndex` into `buffer`, interleaved,
    /// `frameCount · channelCount` floats. Allocates nothing.
    package func render(startingAt startIndex: Int64, frameCount: Int, into buffer: UnsafeMutablePointer<Float>) {
        floatTable.withUnsafeBufferPointer { render(from: $0, startIndex, frameCount, buffer) }
    }

    /// Writes `frameCount` frames starting at sample `startIndex` into `buffer`, interleaved,
    /// `frameCount · channelCount` signed 16-bit samples. Allocates nothing.
    package func render(startingAt startIndex: Int64, frameCount: Int, into buffer: UnsafeMutablePointer<Int16>) {
        int16Table.withUnsafeBufferPointer { render(from: $0, startIndex, frameCount, buffer) }
    }

    private func tableIndex(_ index: Int64) -> Int {
        let m = index % Int64(sampleRate)
        return Int(m < 0 ? m + Int64(sampleRate) : m)
    }

    @inline(__always)
    private func render<Sample>(
        from table: UnsafeBufferPointer<Sample>,
        _ startIndex: Int64,
        _ frameCount: Int,
        _ buffer: UnsafeMutablePointer<Sample>
    ) {
        precondition(frameCount >= 0, "a negative frame count")
        guard let base = table.baseAddress else { return }
        var position = tableIndex(startIndex)
        var written = 0
        var output = buffer
        // Runs of the table up to its end, then around again.
        while written < frameCount {
            let run = min(frameCount - written, sampleRate - position)
            let source = base + position
            switch channelCount {
            case 1:
                output.update(from: source, count: run)
            case 2:
                for i in 0..<run {
                    output[2 * i] = source[i]
                    output[2 * i + 1] = source[i]
                }
            default:
                for i in 0..<run {
                    (output + i * channelCount).update(repeating: source[i], count: channelCount)
                }
            }
            output += run * channelCount
            written += run
            position = 0
        }
    }
}
