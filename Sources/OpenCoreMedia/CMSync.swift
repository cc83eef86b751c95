// Converting times between clocks (CMSync.h). We have no CMTimebase yet, so every "clock or timebase" is a clock.

/// A clock or a timebase, as Apple's `CMSync` functions accept. OpenCoreMedia has no `CMTimebase` yet, so this is
/// ``CMClock``; the functions taking it keep Apple's spelling.
public typealias CMClockOrTimebase = CMClock

/// Returns the current time of a clock or timebase; the same as ``CMClockGetTime(_:)``.
public func CMSyncGetTime(_ clockOrTimebase: CMClockOrTimebase) -> CMTime {
    CMClockGetTime(clockOrTimebase)
}

/// Converts `time` read on one clock to the time another clock read at the same instant.
///
/// Both clocks are affine functions of host time, so the conversion composes the first one's inverse with the
/// second, exactly, in 256-bit arithmetic, and rounds once, half away from zero, to the target clock's nanosecond
/// (setting ``CMTimeFlags/hasBeenRounded`` when inexact, and keeping it when `time` had it). Converting to the same
/// clock returns `time` unchanged; non-numeric times are returned unchanged; the epoch is kept. A result beyond
/// `Int64` nanoseconds is ±∞. To convert to or from host time, pass ``CMClockGetHostTimeClock()``.
public func CMSyncConvertTime(_ time: CMTime, from fromClockOrTimebase: CMClockOrTimebase, to toClockOrTimebase:
    CMClockOrTimebase) -> CMTime
{
    if fromClockOrTimebase === toClockOrTimebase { return time }
    guard time._isUsable else { return time._rank == 4 && time.isValid ? .invalid : time }
    let from = fromClockOrTimebase.affineMap
    let to = toClockOrTimebase.affineMap
    // With h the host time: t = aC + (h - aH) × nA / dA and result = bC + (h - bH) × nB / dB, all in ns, so
    // result = bC + [(aH - bH) × nB × ts × nA + (v × 10^9 - aC × ts) × dA × nB] / (dB × ts × nA), t = v / ts s.
    let scale = Int128(time.timescale)
    let nA = Int128(from.rateMultiplier)
    let dA = Int128(from.rateDivisor)
    let nB = Int128(to.rateMultiplier)
    let dB = Int128(to.rateDivisor)
    let anchorDifference = Int128(from.anchorHostNanoseconds) - Int128(to.anchorHostNanoseconds)
    let offset = Int128(time.value) * 1_000_000_000 - Int128(from.anchorClockNanoseconds) * scale
    let sign = offset < 0 ? -1 : (offset > 0 ? 1 : (anchorDifference < 0 ? -1 : 1))
    guard let term1 = _CMWideInt(anchorDifference * nB).multiplied(by: scale * nA),
        let term2 = _CMWideInt(offset).multiplied(by: dA * nB),
        let numerator = _CMWideInt.adding(term1, term2),
        let (quotient, inexact) = _CMTimeMath.divide(
            numerator, by: UInt128(dB) * UInt128(scale) * UInt128(nA), method: .default)
    else { return sign < 0 ? .negativeInfinity : .positiveInfinity }
    let (value, overflow) = quotient.addingReportingOverflow(to.anchorClockNanoseconds)
    if overflow { return quotient < 0 ? .negativeInfinity : .positiveInfinity }
    var flags = time._numericFlags
    if inexact { flags.insert(.hasBeenRounded) }
    return CMTime(value: value, timescale: CMClock.nanosecondsPerSecond, flags: flags, epoch: time.epoch)
}
