// PlaybackClock: where a player is in its item's timeline, as a line through one (media time, host time) anchor.

import Foundation
import OpenCoreMedia

/// The player's clock: the item's time at an anchor on the host clock, and the rate it advances at since. Media
/// time at host time `h` is `anchorMedia + (h − anchorHost) × rate`; a paused clock (rate 0) stays at its anchor,
/// so a paused player's time is exactly the time it was paused or sought to.
///
/// Threading: a value; `Sendable`.
struct PlaybackClock: Sendable {
    /// The item's time at ``anchorHost``.
    var anchorMedia: CMTime = .zero
    /// Host-clock seconds (CLOCK_MONOTONIC) at which the item was at ``anchorMedia``.
    var anchorHost: Double = 0
    /// Item seconds per host second; 0 while paused or seeking.
    var rate: Double = 0

    /// The host clock now, in seconds (the session's and the player's clock).
    static func hostNow() -> Double { CMTimeGetSeconds(CMClockGetTime(.hostTimeClock)) }

    /// The item's time at host time `host`.
    func mediaTime(atHost host: Double) -> CMTime {
        guard rate > 0 else { return anchorMedia }
        let elapsed = max(0, host - anchorHost) * rate
        return anchorMedia + CMTime(seconds: elapsed, preferredTimescale: 1_000_000_000)
    }

    /// The host time at which the item reaches `media`; nil while the clock stands still.
    func hostTime(ofMedia media: CMTime) -> Double? {
        guard rate > 0 else { return nil }
        return anchorHost + CMTimeGetSeconds(media - anchorMedia) / rate
    }

    /// The clock re-anchored at `media` now, advancing at `rate` from here.
    mutating func restart(at media: CMTime, rate: Double, host: Double = PlaybackClock.hostNow()) {
        anchorMedia = media
        anchorHost = host
        self.rate = rate
    }
}
