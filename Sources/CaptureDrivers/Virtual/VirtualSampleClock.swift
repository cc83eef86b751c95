/// Where a virtual microphone's samples fall on the host clock when its sample clock runs `ppm` fast or slow.
///
/// The sound is a function of the sample index alone (`VirtualMicrophoneSynth`), as a real microphone's samples
/// are; a clock error changes only *when* sample `n` arrives, so it lives here, for the driver that stamps
/// periods, and not in the synthesizer. A device running `ppm` fast delivers `sampleRate · (1 + ppm·10⁻⁶)`
/// samples per host second, so its beeps (at whole seconds of sample time) drift against the camera's flashes
/// by `ppm` microseconds per second: what an A/V drift test measures. Value type; safe from any thread.
package struct VirtualSampleClock: Sendable, Hashable {
    /// The nominal sample rate, in hertz.
    package var sampleRate: Int
    /// How fast the device's clock runs relative to the host clock, in parts per million (positive: fast).
    package var ppm: Double

    /// A sample clock at `sampleRate` hertz nominal, `ppm` off the host clock.
    package init(sampleRate: Int, ppm: Double = 0) {
        precondition(sampleRate > 0, "a sample clock needs a positive rate")
        self.sampleRate = sampleRate
        self.ppm = ppm
    }

    /// The samples the device produces per host second.
    package var actualRate: Double { Double(sampleRate) * (1 + ppm * 1e-6) }

    /// The host time, in seconds after the stream's first sample, at which sample `index` is taken.
    package func hostSeconds(ofSample index: Int64) -> Double {
        Double(index) / actualRate
    }

    /// The sample position, fractional, that the device clock has reached `hostSeconds` after the stream's first
    /// sample: the inverse of `hostSeconds(ofSample:)`.
    package func samplePosition(atHostSeconds hostSeconds: Double) -> Double {
        hostSeconds * actualRate
    }
}
