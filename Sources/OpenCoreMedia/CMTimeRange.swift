// CMTimeRange: a half-open range of time [start, start + duration), with Apple's algebra (CMTimeRange.h).

/// A range of time given by a start and a duration; it contains `start` but not `end`.
///
/// A range is valid when both times are valid and the duration is non-negative in epoch 0 (Apple's
/// `CMTIMERANGE_IS_VALID`). `CMTimeRangeContainsTime(range, range.end)` is always false. Ranges whose starts are in
/// different epochs cannot be combined: their intersection and union are ``invalid``. The exact rules are in
/// <doc:CMTimeSemantics>. No operation allocates.
///
/// Value type; safe to use from any thread.
public struct CMTimeRange: Sendable {
    /// The first time in the range.
    public var start: CMTime
    /// The length of the range; non-negative and in epoch 0 for a valid range.
    public var duration: CMTime

    /// Creates a range from a start and a duration, stored as given (see ``CMTimeRangeMake(start:duration:)`` for
    /// the checked form).
    @inlinable
    public init(start: CMTime, duration: CMTime) {
        self.start = start
        self.duration = duration
    }

    /// Creates the range from `start` up to, not including, `end`: its duration is `end - start`.
    @inlinable
    public init(start: CMTime, end: CMTime) {
        self.init(start: start, duration: CMTimeSubtract(end, start))
    }

    /// Creates an invalid range with every field zero, like Apple's zero-initialized struct.
    @inlinable
    public init() {
        self.init(start: CMTime(), duration: CMTime())
    }

    /// The empty range at time zero (Apple's `kCMTimeRangeZero`).
    public static let zero = CMTimeRange(start: .zero, duration: .zero)
    /// An invalid range (Apple's `kCMTimeRangeInvalid`).
    public static let invalid = CMTimeRange()

    /// Whether both times are valid and the duration is non-negative in epoch 0 (Apple's `CMTIMERANGE_IS_VALID`).
    @inlinable
    public var isValid: Bool { start.isValid && duration.isValid && duration.epoch == 0 && duration.value >= 0 }

    /// Whether the range is valid and its start or duration is indefinite (Apple's `CMTIMERANGE_IS_INDEFINITE`).
    @inlinable
    public var isIndefinite: Bool { isValid && (start.isIndefinite || duration.isIndefinite) }

    /// Whether the range is valid and its duration is zero (Apple's `CMTIMERANGE_IS_EMPTY`).
    @inlinable
    public var isEmpty: Bool { isValid && CMTimeCompare(duration, .zero) == 0 }

    /// The first time after the range, `start + duration`; ``CMTime/invalid`` for an invalid range.
    @inlinable
    public var end: CMTime { CMTimeRangeGetEnd(self) }

    /// Whether `time` is numeric and `start <= time < end`.
    @inlinable
    public func containsTime(_ time: CMTime) -> Bool { CMTimeRangeContainsTime(self, time: time) }

    /// Whether both ranges are valid and `range` lies within `self`: `start <= range.start` and
    /// `range.end <= end`. An empty range is contained when its start lies in `[start, end]`.
    @inlinable
    public func containsTimeRange(_ range: CMTimeRange) -> Bool {
        CMTimeRangeContainsTimeRange(self, otherRange: range)
    }

    /// The largest range contained in both; see ``CMTimeRangeGetIntersection(_:otherRange:)``.
    @inlinable
    public func intersection(_ otherRange: CMTimeRange) -> CMTimeRange {
        CMTimeRangeGetIntersection(self, otherRange: otherRange)
    }

    /// The smallest range containing every time of both; see ``CMTimeRangeGetUnion(_:otherRange:)``.
    @inlinable
    public func union(_ otherRange: CMTimeRange) -> CMTimeRange { CMTimeRangeGetUnion(self, otherRange: otherRange) }
}

// MARK: - Functions

/// Makes a range from a start and a duration; a duration outside epoch 0 gives ``CMTimeRange/invalid``.
@inlinable
public func CMTimeRangeMake(start: CMTime, duration: CMTime) -> CMTimeRange {
    duration.epoch == 0 ? CMTimeRange(start: start, duration: duration) : .invalid
}

/// Makes the range from `start` up to, not including, `end`.
@inlinable
public func CMTimeRangeFromTimeToTime(start: CMTime, end: CMTime) -> CMTimeRange {
    CMTimeRange(start: start, end: end)
}

/// The first time after the range, `start + duration`; ``CMTime/invalid`` for an invalid range.
@inlinable
public func CMTimeRangeGetEnd(_ range: CMTimeRange) -> CMTime {
    range.isValid ? CMTimeAdd(range.start, range.duration) : .invalid
}

/// Whether `time` is numeric and lies in the valid `range`: `start <= time < end`, so the end is never contained.
@inlinable
public func CMTimeRangeContainsTime(_ range: CMTimeRange, time: CMTime) -> Bool {
    guard range.isValid, time._isUsable, CMTimeCompare(range.start, time) <= 0 else { return false }
    return CMTimeCompare(time, CMTimeAdd(range.start, range.duration)) < 0
}

/// Whether both ranges are valid and `otherRange` lies within `range`: `range.start <= otherRange.start` and
/// `otherRange.end <= range.end`.
@inlinable
public func CMTimeRangeContainsTimeRange(_ range: CMTimeRange, otherRange: CMTimeRange) -> Bool {
    guard range.isValid, otherRange.isValid, CMTimeCompare(range.start, otherRange.start) <= 0 else { return false }
    return CMTimeCompare(otherRange.end, range.end) <= 0
}

/// The largest range contained in both ranges.
///
/// Invalid when either range is invalid or their starts are in different epochs; ``CMTimeRange/zero`` when they
/// share no time (disjoint, touching, or either one empty).
public func CMTimeRangeGetIntersection(_ range: CMTimeRange, otherRange: CMTimeRange) -> CMTimeRange {
    guard range.isValid, otherRange.isValid, range.start.epoch == otherRange.start.epoch else { return .invalid }
    let start = CMTimeMaximum(range.start, otherRange.start)
    let end = CMTimeMinimum(range.end, otherRange.end)
    guard CMTimeCompare(start, end) < 0 else { return .zero }
    return CMTimeRange(start: start, end: end)
}

/// The smallest range containing every time of both ranges.
///
/// Invalid when either range is invalid or their starts are in different epochs. An empty range contains no time,
/// so it does not widen the union: the union with an empty range is the other range (and of two empty ranges, the
/// first). The gap between disjoint ranges is included.
public func CMTimeRangeGetUnion(_ range: CMTimeRange, otherRange: CMTimeRange) -> CMTimeRange {
    guard range.isValid, otherRange.isValid, range.start.epoch == otherRange.start.epoch else { return .invalid }
    if otherRange.isEmpty { return range }
    if range.isEmpty { return otherRange }
    let start = CMTimeMinimum(range.start, otherRange.start)
    let end = CMTimeMaximum(range.end, otherRange.end)
    return CMTimeRange(start: start, end: end)
}

/// Whether the ranges have equal starts and equal durations by ``CMTimeCompare(_:_:)``.
@inlinable
public func CMTimeRangeEqual(_ range1: CMTimeRange, _ range2: CMTimeRange) -> Bool {
    CMTimeCompare(range1.start, range2.start) == 0 && CMTimeCompare(range1.duration, range2.duration) == 0
}

/// Prints the range's ``CMTimeRange/description`` and a newline to standard error, as Apple's `CFShow` does.
public func CMTimeRangeShow(_ range: CMTimeRange) {
    _writeToStandardError(range.description + "\n")
}

/// Whether the range is valid (Apple's `CMTIMERANGE_IS_VALID`).
@inlinable public func CMTIMERANGE_IS_VALID(_ range: CMTimeRange) -> Bool { range.isValid }
/// Whether the range is invalid (Apple's `CMTIMERANGE_IS_INVALID`).
@inlinable public func CMTIMERANGE_IS_INVALID(_ range: CMTimeRange) -> Bool { !range.isValid }
/// Whether the range is indefinite (Apple's `CMTIMERANGE_IS_INDEFINITE`).
@inlinable public func CMTIMERANGE_IS_INDEFINITE(_ range: CMTimeRange) -> Bool { range.isIndefinite }
/// Whether the range is empty (Apple's `CMTIMERANGE_IS_EMPTY`).
@inlinable public func CMTIMERANGE_IS_EMPTY(_ range: CMTimeRange) -> Bool { range.isEmpty }

// MARK: - Conformances

extension CMTimeRange: Equatable, Hashable, CustomStringConvertible {
    /// Whether the ranges are equal by ``CMTimeRangeEqual(_:_:)``.
    @inlinable
    public static func == (range1: CMTimeRange, range2: CMTimeRange) -> Bool { CMTimeRangeEqual(range1, range2) }

    /// Whether the ranges differ by ``CMTimeRangeEqual(_:_:)``.
    @inlinable
    public static func != (range1: CMTimeRange, range2: CMTimeRange) -> Bool { !CMTimeRangeEqual(range1, range2) }

    /// Hashes the start and the duration, consistently with `==`.
    @inlinable
    public func hash(into hasher: inout Hasher) {
        hasher.combine(start)
        hasher.combine(duration)
    }

    /// Apple's `CMTimeRangeCopyDescription` form: `{{0/1 = 0.000}, {600/600 = 1.000}}`.
    public var description: String { "{\(start.description), \(duration.description)}" }
}
