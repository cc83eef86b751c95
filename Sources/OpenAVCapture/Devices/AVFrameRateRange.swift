import CaptureDrivers
import Foundation

/// A range of frame rates a device format supports, as frame rates and as exact frame durations.
///
/// Threading: immutable; safe to share between threads.
open class AVFrameRateRange: NSObject, @unchecked Sendable {
    package let range: FrameDurationRange

    package init(_ range: FrameDurationRange) { self.range = range }

    /// The lowest frame rate, in frames per second.
    public var minFrameRate: Float64 { range.minFrameRate }
    /// The highest frame rate, in frames per second.
    public var maxFrameRate: Float64 { range.maxFrameRate }
    /// The shortest frame duration (the highest rate), exact.
    public var minFrameDuration: CMTime { range.minFrameDuration }
    /// The longest frame duration (the lowest rate), exact.
    public var maxFrameDuration: CMTime { range.maxFrameDuration }

    public override var description: String {
        "<AVFrameRateRange \(minFrameRate) - \(maxFrameRate)>"
    }

    public override func isEqual(_ object: Any?) -> Bool { (object as? AVFrameRateRange)?.range == range }
    public override var hash: Int { range.hashValue }
}
