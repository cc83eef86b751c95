// CMTimeMapping: a source range shown over a target range (a composition's edit), and Apple's range-to-range maps.

/// A range of a source's time mapped onto a range of a target's time: an edit in a composition. When the two
/// durations differ, time is scaled linearly (slow motion when the target is longer).
///
/// Value type; safe to use from any thread.
public struct CMTimeMapping: Sendable, Hashable {
    /// The range of the source's media; `.invalid` start for an empty edit.
    public var source: CMTimeRange
    /// Where it plays in the target's timeline.
    public var target: CMTimeRange

    /// `source` shown over `target`.
    public init(source: CMTimeRange, target: CMTimeRange) {
        self.source = source
        self.target = target
    }

    /// Creates an all-zero (invalid) mapping, like Apple's zero-initialized struct.
    public init() { self.init(source: CMTimeRange(), target: CMTimeRange()) }
}

/// Maps `t` from `fromRange` to `toRange` linearly: `toRange.start + (t - fromRange.start) × toRange.duration ÷
/// fromRange.duration`. Exact when the result's timescale fits in 31 bits; otherwise rounded to the nearest tick of
/// `t`'s timescale times the ratio's, capped at Apple's 1 000 000 000. Invalid for invalid input or an empty
/// `fromRange`.
public func CMTimeMapTimeFromRangeToRange(_ t: CMTime, fromRange: CMTimeRange, toRange: CMTimeRange) -> CMTime {
    guard t.isNumeric, fromRange.start.isNumeric, toRange.start.isNumeric else { return .invalid }
    let offset = CMTimeSubtract(t, fromRange.start)
    return CMTimeAdd(toRange.start, scaledDuration(offset, from: fromRange.duration, to: toRange.duration))
}

/// Maps a duration `dur` from `fromRange` to `toRange`: `dur × toRange.duration ÷ fromRange.duration`.
public func CMTimeMapDurationFromRangeToRange(_ dur: CMTime, fromRange: CMTimeRange, toRange: CMTimeRange) -> CMTime {
    scaledDuration(dur, from: fromRange.duration, to: toRange.duration)
}

/// `time × to ÷ from`, exact where it fits.
private func scaledDuration(_ time: CMTime, from: CMTime, to: CMTime) -> CMTime {
    guard time.isNumeric, from.isNumeric, to.isNumeric, from.value != 0, time.timescale > 0, from.timescale > 0,
        to.timescale > 0
    else { return .invalid }
    if from == to { return time }
    // value / scale = (t.v / t.s) × (to.v / to.s) ÷ (from.v / from.s)
    var numerator = Int128(time.value) * Int128(to.value) * Int128(from.timescale)
    var denominator = Int128(time.timescale) * Int128(to.timescale) * Int128(from.value)
    if denominator < 0 {
        numerator = -numerator
        denominator = -denominator
    }
    let divisor = greatestCommonDivisor(numerator.magnitude, denominator.magnitude)
    if divisor > 1 {
        numerator /= Int128(divisor)
        denominator /= Int128(divisor)
    }
    if denominator <= Int128(Int32.max), let value = Int64(exactly: numerator) {
        return CMTime(value: value, timescale: Int32(denominator))
    }
    // Too fine a timescale: round to one that fits.
    let scale = Int128(min(1_000_000_000, max(Int64(time.timescale), Int64(to.timescale))))
    let rounded = (numerator * scale * 2 + denominator) / (denominator * 2)
    guard let value = Int64(exactly: rounded) else { return .invalid }
    return CMTime(value: value, timescale: Int32(scale))
}

private func greatestCommonDivisor(_ a: UInt128, _ b: UInt128) -> UInt128 {
    var (a, b) = (a, b)
    while b != 0 { (a, b) = (b, a % b) }
    return a
}
