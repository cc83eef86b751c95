/// An exact instant or duration on a virtual device's clock: `value / timescale` seconds.
///
/// Rational like `CMTime`, so that "which frame holds the whole second" has one exact answer at
/// 30000/1001 fps, where seconds as a `Double` would round a boundary frame either way.
/// Value type; safe from any thread.
package struct VirtualClockTime: Sendable, Hashable {
    /// The count of `1 / timescale` second ticks.
    package var value: Int64
    /// Ticks per second; positive.
    package var timescale: Int32

    /// A time of `value / timescale` seconds.
    package init(value: Int64, timescale: Int32) {
        precondition(timescale > 0, "VirtualClockTime needs a positive timescale, got \(timescale)")
        self.value = value
        self.timescale = timescale
    }

    /// The time in seconds, rounded to a `Double`.
    package var seconds: Double { Double(value) / Double(timescale) }

    /// Whether the half-open interval `[start, start + duration)` contains a whole second.
    ///
    /// This is the flash rule of the virtual camera: a frame stamped `start` that lasts `duration` is the flash
    /// frame when a whole second of the device clock falls in its interval, so exactly one frame in each second
    /// flashes at any frame rate (the frame at 0 s included). Exact, on 128-bit integers.
    package static func intervalContainsWholeSecond(start: VirtualClockTime, duration: VirtualClockTime) -> Bool {
        precondition(duration.value > 0, "a frame interval needs a positive duration")
        // In the common timescale p·q: start = a·q, end = a·q + b·p, and second N sits at N·p·q.
        let p = Int128(start.timescale)
        let q = Int128(duration.timescale)
        let startTicks = Int128(start.value) * q
        let endTicks = startTicks + Int128(duration.value) * p
        let secondTicks = p * q
        // The first whole second at or after the start (ceiling division that also holds for negative starts).
        let (quotient, remainder) = startTicks.quotientAndRemainder(dividingBy: secondTicks)
        let firstSecond = remainder > 0 ? quotient + 1 : quotient
        return firstSecond * secondTicks < endTicks
    }
}
