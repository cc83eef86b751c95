/// Host times for a capture stream's periods, from the timestamps ALSA measures.
///
/// Each period's measured time (the status `htstamp` minus the frames still waiting, over the rate) is exact on
/// average but jitters with interrupts and plugins; adding it up frame by frame is smooth but drifts with the
/// sound card's crystal. This does what a phase-locked loop does: a period is stamped where the previous one
/// ended, pulled towards the measurement by an eighth of the error and never by more than 1 % of its duration
/// (a slew of 10⁴ ppm, far more than any crystal's error), so timestamps stay in order and gapless while following
/// the card's clock. Only lost frames make a gap: after ALSA reported a loss (an overrun, a suspend, a restart), an
/// error beyond `gapTolerance` is the time the loss took, so the clock jumps to the measurement and reports how many
/// frames it skipped. Without a loss the ring buffer held every frame, so a measurement far off (a late wake-up on a
/// loaded machine, a USB controller completing transfers in bursts: tens of milliseconds seen with snd-usb-audio
/// under a VM) is jitter and only pulls the time line gently; the clock re-anchors without a loss only when a
/// measurement is more than `resyncThreshold` (one second) ahead, as after a host clock step. It never goes back.
///
/// Sources without real-time pacing (ALSA's `file` plugin) measure times that lag ever further behind; the slew
/// limit keeps their periods contiguous and in order anyway.
///
/// Value type; not shared between threads (the capture thread owns it).
package struct ALSAPeriodClock: Sendable {
    /// What `stamp` decided for one period.
    package struct Stamp: Equatable, Sendable {
        /// The host time of the period's first frame, in nanoseconds.
        package var hostNanoseconds: Int64
        /// Frames skipped before this period (a discontinuity), 0 normally.
        package var skippedFrames: Int64

        package init(hostNanoseconds: Int64, skippedFrames: Int64) {
            self.hostNanoseconds = hostNanoseconds
            self.skippedFrames = skippedFrames
        }
    }

    package let sampleRate: Double
    /// How far a measurement may lie from the expected time before it counts as a discontinuity.
    package let gapTolerance: Int64
    /// How far ahead of the time line a measurement may lie, with no frame lost, before the time line is started
    /// again there (its stamps jump, reporting no skipped frames).
    package let resyncThreshold: Int64 = 1_000_000_000
    /// Where the next period starts, in host nanoseconds; nil before the first period.
    private var nextStart: Double?

    package init(sampleRate: Double, periodFrames: Int) {
        self.sampleRate = sampleRate
        // Two periods, and never less than 20 ms: scheduling jitter on a loaded machine stays below it.
        gapTolerance = max(Int64(2 * Double(periodFrames) / sampleRate * 1e9), 20_000_000)
    }

    /// The time of a period of `frames` frames whose first frame ALSA measured at `measured` host nanoseconds;
    /// `afterLoss` when ALSA reported frames lost since the previous period (an overrun recovered, a restart).
    package mutating func stamp(frames: Int, measured: Int64, afterLoss: Bool = false) -> Stamp {
        let duration = Double(frames) / sampleRate * 1e9
        guard let expected = nextStart else {
            nextStart = Double(measured) + duration
            return Stamp(hostNanoseconds: measured, skippedFrames: 0)
        }
        let error = Double(measured) - expected
        if afterLoss && error > Double(gapTolerance) {
            nextStart = Double(measured) + duration
            let skipped = Int64((error / 1e9 * sampleRate).rounded())
            return Stamp(hostNanoseconds: measured, skippedFrames: skipped)
        }
        if error > Double(resyncThreshold) {
            nextStart = Double(measured) + duration
            return Stamp(hostNanoseconds: measured, skippedFrames: 0)
        }
        let limit = duration / 100
        let start = expected + min(max(error / 8, -limit), limit)
        nextStart = start + duration
        return Stamp(hostNanoseconds: Int64(start.rounded()), skippedFrames: 0)
    }

    /// Forgets the time line: the next period is stamped where it was measured (after a restart).
    package mutating func reset() {
        nextStart = nil
    }
}
