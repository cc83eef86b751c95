// CMTime: a rational time value, with Apple's fields, constants, comparisons and description (CMTime.h).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The numerator of a ``CMTime``: a count of `1/timescale` second units.
public typealias CMTimeValue = Int64

/// The denominator of a ``CMTime``: units per second. Timescales must be positive.
public typealias CMTimeScale = Int32

/// Distinguishes otherwise-equal timestamps on unrelated timelines, such as successive passes of a loop.
public typealias CMTimeEpoch = Int64

/// The largest timescale a result may be given, Apple's `kCMTimeMaxTimescale` (`0x7fffffff`, `Int32.max`).
///
/// When the least common multiple of two operands' timescales exceeds it, addition and subtraction round their
/// result into this timescale.
public var kCMTimeMaxTimescale: Int { 0x7fff_ffff }

/// The flag bits of a ``CMTime``.
///
/// The raw values are Apple's (`kCMTimeFlags_…` in `CMTime.h`). A time without ``valid`` is invalid whatever
/// else is set; the "implied value" flags (``positiveInfinity``, ``negativeInfinity``, ``indefinite``) make the
/// value, timescale and epoch irrelevant.
///
/// Value type; safe to use from any thread.
public struct CMTimeFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32

    @inlinable
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Must be set, or the time is invalid. The corresponding C constant is `kCMTimeFlags_Valid`.
    public static let valid = CMTimeFlags(rawValue: 1 << 0)
    /// Set when the time was rounded, or derived from a rounded time.
    /// The corresponding C constant is `kCMTimeFlags_HasBeenRounded`.
    public static let hasBeenRounded = CMTimeFlags(rawValue: 1 << 1)
    /// The time is +∞. The corresponding C constant is `kCMTimeFlags_PositiveInfinity`.
    public static let positiveInfinity = CMTimeFlags(rawValue: 1 << 2)
    /// The time is −∞. The corresponding C constant is `kCMTimeFlags_NegativeInfinity`.
    public static let negativeInfinity = CMTimeFlags(rawValue: 1 << 3)
    /// The time is unknown, such as the duration of a live broadcast.
    /// The corresponding C constant is `kCMTimeFlags_Indefinite`.
    public static let indefinite = CMTimeFlags(rawValue: 1 << 4)
    /// The three "implied value" flags together. The corresponding C constant is
    /// `kCMTimeFlags_ImpliedValueFlagsMask`.
    public static let impliedValueFlagsMask: CMTimeFlags = [.positiveInfinity, .negativeInfinity, .indefinite]
}

/// A time or a duration, as the rational number `value / timescale` seconds.
///
/// `CMTime(value: 1, timescale: 30)` is one frame at 30 frames per second. Besides numeric times a `CMTime` can be
/// ``invalid``, ``indefinite``, ``positiveInfinity`` or ``negativeInfinity``, recorded in ``flags``.
///
/// Arithmetic is exact: a result is rounded only when the exact fraction cannot be held in an `Int64` value and an
/// `Int32` timescale, and then ``CMTimeFlags/hasBeenRounded`` is set; an overflow that survives rounding gives an
/// infinity, never a wrapped value. Equality, ordering and hashing follow ``CMTimeCompare(_:_:)``, so
/// `CMTime(value: 1, timescale: 2) == CMTime(value: 2, timescale: 4)`. The exact rules, and which of them Apple
/// documents, are in <doc:CMTimeSemantics>. No operation allocates.
///
/// Value type; safe to use from any thread.
public struct CMTime: Sendable {
    /// The numerator: `value / timescale` is the time in seconds.
    public var value: CMTimeValue
    /// The denominator: `value / timescale` is the time in seconds.
    public var timescale: CMTimeScale
    /// Validity, rounding and the non-numeric kinds of time.
    public var flags: CMTimeFlags
    /// The timeline the time belongs to; greater epochs come later. Durations have epoch 0.
    public var epoch: CMTimeEpoch

    /// Creates a time from all four fields, stored as given.
    @inlinable
    public init(value: CMTimeValue, timescale: CMTimeScale, flags: CMTimeFlags, epoch: CMTimeEpoch) {
        self.value = value
        self.timescale = timescale
        self.flags = flags
        self.epoch = epoch
    }

    /// Creates an invalid time with every field zero, like Apple's zero-initialized struct.
    @inlinable
    public init() {
        self.init(value: 0, timescale: 0, flags: [], epoch: 0)
    }

    /// Creates a valid time of `value / timescale` seconds in epoch 0; the same as
    /// ``CMTimeMake(value:timescale:)``.
    ///
    /// The fields are stored as given; a non-positive timescale makes a time that every operation treats as invalid.
    @inlinable
    public init(value: CMTimeValue, timescale: CMTimeScale) {
        self.init(value: value, timescale: timescale, flags: .valid, epoch: 0)
    }

    /// Creates the time nearest to `seconds` in `preferredTimescale`; the same as
    /// ``CMTimeMakeWithSeconds(_:preferredTimescale:)``.
    @inlinable
    public init(seconds: Double, preferredTimescale: CMTimeScale) {
        self = CMTimeMakeWithSeconds(seconds, preferredTimescale: preferredTimescale)
    }

    /// An invalid time, all fields zero. Test with ``isValid``, not with `==`.
    public static let invalid = CMTime()
    /// An indefinite (unknown) time. Test with ``isIndefinite``.
    public static let indefinite = CMTime(value: 0, timescale: 0, flags: [.valid, .indefinite], epoch: 0)
    /// +∞. Test with ``isPositiveInfinity``.
    public static let positiveInfinity = CMTime(value: 0, timescale: 0, flags: [.valid, .positiveInfinity], epoch: 0)
    /// −∞. Test with ``isNegativeInfinity``.
    public static let negativeInfinity = CMTime(value: 0, timescale: 0, flags: [.valid, .negativeInfinity], epoch: 0)
    /// Zero seconds, `0/1`. Every numeric zero compares equal to it.
    public static let zero = CMTime(value: 0, timescale: 1)

    /// Whether ``CMTimeFlags/valid`` is set (Apple's `CMTIME_IS_VALID`).
    @inlinable public var isValid: Bool { flags.contains(.valid) }
    /// Whether the time is valid and +∞ (Apple's `CMTIME_IS_POSITIVEINFINITY`).
    @inlinable public var isPositiveInfinity: Bool { flags.isSuperset(of: [.valid, .positiveInfinity]) }
    /// Whether the time is valid and −∞ (Apple's `CMTIME_IS_NEGATIVEINFINITY`).
    @inlinable public var isNegativeInfinity: Bool { flags.isSuperset(of: [.valid, .negativeInfinity]) }
    /// Whether the time is valid and indefinite (Apple's `CMTIME_IS_INDEFINITE`).
    @inlinable public var isIndefinite: Bool { flags.isSuperset(of: [.valid, .indefinite]) }
    /// Whether the time is valid and none of the implied-value flags is set (Apple's `CMTIME_IS_NUMERIC`).
    @inlinable public var isNumeric: Bool { flags.rawValue & 0x1D == 0x01 }
    /// Whether the time is numeric and has been rounded (Apple's `CMTIME_HAS_BEEN_ROUNDED`).
    @inlinable public var hasBeenRounded: Bool { flags.rawValue & 0x1F == 0x03 }
    /// The time in seconds as a `Double`; see ``CMTimeGetSeconds(_:)``.
    @inlinable public var seconds: Double { CMTimeGetSeconds(self) }

    /// Converts the time to `newTimescale`; see ``CMTimeConvertScale(_:timescale:method:)``.
    @inlinable
    public func convertScale(_ newTimescale: Int32, method: CMTimeRoundingMethod) -> CMTime {
        CMTimeConvertScale(self, timescale: newTimescale, method: method)
    }

    /// The position in ``CMTimeCompare(_:_:)``'s order: −∞ 0, numeric 1, indefinite 2, +∞ 3, invalid 4.
    ///
    /// A valid time with a non-positive timescale counts as invalid. When several implied-value flags are set,
    /// +∞ wins over −∞, which wins over indefinite.
    @inlinable
    internal var _rank: Int {
        let bits = flags.rawValue
        if bits & 0x1D == 0x01 { return timescale > 0 ? 1 : 4 }
        if bits & 0x01 == 0 { return 4 }
        if bits & 0x04 != 0 { return 3 }
        if bits & 0x08 != 0 { return 0 }
        return 2
    }

    /// Whether the time is numeric with a positive timescale: a time arithmetic can use.
    @inlinable
    internal var _isUsable: Bool { flags.rawValue & 0x1D == 0x01 && timescale > 0 }

    /// The ``CMTimeFlags/valid`` and ``CMTimeFlags/hasBeenRounded`` bits of `self`: what a numeric result inherits.
    @inlinable
    internal var _numericFlags: CMTimeFlags { CMTimeFlags(rawValue: flags.rawValue & 0x03) }
}

// MARK: - Creating times

/// Makes a valid time of `value / timescale` seconds in epoch 0.
@inlinable
public func CMTimeMake(value: Int64, timescale: Int32) -> CMTime {
    CMTime(value: value, timescale: timescale)
}

/// Makes a valid time of `value / timescale` seconds in `epoch`.
@inlinable
public func CMTimeMakeWithEpoch(value: Int64, timescale: Int32, epoch: Int64) -> CMTime {
    CMTime(value: value, timescale: timescale, flags: .valid, epoch: epoch)
}

/// Makes the time nearest to `seconds` in `preferredTimescale`, rounding half away from zero.
///
/// The product `seconds × preferredTimescale` is computed exactly from the `Double`'s binary value. A
/// non-positive timescale or a NaN gives ``CMTime/invalid``; ±∞ gives the matching infinity. If the value would
/// overflow, the timescale is halved until it fits; if it overflows even at timescale 1 the result is an infinity.
/// ``CMTimeFlags/hasBeenRounded`` is set when converting the result back to seconds does not give `seconds`.
public func CMTimeMakeWithSeconds(_ seconds: Float64, preferredTimescale: Int32) -> CMTime {
    guard preferredTimescale > 0, !seconds.isNaN else { return .invalid }
    if seconds.isInfinite { return seconds < 0 ? .negativeInfinity : .positiveInfinity }
    if seconds == 0 { return CMTime(value: 0, timescale: preferredTimescale) }
    // seconds = ±mantissa × 2^exponent exactly.
    let magnitude = seconds.magnitude
    let mantissa: UInt128
    let exponent: Int
    if magnitude.isNormal {
        mantissa = UInt128(magnitude.significandBitPattern | (1 << 52))
        exponent = Int(magnitude.exponent) - 52
    } else {
        mantissa = UInt128(magnitude.significandBitPattern)
        exponent = -1074
    }
    var scale = preferredTimescale
    while true {
        let product = mantissa * UInt128(scale)  // < 2^84
        var valueMagnitude: UInt128? = nil
        if exponent >= 0 {
            if exponent < 64, product <= UInt128(Int64.max) >> exponent { valueMagnitude = product << exponent }
        } else if -exponent >= 127 {
            valueMagnitude = 0  // Below 2^-42 of a unit: rounds to zero.
        } else {
            let shift = -exponent
            let truncated = product >> shift
            let remainder = product & ((1 << shift) - 1)
            let rounded = remainder >= (1 << (shift - 1)) ? truncated + 1 : truncated
            if rounded <= UInt128(Int64.max) { valueMagnitude = rounded }
        }
        if let valueMagnitude {
            let value = seconds < 0 ? -Int64(valueMagnitude) : Int64(valueMagnitude)
            var time = CMTime(value: value, timescale: scale)
            if CMTimeGetSeconds(time) != seconds { time.flags.insert(.hasBeenRounded) }
            return time
        }
        if scale == 1 { return seconds < 0 ? .negativeInfinity : .positiveInfinity }
        scale /= 2
    }
}

/// The time in seconds: `Double(value) / Double(timescale)` for a numeric time (the epoch is ignored), ±∞ for the
/// infinities, and NaN for invalid and indefinite times.
@inlinable
public func CMTimeGetSeconds(_ time: CMTime) -> Float64 {
    switch time._rank {
    case 1: return Double(time.value) / Double(time.timescale)
    case 3: return .infinity
    case 0: return -.infinity
    default: return .nan
    }
}

// MARK: - Comparing times

/// Returns -1, 0 or 1 as `time1` is less than, equal to or greater than `time2`.
///
/// Numeric times compare by epoch first, then by exact rational value, across timescales
/// (`1/3` is greater than `333333/1000000`). All values are ordered, as Apple documents:
/// `-infinity < all finite values < indefinite < +infinity < invalid`; all invalid times are equal, as are all
/// +∞, all −∞ and all indefinite times.
@inlinable
public func CMTimeCompare(_ time1: CMTime, _ time2: CMTime) -> Int32 {
    let rank1 = time1._rank
    let rank2 = time2._rank
    if rank1 != rank2 { return rank1 < rank2 ? -1 : 1 }
    guard rank1 == 1 else { return 0 }
    if time1.epoch != time2.epoch { return time1.epoch < time2.epoch ? -1 : 1 }
    if time1.timescale == time2.timescale {
        return time1.value < time2.value ? -1 : (time1.value == time2.value ? 0 : 1)
    }
    let lhs = Int128(time1.value) * Int128(time2.timescale)
    let rhs = Int128(time2.value) * Int128(time1.timescale)
    return lhs < rhs ? -1 : (lhs == rhs ? 0 : 1)
}

/// Returns the lesser of two times by ``CMTimeCompare(_:_:)``; `time1` when they are equal.
@inlinable
public func CMTimeMinimum(_ time1: CMTime, _ time2: CMTime) -> CMTime {
    CMTimeCompare(time1, time2) <= 0 ? time1 : time2
}

/// Returns the greater of two times by ``CMTimeCompare(_:_:)``; `time1` when they are equal.
@inlinable
public func CMTimeMaximum(_ time1: CMTime, _ time2: CMTime) -> CMTime {
    CMTimeCompare(time1, time2) >= 0 ? time1 : time2
}

/// Returns the time with its sign made positive: a negative numeric time is negated and −∞ becomes +∞.
@inlinable
public func CMTimeAbsoluteValue(_ time: CMTime) -> CMTime {
    if time._isUsable { return time.value < 0 ? -time : time }
    return time.isNegativeInfinity ? .positiveInfinity : time
}

extension CMTime: Equatable, Comparable, Hashable {
    /// Whether ``CMTimeCompare(_:_:)`` finds the times equal: `1/2 == 2/4`, and every invalid time equals
    /// ``CMTime/invalid``.
    @inlinable
    public static func == (time1: CMTime, time2: CMTime) -> Bool { CMTimeCompare(time1, time2) == 0 }

    /// Whether ``CMTimeCompare(_:_:)`` finds the times different.
    @inlinable
    public static func != (time1: CMTime, time2: CMTime) -> Bool { CMTimeCompare(time1, time2) != 0 }

    /// Whether `time1` comes before `time2` in ``CMTimeCompare(_:_:)``'s order.
    @inlinable
    public static func < (time1: CMTime, time2: CMTime) -> Bool { CMTimeCompare(time1, time2) < 0 }

    /// Whether `time1` does not come after `time2`.
    @inlinable
    public static func <= (time1: CMTime, time2: CMTime) -> Bool { CMTimeCompare(time1, time2) <= 0 }

    /// Whether `time1` comes after `time2`.
    @inlinable
    public static func > (time1: CMTime, time2: CMTime) -> Bool { CMTimeCompare(time1, time2) > 0 }

    /// Whether `time1` does not come before `time2`.
    @inlinable
    public static func >= (time1: CMTime, time2: CMTime) -> Bool { CMTimeCompare(time1, time2) >= 0 }

    /// Hashes the time consistently with `==`: a numeric time by its epoch and its value as a reduced fraction,
    /// any other time by its kind alone.
    @inlinable
    public func hash(into hasher: inout Hasher) {
        let rank = _rank
        hasher.combine(rank)
        guard rank == 1 else { return }
        hasher.combine(epoch)
        let divisor = _CMTimeMath.gcd(value.magnitude, UInt64(timescale))
        hasher.combine(value / Int64(divisor))
        hasher.combine(Int64(timescale) / Int64(divisor))
    }
}

// MARK: - Describing times

extension CMTime: CustomStringConvertible {
    /// Apple's `CMTimeCopyDescription` form: `{1/30 = 0.033}`, with `, rounded` and `, epoch = N` appended when
    /// they apply, and `{INVALID}`, `{INDEFINITE}`, `{+INFINITY}` or `{-INFINITY}` for the other kinds.
    public var description: String {
        switch _rank {
        case 0: return "{-INFINITY}"
        case 2: return "{INDEFINITE}"
        case 3: return "{+INFINITY}"
        case 4: return "{INVALID}"
        default: break
        }
        // Seconds to three decimals, rounded half away from zero from the exact fraction.
        let thousandths = Int128(value) * 1000
        let scale = Int128(timescale)
        var whole = thousandths / scale
        let remainder = thousandths % scale
        if remainder.magnitude * 2 >= scale.magnitude { whole += thousandths < 0 ? -1 : 1 }
        let magnitude = whole.magnitude
        let fraction = String(magnitude % 1000)
        let padded = String(repeating: "0", count: 3 - fraction.count) + fraction
        var text = "{\(value)/\(timescale) = \(value < 0 ? "-" : "")\(magnitude / 1000).\(padded)"
        if flags.contains(.hasBeenRounded) { text += ", rounded" }
        if epoch != 0 { text += ", epoch = \(epoch)" }
        return text + "}"
    }
}

/// Prints the time's ``CMTime/description`` and a newline to standard error, as Apple's `CFShow` does.
public func CMTimeShow(_ time: CMTime) {
    _writeToStandardError(time.description + "\n")
}

/// Writes `text` to file descriptor 2 with `write(2)`, retrying after EINTR.
internal func _writeToStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = write(2, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}

// MARK: - Apple's CMTIME_* macros

/// Whether the time is valid (Apple's `CMTIME_IS_VALID`).
@inlinable public func CMTIME_IS_VALID(_ time: CMTime) -> Bool { time.isValid }
/// Whether the time is invalid (Apple's `CMTIME_IS_INVALID`).
@inlinable public func CMTIME_IS_INVALID(_ time: CMTime) -> Bool { !time.isValid }
/// Whether the time is +∞ (Apple's `CMTIME_IS_POSITIVEINFINITY`).
@inlinable public func CMTIME_IS_POSITIVEINFINITY(_ time: CMTime) -> Bool { time.isPositiveInfinity }
/// Whether the time is −∞ (Apple's `CMTIME_IS_NEGATIVEINFINITY`).
@inlinable public func CMTIME_IS_NEGATIVEINFINITY(_ time: CMTime) -> Bool { time.isNegativeInfinity }
/// Whether the time is indefinite (Apple's `CMTIME_IS_INDEFINITE`).
@inlinable public func CMTIME_IS_INDEFINITE(_ time: CMTime) -> Bool { time.isIndefinite }
/// Whether the time is numeric (Apple's `CMTIME_IS_NUMERIC`).
@inlinable public func CMTIME_IS_NUMERIC(_ time: CMTime) -> Bool { time.isNumeric }
/// Whether the time is numeric and rounded (Apple's `CMTIME_HAS_BEEN_ROUNDED`).
@inlinable public func CMTIME_HAS_BEEN_ROUNDED(_ time: CMTime) -> Bool { time.hasBeenRounded }
