// AVAudioTimePitchAlgorithm: how sound is stretched when its time is scaled (slow motion, playback at rates).

/// How audio is stretched or squeezed when a composition scales its time or a player plays at a rate other than 1.
///
/// `.spectral` and `.timeDomain` keep the pitch (ours: both are libavfilter's `atempo`, a time-domain
/// overlap-add stretcher, chained for factors beyond its 0.5…2 range); `.varispeed` resamples, so the pitch moves
/// with the rate, as a tape played faster or slower.
///
/// Threading: a value; `Sendable`.
public struct AVAudioTimePitchAlgorithm: RawRepresentable, Hashable, Sendable {
    /// Apple's name for the algorithm ("Spectral").
    public let rawValue: String
    /// The algorithm named `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The algorithm named `rawValue`.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// Keeps the pitch; Apple's for speech and most music.
    public static let timeDomain = AVAudioTimePitchAlgorithm(rawValue: "TimeDomain")
    /// Keeps the pitch; Apple's highest quality, the default for exports and readers.
    public static let spectral = AVAudioTimePitchAlgorithm(rawValue: "Spectral")
    /// Shifts the pitch with the rate (resampling).
    public static let varispeed = AVAudioTimePitchAlgorithm(rawValue: "Varispeed")
    /// Apple's deprecated low-latency algorithm; treated as ``timeDomain``.
    public static let lowQualityZeroLatency = AVAudioTimePitchAlgorithm(rawValue: "LowQualityZeroLatency")
}
