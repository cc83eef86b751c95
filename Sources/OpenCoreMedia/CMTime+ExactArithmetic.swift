// Exact rational arithmetic behind CMTime: 256-bit intermediates, one rounding per result.
//
// Every CMTime result is computed as an exact fraction `numerator / denominator` seconds and rounded once, at the
// end, into the chosen timescale. Numerators reach 2^160 in the worst case (a clock conversion multiplies a 95-bit
// difference by two 31-bit rates), so they are kept as a sign and a 256-bit magnitude built from two `UInt128`
// halves; denominators always fit in `UInt128`.

/// A signed 256-bit integer in sign-magnitude form: just enough arithmetic for CMTime's exact paths.
@usableFromInline
internal struct _CMWideInt: Sendable {
    @usableFromInline internal var negative: Bool
    @usableFromInline internal var high: UInt128
    @usableFromInline internal var low: UInt128

    @usableFromInline
    internal init(negative: Bool, high: UInt128, low: UInt128) {
        self.negative = negative && (high != 0 || low != 0)
        self.high = high
        self.low = low
    }

    @usableFromInline
    internal init(_ value: Int128) {
        self.init(negative: value < 0, high: 0, low: value.magnitude)
    }

    @usableFromInline
    internal var isZero: Bool { high == 0 && low == 0 }

    /// `self × factor`, or nil when the product needs more than 256 bits.
    @usableFromInline
    internal func multiplied(by factor: UInt128) -> _CMWideInt? {
        let lowProduct = low.multipliedFullWidth(by: factor)
        let highProduct = high.multipliedFullWidth(by: factor)
        guard highProduct.high == 0 else { return nil }
        let (newHigh, overflow) = highProduct.low.addingReportingOverflow(lowProduct.high)
        guard !overflow else { return nil }
        return _CMWideInt(negative: negative, high: newHigh, low: lowProduct.low)
    }

    /// `self × factor`, or nil when the product needs more than 256 bits.
    @usableFromInline
    internal func multiplied(by factor: Int128) -> _CMWideInt? {
        guard var product = multiplied(by: factor.magnitude) else { return nil }
        product.negative = product.isZero ? false : (negative != (factor < 0))
        return product
    }

    /// `lhs + rhs`, or nil when the sum needs more than 256 bits.
    @usableFromInline
    internal static func adding(_ lhs: _CMWideInt, _ rhs: _CMWideInt) -> _CMWideInt? {
        if lhs.negative == rhs.negative {
            let (low, carry) = lhs.low.addingReportingOverflow(rhs.low)
            let (high1, overflow1) = lhs.high.addingReportingOverflow(rhs.high)
            let (high, overflow2) = high1.addingReportingOverflow(carry ? 1 : 0)
            guard !overflow1, !overflow2 else { return nil }
            return _CMWideInt(negative: lhs.negative, high: high, low: low)
        }
        // Opposite signs: subtract the smaller magnitude from the larger; the result takes the larger one's sign.
        let lhsIsLarger = lhs.high > rhs.high || (lhs.high == rhs.high && lhs.low >= rhs.low)
        let (big, small) = lhsIsLarger ? (lhs, rhs) : (rhs, lhs)
        let (low, borrow) = big.low.subtractingReportingOverflow(small.low)
        let high = big.high - small.high - (borrow ? 1 : 0)
        return _CMWideInt(negative: big.negative, high: high, low: low)
    }
}

/// The arithmetic core shared by every CMTime operation that cannot take an Int64 fast path.
@usableFromInline
internal enum _CMTimeMath {
    /// Binary GCD; `gcd(0, b) == b`.
    @inlinable
    internal static func gcd(_ a: UInt64, _ b: UInt64) -> UInt64 {
        var a = a
        var b = b
        if a == 0 { return b }
        if b == 0 { return a }
        let shift = (a | b).trailingZeroBitCount
        a >>= a.trailingZeroBitCount
        repeat {
            b >>= b.trailingZeroBitCount
            if a > b { swap(&a, &b) }
            b -= a
        } while b != 0
        return a << shift
    }

    /// GCD of two 128-bit magnitudes (Euclid; only on slow paths).
    @usableFromInline
    internal static func gcd(_ a: UInt128, _ b: UInt128) -> UInt128 {
        var a = a
        var b = b
        while b != 0 { (a, b) = (b, a % b) }
        return a
    }

    /// Whether a truncated quotient must move one unit away from zero under `method`.
    ///
    /// `remainder` is the magnitude of the discarded remainder (nonzero) and `divisor` the positive divisor.
    /// ``CMTimeRoundingMethod/quickTime`` must be resolved by the caller, which knows the timescale direction.
    @inlinable
    internal static func roundsAway(
        _ method: CMTimeRoundingMethod, negative: Bool, remainder: UInt128, divisor: UInt128
    ) -> Bool {
        switch method {
        case .roundHalfAwayFromZero, .quickTime: return remainder >= divisor - remainder
        case .roundTowardZero: return false
        case .roundAwayFromZero: return true
        case .roundTowardPositiveInfinity: return !negative
        case .roundTowardNegativeInfinity: return negative
        }
    }

    /// `numerator / divisor` rounded by `method`, or nil when the result's magnitude exceeds `Int64.max`.
    @usableFromInline
    internal static func divide(
        _ numerator: _CMWideInt, by divisor: UInt128, method: CMTimeRoundingMethod
    ) -> (value: Int64, inexact: Bool)? {
        guard numerator.high < divisor else { return nil }
        let (quotient, remainder) = divisor.dividingFullWidth((numerator.high, numerator.low))
        var magnitude = quotient
        if remainder != 0,
            roundsAway(method, negative: numerator.negative, remainder: remainder, divisor: divisor)
        {
            let (next, overflow) = magnitude.addingReportingOverflow(1)
            guard !overflow else { return nil }
            magnitude = next
        }
        guard magnitude <= UInt128(Int64.max) else { return nil }
        let value = Int64(magnitude)
        return (numerator.negative ? -value : value, remainder != 0)
    }

    /// The time nearest to `numerator / denominator` seconds, at `timescale` or, when the value overflows there,
    /// at the timescale halved as often as needed (Apple's rule for CMTimeAdd, CMTimeMultiply and friends).
    ///
    /// Each candidate timescale is rounded from the exact fraction with the default method. When even
    /// timescale 1 overflows, the result is the infinity of the numerator's sign.
    @usableFromInline
    internal static func fit(
        _ numerator: _CMWideInt, over denominator: UInt128, timescale: Int32, epoch: CMTimeEpoch, rounded: Bool
    ) -> CMTime {
        var scale = timescale
        while true {
            if let scaled = numerator.multiplied(by: UInt128(scale)),
                let (value, inexact) = divide(scaled, by: denominator, method: .default)
            {
                let flags: CMTimeFlags = rounded || inexact ? [.valid, .hasBeenRounded] : .valid
                return CMTime(value: value, timescale: scale, flags: flags, epoch: epoch)
            }
            if scale <= 1 { return numerator.negative ? .negativeInfinity : .positiveInfinity }
            scale /= 2
        }
    }

    /// The exact value `numerator / denominator` as a CMTime when it fits without rounding, else the time whose
    /// timescale is the largest one not above `kCMTimeMaxTimescale` at which the value fits (Apple: "a new
    /// timescale will be chosen so as to minimize the rounding error"). Used by CMTimeMultiplyByRatio.
    @usableFromInline
    internal static func bestFit(
        _ numerator: Int128, over denominator: UInt128, epoch: CMTimeEpoch, rounded: Bool
    ) -> CMTime {
        let flagsExact: CMTimeFlags = rounded ? [.valid, .hasBeenRounded] : .valid
        if numerator == 0 { return CMTime(value: 0, timescale: 1, flags: flagsExact, epoch: epoch) }
        let divisor = gcd(numerator.magnitude, denominator)
        let reducedNumerator = numerator.magnitude / divisor
        let reducedDenominator = denominator / divisor
        if reducedNumerator <= UInt128(Int64.max), reducedDenominator <= UInt128(Int32.max) {
            let value = Int64(reducedNumerator)
            return CMTime(
                value: numerator < 0 ? -value : value, timescale: Int32(reducedDenominator), flags: flagsExact,
                epoch: epoch)
        }
        // The largest timescale T with |numerator| × T / denominator ≤ Int64.max, capped at kCMTimeMaxTimescale.
        let wide = _CMWideInt(numerator)
        var scale = Int32.max
        let limit = _CMWideInt(Int128(Int64.max)).multiplied(by: denominator)!
        if let cap = divide(limit, by: numerator.magnitude, method: .roundTowardZero), cap.value < Int64(Int32.max) {
            scale = Int32(cap.value)
        }
        while scale >= 1 {
            if let scaled = wide.multiplied(by: UInt128(scale)),
                let (value, inexact) = divide(scaled, by: denominator, method: .default)
            {
                let flags: CMTimeFlags = rounded || inexact ? [.valid, .hasBeenRounded] : .valid
                return CMTime(value: value, timescale: scale, flags: flags, epoch: epoch)
            }
            scale -= 1  // Rounding pushed the value over Int64.max at the cap; one step down always fits.
        }
        return numerator < 0 ? .negativeInfinity : .positiveInfinity
    }
}
