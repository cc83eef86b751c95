// The rounding methods of CMTimeConvertScale and of every CMTime operation that has to round (CMTime.h).

/// How a ``CMTime`` value is rounded when the exact result cannot be represented in the target timescale.
///
/// The raw values are Apple's (`kCMTimeRoundingMethod_…` in `CMTime.h`). Every arithmetic operation that
/// rounds on its own (addition, multiplication, the timescale halving that avoids an overflow) uses
/// ``default``; ``CMTimeConvertScale(_:timescale:method:)`` takes the method you choose.
///
/// Value type; safe to use from any thread.
public enum CMTimeRoundingMethod: UInt32, Sendable, Hashable, CaseIterable {
    /// Rounds toward zero when the discarded fraction is below one half, away from zero when it is one half or
    /// more. The corresponding C constant is `kCMTimeRoundingMethod_RoundHalfAwayFromZero`.
    case roundHalfAwayFromZero = 1
    /// Rounds toward zero whenever there is a fraction (truncation).
    /// The corresponding C constant is `kCMTimeRoundingMethod_RoundTowardZero`.
    case roundTowardZero = 2
    /// Rounds away from zero whenever there is a fraction.
    /// The corresponding C constant is `kCMTimeRoundingMethod_RoundAwayFromZero`.
    case roundAwayFromZero = 3
    /// QuickTime's rule: ``roundTowardZero`` when converting to a smaller timescale (less precision),
    /// ``roundAwayFromZero`` when converting to a larger one, and never rounding a negative time up to zero:
    /// such a time becomes `-1/newTimescale`. The corresponding C constant is `kCMTimeRoundingMethod_QuickTime`.
    case quickTime = 4
    /// Rounds toward positive infinity (ceiling) whenever there is a fraction.
    /// The corresponding C constant is `kCMTimeRoundingMethod_RoundTowardPositiveInfinity`.
    case roundTowardPositiveInfinity = 5
    /// Rounds toward negative infinity (floor) whenever there is a fraction.
    /// The corresponding C constant is `kCMTimeRoundingMethod_RoundTowardNegativeInfinity`.
    case roundTowardNegativeInfinity = 6

    /// The default rounding method, a synonym for ``roundHalfAwayFromZero``.
    /// The corresponding C constant is `kCMTimeRoundingMethod_Default`.
    public static var `default`: CMTimeRoundingMethod { .roundHalfAwayFromZero }
}
