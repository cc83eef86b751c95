// CMTime arithmetic with Apple's rules: CMTimeAdd, CMTimeSubtract, CMTimeMultiply, CMTimeMultiplyByFloat64,
// CMTimeMultiplyByRatio, CMTimeConvertScale, and the Swift operators over them.
//
// Each public function has an inlinable fast path for the common case (numeric operands, no overflow, for
// addition equal timescales) and falls back to an exact slow path in `CMTime._…`.

// MARK: - Addition and subtraction

/// Returns the sum of two times.
///
/// Apple's rules: equal timescales are kept; otherwise the result's timescale is the least common multiple of
/// the two, or `kCMTimeMaxTimescale` with default rounding when that is larger. If the value overflows, the
/// timescale is halved until it fits (default rounding); if it overflows at timescale 1 the result is ±∞.
/// ``CMTimeFlags/hasBeenRounded`` is set when rounding happened or either operand had it.
/// Invalid + anything is invalid; +∞ + −∞ is invalid; one infinite operand makes the result that infinity; else an
/// indefinite operand makes it indefinite. Numeric operands in different nonzero epochs give invalid; the same
/// nonzero epoch gives epoch 0; epoch 0 (a duration) added to epoch N gives epoch N.
@inlinable
public func CMTimeAdd(_ lhs: CMTime, _ rhs: CMTime) -> CMTime {
    if lhs._isUsable, rhs._isUsable, lhs.timescale == rhs.timescale, lhs.epoch == rhs.epoch {
        let (sum, overflow) = lhs.value.addingReportingOverflow(rhs.value)
        if !overflow, sum != .min {
            let flags = CMTimeFlags(rawValue: (lhs.flags.rawValue | rhs.flags.rawValue) & 0x03)
            return CMTime(value: sum, timescale: lhs.timescale, flags: flags, epoch: 0)
        }
    }
    return CMTime._add(lhs, rhs, subtracting: false)
}

/// Returns `minuend - subtrahend`.
///
/// The same rules as ``CMTimeAdd(_:_:)``, with the infinities signed as in mathematics: +∞ − +∞ and −∞ − −∞ are
/// invalid, +∞ − −∞ is +∞, −∞ − +∞ is −∞, and a numeric or indefinite time minus +∞ is −∞.
@inlinable
public func CMTimeSubtract(_ minuend: CMTime, _ subtrahend: CMTime) -> CMTime {
    if minuend._isUsable, subtrahend._isUsable, minuend.timescale == subtrahend.timescale,
        minuend.epoch == subtrahend.epoch
    {
        let (difference, overflow) = minuend.value.subtractingReportingOverflow(subtrahend.value)
        if !overflow, difference != .min {
            return CMTime(
                value: difference, timescale: minuend.timescale,
                flags: CMTimeFlags(rawValue: (minuend.flags.rawValue | subtrahend.flags.rawValue) & 0x03), epoch: 0)
        }
    }
    return CMTime._add(minuend, subtrahend, subtracting: true)
}

// MARK: - Multiplication

/// Returns `time × multiplier`.
///
/// The result keeps the time's timescale and epoch. If the value overflows, the timescale is halved until it fits
/// (default rounding, ``CMTimeFlags/hasBeenRounded`` set); if it overflows at timescale 1 the result is ±∞.
/// Invalid stays invalid and indefinite stays indefinite; an infinity takes the sign of the product of the signs
/// (a zero multiplier keeps it).
@inlinable
public func CMTimeMultiply(_ time: CMTime, multiplier: Int32) -> CMTime {
    if time._isUsable {
        let (product, overflow) = time.value.multipliedReportingOverflow(by: Int64(multiplier))
        if !overflow, product != .min {
            return CMTime(value: product, timescale: time.timescale, flags: time._numericFlags, epoch: time.epoch)
        }
    }
    return CMTime._multiply(time, multiplier: multiplier)
}

/// Returns `time × multiplier` for a floating-point multiplier.
///
/// Apple's rules: the result starts at the time's timescale, doubled until it is at least 65536, and halved
/// while the value overflows; the value is rounded with the default method from the exact product of the
/// time and the `Double`'s binary value. A NaN multiplier gives invalid, an infinite one ±∞ (invalid for a zero
/// time); infinite and indefinite times behave as in ``CMTimeMultiply(_:multiplier:)``.
public func CMTimeMultiplyByFloat64(_ time: CMTime, multiplier: Float64) -> CMTime {
    CMTime._multiply(time, byFloat64: multiplier)
}

/// Returns `time × multiplier / divisor`, exactly when the result can be represented.
///
/// The exact value keeps the time's timescale when `divisor` divides `value × multiplier`, and otherwise the
/// smallest multiple of it that holds the fraction (fully reduced if even that is too large). When the exact value
/// does not fit, the timescale is the largest one not above `kCMTimeMaxTimescale` at which the value fits, with
/// default rounding and ``CMTimeFlags/hasBeenRounded``; if none fits the result is ±∞.
/// A zero divisor gives invalid when the multiplier or the time is zero, and ±∞ otherwise.
public func CMTimeMultiplyByRatio(_ time: CMTime, multiplier: Int32, divisor: Int32) -> CMTime {
    CMTime._multiply(time, ratioMultiplier: multiplier, divisor: divisor)
}

// MARK: - Converting timescales

/// Returns `time` expressed in `newTimescale`, rounded by `method`.
///
/// ``CMTimeFlags/hasBeenRounded`` is set when the value had to be rounded (and kept when the time had it). Non-numeric
/// times are returned unchanged. A non-positive `newTimescale` gives ``CMTime/invalid``; a value that does not fit
/// in `Int64` at `newTimescale` gives ±∞. The epoch is kept.
@inlinable
public func CMTimeConvertScale(_ time: CMTime, timescale newTimescale: Int32, method: CMTimeRoundingMethod) -> CMTime {
    if time._isUsable, newTimescale > 0 {
        if time.timescale == newTimescale { return time }
        let (scaled, overflow) = time.value.multipliedReportingOverflow(by: Int64(newTimescale))
        if !overflow, method != .quickTime {
            let oldScale = Int64(time.timescale)
            let (truncated, remainder) = scaled.quotientAndRemainder(dividingBy: oldScale)
            var quotient = truncated
            var flags = time._numericFlags
            if remainder != 0 {
                flags.insert(.hasBeenRounded)
                let negative = scaled < 0
                if _CMTimeMath.roundsAway(
                    method, negative: negative, remainder: UInt128(remainder.magnitude), divisor: UInt128(oldScale))
                {
                    quotient += negative ? -1 : 1
                }
            }
            if quotient != .min {
                return CMTime(value: quotient, timescale: newTimescale, flags: flags, epoch: time.epoch)
            }
        }
    }
    return CMTime._convertScale(time, timescale: newTimescale, method: method)
}

// MARK: - Operators

extension CMTime {
    /// The sum of two times; see ``CMTimeAdd(_:_:)``.
    @inlinable
    public static func + (addend1: CMTime, addend2: CMTime) -> CMTime { CMTimeAdd(addend1, addend2) }

    /// The difference of two times; see ``CMTimeSubtract(_:_:)``.
    @inlinable
    public static func - (minuend: CMTime, subtrahend: CMTime) -> CMTime { CMTimeSubtract(minuend, subtrahend) }

    /// Adds `rhs` to `lhs`; see ``CMTimeAdd(_:_:)``.
    @inlinable
    public static func += (lhs: inout CMTime, rhs: CMTime) { lhs = CMTimeAdd(lhs, rhs) }

    /// Subtracts `rhs` from `lhs`; see ``CMTimeSubtract(_:_:)``.
    @inlinable
    public static func -= (lhs: inout CMTime, rhs: CMTime) { lhs = CMTimeSubtract(lhs, rhs) }

    /// The product of a time and an integer; see ``CMTimeMultiply(_:multiplier:)``.
    @inlinable
    public static func * (time: CMTime, multiplier: Int32) -> CMTime { CMTimeMultiply(time, multiplier: multiplier) }

    /// The product of an integer and a time; see ``CMTimeMultiply(_:multiplier:)``.
    @inlinable
    public static func * (multiplier: Int32, time: CMTime) -> CMTime { CMTimeMultiply(time, multiplier: multiplier) }

    /// The product of a time and a `Double`; see ``CMTimeMultiplyByFloat64(_:multiplier:)``.
    @inlinable
    public static func * (time: CMTime, multiplier: Float64) -> CMTime {
        CMTimeMultiplyByFloat64(time, multiplier: multiplier)
    }

    /// The product of a `Double` and a time; see ``CMTimeMultiplyByFloat64(_:multiplier:)``.
    @inlinable
    public static func * (multiplier: Float64, time: CMTime) -> CMTime {
        CMTimeMultiplyByFloat64(time, multiplier: multiplier)
    }

    /// Multiplies `time` by an integer; see ``CMTimeMultiply(_:multiplier:)``.
    @inlinable
    public static func *= (time: inout CMTime, multiplier: Int32) {
        time = CMTimeMultiply(time, multiplier: multiplier)
    }

    /// Multiplies `time` by a `Double`; see ``CMTimeMultiplyByFloat64(_:multiplier:)``.
    @inlinable
    public static func *= (time: inout CMTime, multiplier: Float64) {
        time = CMTimeMultiplyByFloat64(time, multiplier: multiplier)
    }

    /// The negated time: a numeric time's value changes sign (exactly; `Int64.min` is handled as an overflow),
    /// +∞ and −∞ swap, and invalid and indefinite times are returned unchanged.
    @inlinable
    public static prefix func - (time: CMTime) -> CMTime {
        if time._isUsable {
            if time.value != .min {
                return CMTime(
                    value: -time.value, timescale: time.timescale, flags: time._numericFlags, epoch: time.epoch)
            }
            return _CMTimeMath.fit(
                _CMWideInt(-Int128(time.value)), over: UInt128(time.timescale), timescale: time.timescale,
                epoch: time.epoch, rounded: time.flags.contains(.hasBeenRounded))
        }
        switch time._rank {
        case 0: return .positiveInfinity
        case 3: return .negativeInfinity
        default: return time
        }
    }
}

// MARK: - Slow paths

extension CMTime {
    /// The sign of an infinite time (rank 0 or 3): -1 or 1.
    @inlinable
    internal static func _infinitySign(_ rank: Int) -> Int { rank == 0 ? -1 : 1 }

    @inlinable
    internal static func _infinity(sign: Int) -> CMTime { sign < 0 ? .negativeInfinity : .positiveInfinity }

    /// `lhs ± rhs` for every case the fast path does not take.
    @usableFromInline
    internal static func _add(_ lhs: CMTime, _ rhs: CMTime, subtracting: Bool) -> CMTime {
        let lhsRank = lhs._rank
        let rhsRank = rhs._rank
        if lhsRank == 4 || rhsRank == 4 { return .invalid }
        let lhsInfinite = lhsRank == 0 || lhsRank == 3
        let rhsInfinite = rhsRank == 0 || rhsRank == 3
        if lhsInfinite || rhsInfinite {
            let lhsSign = lhsInfinite ? _infinitySign(lhsRank) : 0
            let rhsSign = rhsInfinite ? _infinitySign(rhsRank) * (subtracting ? -1 : 1) : 0
            if lhsInfinite && rhsInfinite { return lhsSign == rhsSign ? _infinity(sign: lhsSign) : .invalid }
            return _infinity(sign: lhsInfinite ? lhsSign : rhsSign)
        }
        if lhsRank == 2 || rhsRank == 2 { return .indefinite }

        let epoch: CMTimeEpoch
        if lhs.epoch == rhs.epoch {
            epoch = 0
        } else if lhs.epoch != 0 && rhs.epoch != 0 {
            return .invalid
        } else {
            epoch = lhs.epoch != 0 ? lhs.epoch : rhs.epoch
        }
        let rounded = lhs.flags.contains(.hasBeenRounded) || rhs.flags.contains(.hasBeenRounded)
        let lhsScale = Int64(lhs.timescale)
        let rhsScale = Int64(rhs.timescale)
        let common = lhsScale / Int64(_CMTimeMath.gcd(UInt64(lhsScale), UInt64(rhsScale))) * rhsScale
        let rhsValue = subtracting ? -Int128(rhs.value) : Int128(rhs.value)
        if common <= Int64(kCMTimeMaxTimescale) {
            let numerator = Int128(lhs.value) * Int128(common / lhsScale) + rhsValue * Int128(common / rhsScale)
            return _CMTimeMath.fit(
                _CMWideInt(numerator), over: UInt128(common), timescale: Int32(common), epoch: epoch, rounded: rounded)
        }
        let numerator = Int128(lhs.value) * Int128(rhsScale) + rhsValue * Int128(lhsScale)
        return _CMTimeMath.fit(
            _CMWideInt(numerator), over: UInt128(lhsScale) * UInt128(rhsScale), timescale: Int32.max, epoch: epoch,
            rounded: rounded)
    }

    /// `time × multiplier` for every case the fast path does not take.
    @usableFromInline
    internal static func _multiply(_ time: CMTime, multiplier: Int32) -> CMTime {
        switch time._rank {
        case 1:
            return _CMTimeMath.fit(
                _CMWideInt(Int128(time.value) * Int128(multiplier)), over: UInt128(time.timescale),
                timescale: time.timescale, epoch: time.epoch, rounded: time.flags.contains(.hasBeenRounded))
        case 0, 3: return _infinity(sign: _infinitySign(time._rank) * (multiplier < 0 ? -1 : 1))
        case 2: return .indefinite
        default: return .invalid
        }
    }

    /// `time × multiplier` for a `Double` multiplier.
    @usableFromInline
    internal static func _multiply(_ time: CMTime, byFloat64 multiplier: Double) -> CMTime {
        let rank = time._rank
        if rank == 4 || multiplier.isNaN { return .invalid }
        if rank == 2 { return .indefinite }
        let multiplierSign = multiplier.sign == .minus && multiplier != 0 ? -1 : 1
        if rank != 1 { return _infinity(sign: _infinitySign(rank) * multiplierSign) }
        if multiplier.isInfinite {
            return time.value == 0 ? .invalid : _infinity(sign: (time.value < 0 ? -1 : 1) * multiplierSign)
        }
        var rounded = time.flags.contains(.hasBeenRounded)
        var scale = time.timescale
        while scale < 65536 { scale *= 2 }
        if multiplier == 0 || time.value == 0 {
            let flags: CMTimeFlags = rounded ? [.valid, .hasBeenRounded] : .valid
            return CMTime(value: 0, timescale: scale, flags: flags, epoch: time.epoch)
        }
        // multiplier = ±mantissa × 2^exponent exactly; the result is value × mantissa × 2^exponent / timescale.
        let magnitude = multiplier.magnitude
        var mantissa: UInt128
        var exponent: Int
        if magnitude.isNormal {
            mantissa = UInt128(magnitude.significandBitPattern | (1 << 52))
            exponent = Int(magnitude.exponent) - 52
        } else {
            mantissa = UInt128(magnitude.significandBitPattern)
            exponent = -1074
        }
        let zeros = mantissa.trailingZeroBitCount
        mantissa >>= zeros
        exponent += zeros
        var denominator = UInt128(time.timescale)
        if exponent >= 0 {
            // mantissa × 2^exponent ≥ 2^(exponent): beyond 2^95 every product overflows Int64 even at timescale 1.
            guard exponent <= 95 else { return _infinity(sign: (time.value < 0 ? -1 : 1) * multiplierSign) }
            guard let shifted = _CMWideInt(Int128(time.value)).multiplied(by: mantissa)?
                .multiplied(by: UInt128(1) << exponent)
            else { return _infinity(sign: (time.value < 0 ? -1 : 1) * multiplierSign) }
            var numerator = shifted
            if multiplierSign < 0 { numerator.negative.toggle() }
            return _CMTimeMath.fit(numerator, over: denominator, timescale: scale, epoch: time.epoch, rounded: rounded)
        }
        var shift = -exponent
        if shift > 96 {
            // The multiplier is below 2^-43: keep its top bits only (the denominator must fit in 128 bits).
            let excess = shift - 96
            let kept = excess >= 128 ? 0 : mantissa >> excess
            let dropped = excess >= 128 ? mantissa : mantissa & ((UInt128(1) << excess) - 1)
            mantissa = kept + (excess < 128 && dropped >= (UInt128(1) << (excess - 1)) ? 1 : 0)
            if dropped != 0 { rounded = true }
            shift = 96
            if mantissa == 0 {
                return CMTime(value: 0, timescale: scale, flags: [.valid, .hasBeenRounded], epoch: time.epoch)
            }
        }
        denominator <<= shift
        var numerator = _CMWideInt(Int128(time.value) * Int128(mantissa))
        if multiplierSign < 0 { numerator.negative.toggle() }
        return _CMTimeMath.fit(numerator, over: denominator, timescale: scale, epoch: time.epoch, rounded: rounded)
    }

    /// `time × multiplier / divisor`.
    @usableFromInline
    internal static func _multiply(_ time: CMTime, ratioMultiplier multiplier: Int32, divisor: Int32) -> CMTime {
        let rank = time._rank
        if rank == 4 { return .invalid }
        if rank == 2 { return .indefinite }
        let multiplierSign = multiplier < 0 ? -1 : 1
        if divisor == 0 {
            if multiplier == 0 || (rank == 1 && time.value == 0) { return .invalid }
            let timeSign = rank == 1 ? (time.value < 0 ? -1 : 1) : _infinitySign(rank)
            return _infinity(sign: timeSign * multiplierSign)
        }
        let divisorSign = divisor < 0 ? -1 : 1
        if rank != 1 { return _infinity(sign: _infinitySign(rank) * multiplierSign * divisorSign) }

        let rounded = time.flags.contains(.hasBeenRounded)
        var numerator = Int128(time.value) * Int128(multiplier)
        if divisor < 0 { numerator = -numerator }
        let divisorMagnitude = UInt64(divisor.magnitude)
        // Keep the time's timescale when possible: divide out what the divisor shares with the numerator.
        let residue = UInt64(truncatingIfNeeded: numerator.magnitude % UInt128(divisorMagnitude))
        let shared = _CMTimeMath.gcd(residue, divisorMagnitude)
        let scaleFactor = Int64(divisorMagnitude / shared)
        let scale = Int64(time.timescale) * scaleFactor
        let value = numerator / Int128(shared)
        if scale <= Int64(Int32.max), value.magnitude <= UInt128(Int64.max) {
            let flags: CMTimeFlags = rounded ? [.valid, .hasBeenRounded] : .valid
            return CMTime(value: Int64(value), timescale: Int32(scale), flags: flags, epoch: time.epoch)
        }
        return _CMTimeMath.bestFit(
            numerator, over: UInt128(time.timescale) * UInt128(divisorMagnitude), epoch: time.epoch, rounded: rounded)
    }

    /// `time` in `newTimescale`, for every case the fast path does not take.
    @usableFromInline
    internal static func _convertScale(_ time: CMTime, timescale newTimescale: Int32, method: CMTimeRoundingMethod)
        -> CMTime
    {
        guard time._isUsable else { return time._rank == 4 && time.isValid ? .invalid : time }
        guard newTimescale > 0 else { return .invalid }
        if time.timescale == newTimescale { return time }
        var effective = method
        if method == .quickTime {
            effective = newTimescale < time.timescale ? .roundTowardZero : .roundAwayFromZero
        }
        let numerator = _CMWideInt(Int128(time.value) * Int128(newTimescale))
        guard let (rounded, inexact) = _CMTimeMath.divide(numerator, by: UInt128(time.timescale), method: effective)
        else { return time.value < 0 ? .negativeInfinity : .positiveInfinity }
        // QuickTime never rounds a negative time up to zero: it becomes -1/newTimescale.
        let value = method == .quickTime && inexact && rounded == 0 && time.value < 0 ? -1 : rounded
        var flags = time._numericFlags
        if inexact { flags.insert(.hasBeenRounded) }
        return CMTime(value: value, timescale: newTimescale, flags: flags, epoch: time.epoch)
    }
}
