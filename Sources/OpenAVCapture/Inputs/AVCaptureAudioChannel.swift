import Foundation
import Synchronization

/// One audio channel of a connection: its level, polled, as Apple's.
///
/// `averagePowerLevel` is the RMS level of the most recent 100 ms of the channel, in dBFS (a full-scale sine
/// reads −3.01 dB); `peakHoldLevel` is the largest absolute sample of the most recent second, in dBFS (a
/// full-scale sine reads 0 dB). Silence reads −160 dB, Apple's floor. `volume` and `isEnabled` apply to what file
/// outputs record (as on macOS; data outputs and the levels are unaffected): the channel's samples are scaled by
/// `volume`, or silenced when it is not enabled.
///
/// Threading: thread safe; the session updates levels on the capture thread, readers poll from anywhere.
open class AVCaptureAudioChannel: NSObject, @unchecked Sendable {
    private struct Levels {
        var meter = AudioLevelMeter()
        var volume: Float = 1
        var isEnabled = true
    }

    private let levels = Mutex(Levels())

    override package init() { super.init() }

    /// The RMS level of the last 100 ms, in dBFS.
    public var averagePowerLevel: Float { levels.withLock { $0.meter.averagePowerLevel } }
    /// The peak level of the last second, in dBFS.
    public var peakHoldLevel: Float { levels.withLock { $0.meter.peakHoldLevel } }
    /// A gain for the channel (macOS file outputs); 0...1.
    public var volume: Float {
        get { levels.withLock { $0.volume } }
        set { levels.withLock { $0.volume = max(0, min(1, newValue)) } }
    }
    /// Whether the channel is recorded (macOS file outputs).
    public var isEnabled: Bool {
        get { levels.withLock { $0.isEnabled } }
        set { levels.withLock { $0.isEnabled = newValue } }
    }

    /// Adds one block of the channel's samples (already normalized to -1...1) covering `duration` seconds.
    package func measure(sumOfSquares: Double, peak: Double, count: Int, duration: Double) {
        levels.withLock { $0.meter.add(sumOfSquares: sumOfSquares, peak: peak, count: count, duration: duration) }
    }
}

/// Sliding-window RMS and peak levels over blocks of samples (an audio period each).
///
/// Value type; not synchronized.
package struct AudioLevelMeter: Sendable {
    /// The RMS window: Apple documents no window; 100 ms follows a VU meter's integration time, roughly.
    package static let averageWindow = 0.1
    /// The peak hold time.
    package static let peakWindow = 1.0
    /// Apple's floor for silence.
    package static let floor: Float = -160

    private struct Block {
        var sumOfSquares: Double
        var peak: Double
        var count: Int
        var duration: Double
    }

    private var blocks: [Block] = []

    package init() { blocks.reserveCapacity(128) }

    package mutating func add(sumOfSquares: Double, peak: Double, count: Int, duration: Double) {
        blocks.append(Block(sumOfSquares: sumOfSquares, peak: peak, count: count, duration: duration))
        var kept = 0.0
        var firstKept = blocks.count
        for index in blocks.indices.reversed() {
            kept += blocks[index].duration
            firstKept = index
            if kept >= Self.peakWindow { break }
        }
        if firstKept > 0 { blocks.removeFirst(firstKept) }
    }

    package var averagePowerLevel: Float {
        var sum = 0.0
        var count = 0
        var covered = 0.0
        for block in blocks.reversed() where covered < Self.averageWindow - 1e-9 {
            sum += block.sumOfSquares
            count += block.count
            covered += block.duration
        }
        guard count > 0, sum > 0 else { return Self.floor }
        return max(Self.floor, Float(10 * log10(sum / Double(count))))
    }

    package var peakHoldLevel: Float {
        let peak = blocks.map(\.peak).max() ?? 0
        guard peak > 0 else { return Self.floor }
        return max(Self.floor, Float(20 * log10(peak)))
    }
}
