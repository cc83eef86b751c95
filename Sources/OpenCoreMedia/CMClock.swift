// CMClock: the host time clock (CLOCK_MONOTONIC) and device clocks related to it by an affine map (CMSync.h).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// A source of time: the host time clock, or a device clock that runs at a fixed rate relative to it.
///
/// Host time on Linux is `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds, as `CMTime(value: ns, timescale:
/// 1_000_000_000)`: the clock V4L2 and ALSA stamp their buffers with. (Apple's host clock counts Mach absolute time
/// ticks on Darwin; only the source differs.) It starts at an arbitrary point, usually boot, and never jumps.
///
/// A device clock, such as a microphone whose crystal runs N ppm fast, is made by a driver with
/// ``init(name:rateMultiplier:rateDivisor:anchorHostTime:anchorClockTime:)``:
/// `clockTime = anchorClockTime + (hostTime - anchorHostTime) × rateMultiplier / rateDivisor`. Its ``time`` is
/// that function of the host time now, and ``CMSyncConvertTime(_:from:to:)`` converts between any two clocks
/// through host time exactly, rounding once to the nanosecond.
///
/// Thread safe: a `CMClock` may be read, converted through and re-anchored from any thread concurrently.
public final class CMClock: Sendable {
    /// The affine map from host time to this clock's time, in nanoseconds.
    package struct AffineMap: Sendable, Equatable {
        /// Host time, in nanoseconds, of the anchor point.
        package var anchorHostNanoseconds: Int64
        /// This clock's time, in nanoseconds, at the anchor point.
        package var anchorClockNanoseconds: Int64
        /// Clock nanoseconds per `rateDivisor` host nanoseconds; positive.
        package var rateMultiplier: Int32
        /// Host nanoseconds per `rateMultiplier` clock nanoseconds; positive.
        package var rateDivisor: Int32

        /// Creates a map; both rates must be positive.
        package init(
            anchorHostNanoseconds: Int64, anchorClockNanoseconds: Int64, rateMultiplier: Int32, rateDivisor: Int32
        ) {
            self.anchorHostNanoseconds = anchorHostNanoseconds
            self.anchorClockNanoseconds = anchorClockNanoseconds
            self.rateMultiplier = rateMultiplier
            self.rateDivisor = rateDivisor
        }

        /// The identity map of the host time clock.
        package static let identity = AffineMap(
            anchorHostNanoseconds: 0, anchorClockNanoseconds: 0, rateMultiplier: 1, rateDivisor: 1)
    }

    /// A name for logs and descriptions, such as "host" or the device's name.
    package let name: String
    private let map: Mutex<AffineMap>

    private init(name: String, map: AffineMap) {
        self.name = name
        self.map = Mutex(map)
    }

    /// Creates a device clock related to host time by an affine map.
    ///
    /// `clockTime = anchorClockTime + (hostTime - anchorHostTime) × rateMultiplier / rateDivisor`; a clock 100 ppm
    /// fast has `rateMultiplier: 1_000_100, rateDivisor: 1_000_000`. The anchors are rounded to the nanosecond.
    /// Traps unless both rates are positive and both anchors numeric.
    package init(
        name: String, rateMultiplier: Int32, rateDivisor: Int32, anchorHostTime: CMTime, anchorClockTime: CMTime
    ) {
        self.name = name
        self.map = Mutex(
            CMClock.makeMap(
                rateMultiplier: rateMultiplier, rateDivisor: rateDivisor, anchorHostTime: anchorHostTime,
                anchorClockTime: anchorClockTime))
    }

    /// Creates a device clock that runs `partsPerMillion` ppm fast (negative: slow) relative to host time and reads
    /// `anchorClockTime` at host time `anchorHostTime`.
    package convenience init(name: String, partsPerMillion: Int32, anchorHostTime: CMTime, anchorClockTime: CMTime) {
        precondition(partsPerMillion > -1_000_000, "CMClock: a clock must run forward (partsPerMillion > -1000000)")
        self.init(
            name: name, rateMultiplier: 1_000_000 + partsPerMillion, rateDivisor: 1_000_000,
            anchorHostTime: anchorHostTime, anchorClockTime: anchorClockTime)
    }

    /// Replaces the clock's affine map, as a driver does when it re-estimates a device clock's drift.
    ///
    /// To keep the clock continuous, anchor at the clock's current time:
    /// `reanchor(…, anchorHostTime: now, anchorClockTime: CMSyncConvertTime(now, from: .hostTimeClock, to: clock))`.
    /// Traps on the host time clock, unless both rates are positive, or unless both anchors are numeric.
    package func reanchor(rateMultiplier: Int32, rateDivisor: Int32, anchorHostTime: CMTime, anchorClockTime: CMTime) {
        precondition(self !== CMClock.hostTimeClock, "CMClock: the host time clock cannot be re-anchored")
        let newMap = CMClock.makeMap(
            rateMultiplier: rateMultiplier, rateDivisor: rateDivisor, anchorHostTime: anchorHostTime,
            anchorClockTime: anchorClockTime)
        map.withLock { $0 = newMap }
    }

    /// The clock's current affine map from host time.
    package var affineMap: AffineMap { map.withLock { $0 } }

    private static func makeMap(
        rateMultiplier: Int32, rateDivisor: Int32, anchorHostTime: CMTime, anchorClockTime: CMTime
    ) -> AffineMap {
        precondition(rateMultiplier > 0 && rateDivisor > 0, "CMClock: rateMultiplier and rateDivisor must be positive")
        precondition(
            anchorHostTime.isNumeric && anchorClockTime.isNumeric, "CMClock: the anchor times must be numeric")
        let host = CMTimeConvertScale(anchorHostTime, timescale: nanosecondsPerSecond, method: .default)
        let clock = CMTimeConvertScale(anchorClockTime, timescale: nanosecondsPerSecond, method: .default)
        precondition(host.isNumeric && clock.isNumeric, "CMClock: the anchor times must fit in Int64 nanoseconds")
        return AffineMap(
            anchorHostNanoseconds: host.value, anchorClockNanoseconds: clock.value, rateMultiplier: rateMultiplier,
            rateDivisor: rateDivisor)
    }

    /// The singleton host time clock (`CLOCK_MONOTONIC`); the same as ``CMClockGetHostTimeClock()``.
    public static let hostTimeClock = CMClock(name: "host", map: .identity)

    /// The clock's current time; the same as ``CMClockGetTime(_:)``.
    public var time: CMTime { CMClockGetTime(self) }

    /// Converts `time` from this clock to `clock`; the same as ``CMSyncConvertTime(_:from:to:)``.
    public func convertTime(_ time: CMTime, to clock: CMClock) -> CMTime {
        CMSyncConvertTime(time, from: self, to: clock)
    }

    // MARK: Host time helpers for drivers

    /// The timescale of host time and of every clock's time: nanoseconds.
    package static let nanosecondsPerSecond: CMTimeScale = 1_000_000_000

    /// `clock_gettime(CLOCK_MONOTONIC)` now, in nanoseconds.
    package static func hostNanosecondsNow() -> Int64 {
        var now = timespec()
        let result = clock_gettime(CLOCK_MONOTONIC, &now)
        precondition(result == 0, "clock_gettime(CLOCK_MONOTONIC) failed")  // Only EINVAL/EFAULT: programmer errors.
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// Host time now as a `CMTime` in nanoseconds.
    package static var hostTimeNow: CMTime { hostTime(nanoseconds: hostNanosecondsNow()) }

    /// A host time of `nanoseconds` since the `CLOCK_MONOTONIC` origin.
    package static func hostTime(nanoseconds: Int64) -> CMTime {
        CMTime(value: nanoseconds, timescale: nanosecondsPerSecond)
    }

    /// A host time from a `CLOCK_MONOTONIC` `timespec`, such as a V4L2 buffer's or an ALSA status's timestamp.
    /// Returns ``CMTime/positiveInfinity`` or ``CMTime/negativeInfinity`` if it does not fit in Int64 nanoseconds.
    package static func hostTime(_ timestamp: timespec) -> CMTime {
        let (seconds, overflow1) = Int64(timestamp.tv_sec).multipliedReportingOverflow(by: 1_000_000_000)
        let (nanoseconds, overflow2) = seconds.addingReportingOverflow(Int64(timestamp.tv_nsec))
        if overflow1 || overflow2 { return timestamp.tv_sec < 0 ? .negativeInfinity : .positiveInfinity }
        return hostTime(nanoseconds: nanoseconds)
    }
}

/// Returns the singleton host time clock, `CLOCK_MONOTONIC` in nanoseconds.
public func CMClockGetHostTimeClock() -> CMClock { CMClock.hostTimeClock }

/// Returns the clock's current time, in nanoseconds (timescale 1 000 000 000).
///
/// For the host clock this is `clock_gettime(CLOCK_MONOTONIC)`; for a device clock, its affine function of that
/// host time, rounded half away from zero to the nanosecond (``CMTimeFlags/hasBeenRounded`` set when inexact).
public func CMClockGetTime(_ clock: CMClock) -> CMTime {
    let now = CMClock.hostTimeNow
    if clock === CMClock.hostTimeClock { return now }
    return CMSyncConvertTime(now, from: .hostTimeClock, to: clock)
}

/// Converts a host time to system units: nanoseconds of `CLOCK_MONOTONIC` on Linux (Mach ticks on Darwin).
/// Non-numeric and negative times give 0.
public func CMClockConvertHostTimeToSystemUnits(_ hostTime: CMTime) -> UInt64 {
    let nanoseconds = CMTimeConvertScale(hostTime, timescale: CMClock.nanosecondsPerSecond, method: .default)
    guard nanoseconds.isNumeric, nanoseconds.value > 0 else { return 0 }
    return UInt64(nanoseconds.value)
}

/// Makes a host time from system units: nanoseconds of `CLOCK_MONOTONIC` on Linux (Mach ticks on Darwin).
/// Values beyond `Int64.max` give ``CMTime/positiveInfinity``.
public func CMClockMakeHostTimeFromSystemUnits(_ hostTime: UInt64) -> CMTime {
    guard hostTime <= UInt64(Int64.max) else { return .positiveInfinity }
    return CMClock.hostTime(nanoseconds: Int64(hostTime))
}
