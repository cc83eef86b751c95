import OpenCoreMedia
import Testing

/// A range in whole seconds at timescale 1, or in `timescale` units.
private func range(_ start: Int64, _ duration: Int64, timescale: Int32 = 1) -> CMTimeRange {
    CMTimeRange(
        start: CMTime(value: start, timescale: timescale), duration: CMTime(value: duration, timescale: timescale))
}

/// The start and duration of a range as field values.
private func fields(_ range: CMTimeRange) -> [Fields] { [Fields(range.start), Fields(range.duration)] }

@Suite("CMTimeRange: validity, containment, intersection, union, equality")
struct CMTimeRangeTests {
    @Test func constructionAndValidity() {
        #expect(fields(CMTimeRange.zero) == [Fields(0, 1), Fields(0, 1)])
        #expect(!CMTimeRange.invalid.isValid && !CMTimeRange().isValid)
        #expect(range(0, 10).isValid && !range(0, 10).isEmpty && !range(0, 10).isIndefinite)
        #expect(!range(5, -1).isValid)  // Negative duration.
        #expect(range(5, 0).isValid && range(5, 0).isEmpty && CMTIMERANGE_IS_EMPTY(range(5, 0)))
        let epochDuration = CMTimeMakeWithEpoch(value: 1, timescale: 1, epoch: 1)
        #expect(!CMTimeRange(start: .zero, duration: epochDuration).isValid)
        #expect(!CMTimeRangeMake(start: .zero, duration: epochDuration).isValid)
        #expect(fields(CMTimeRangeMake(start: CMTime(value: 1, timescale: 2), duration: CMTime(value: 3, timescale: 4)))
            == [Fields(1, 2), Fields(3, 4)])
        #expect(CMTimeRange(start: .zero, duration: .indefinite).isIndefinite)
        #expect(CMTimeRange(start: .indefinite, duration: CMTime(value: 1, timescale: 1)).isIndefinite)
        #expect(!CMTimeRange(start: .invalid, duration: CMTime(value: 1, timescale: 1)).isValid)
    }

    @Test func startEndInitializerAndEnd() {
        let r = CMTimeRange(start: CMTime(value: 2, timescale: 1), end: CMTime(value: 11, timescale: 2))
        #expect(fields(r) == [Fields(2, 1), Fields(7, 2)])  // 11/2 - 2/1 = 11/2 - 4/2.
        #expect(Fields(r.end) == Fields(11, 2))
        #expect(Fields(CMTimeRangeGetEnd(range(3, 4))) == Fields(7, 1))
        #expect(Kind(CMTimeRange.invalid.end) == .invalid)
        #expect(!CMTimeRangeFromTimeToTime(start: CMTime(value: 5, timescale: 1), end: CMTime(value: 4, timescale: 1))
            .isValid)
        // A range of a timestamp in epoch 3: the end is in epoch 3, the duration in epoch 0.
        let timestamped = CMTimeRange(
            start: CMTimeMakeWithEpoch(value: 1, timescale: 1, epoch: 3),
            end: CMTimeMakeWithEpoch(value: 4, timescale: 1, epoch: 3))
        #expect(fields(timestamped) == [Fields(1, 1, epoch: 3), Fields(3, 1)])
        #expect(Fields(timestamped.end) == Fields(4, 1, epoch: 3))
    }

    @Test func containsTimeIsHalfOpen() {
        let r = range(0, 10)
        #expect(r.containsTime(.zero))
        #expect(r.containsTime(CMTime(value: 9_999, timescale: 1_000)))
        #expect(!r.containsTime(CMTime(value: 10, timescale: 1)))
        #expect(!r.containsTime(CMTime(value: 10_000, timescale: 1_000)))
        #expect(!r.containsTime(CMTime(value: -1, timescale: 1_000_000_000)))
        #expect(!CMTimeRangeContainsTime(r, time: r.end))
        #expect(!r.containsTime(.invalid) && !r.containsTime(.indefinite) && !r.containsTime(.positiveInfinity))
        #expect(!range(5, 0).containsTime(CMTime(value: 5, timescale: 1)))  // Empty contains nothing.
        #expect(!CMTimeRange.invalid.containsTime(.zero))
        let forever = CMTimeRange(start: .zero, duration: .positiveInfinity)
        #expect(forever.containsTime(CMTime(value: .max, timescale: 1)))
        #expect(!forever.containsTime(CMTime(value: -1, timescale: 1)))
        // Different epoch: before or after the whole range.
        #expect(!r.containsTime(CMTimeMakeWithEpoch(value: 5, timescale: 1, epoch: 1)))
        // Across timescales: [1/3, 2/3) contains 333334/1000000 but not 333333/1000000.
        let third = range(1, 1, timescale: 3)
        #expect(third.containsTime(CMTime(value: 333_334, timescale: 1_000_000)))
        #expect(!third.containsTime(CMTime(value: 333_333, timescale: 1_000_000)))
        #expect(third.containsTime(CMTime(value: 666_666, timescale: 1_000_000)))
        #expect(!third.containsTime(CMTime(value: 666_667, timescale: 1_000_000)))
    }

    @Test func containsTimeRange() {
        let r = range(0, 10)
        #expect(r.containsTimeRange(range(2, 3)))
        #expect(r.containsTimeRange(r))
        #expect(r.containsTimeRange(range(0, 10_000, timescale: 1_000)))
        #expect(!r.containsTimeRange(range(5, 6)))
        #expect(!r.containsTimeRange(range(-1, 2)))
        #expect(r.containsTimeRange(range(10, 0)))  // An empty range at the end lies within [start, end].
        #expect(!r.containsTimeRange(range(11, 0)))
        #expect(!r.containsTimeRange(.invalid) && !CMTimeRange.invalid.containsTimeRange(r))
        #expect(CMTimeRangeContainsTimeRange(r, otherRange: range(9, 1)))
    }

    @Test func intersection() {
        #expect(fields(range(0, 10).intersection(range(5, 10))) == [Fields(5, 1), Fields(5, 1)])  // Overlapping.
        #expect(fields(range(5, 10).intersection(range(0, 10))) == [Fields(5, 1), Fields(5, 1)])
        #expect(fields(range(0, 10).intersection(range(2, 3))) == [Fields(2, 1), Fields(3, 1)])  // Containing.
        #expect(fields(range(0, 5).intersection(range(6, 4))) == fields(.zero))  // Disjoint.
        #expect(fields(range(0, 5).intersection(range(5, 5))) == fields(.zero))  // Touching.
        #expect(fields(range(0, 10).intersection(range(3, 0))) == fields(.zero))  // Empty.
        #expect(!range(0, 10).intersection(.invalid).isValid)
        #expect(!CMTimeRange.invalid.intersection(range(0, 10)).isValid)
        let otherEpoch = CMTimeRange(start: CMTimeMakeWithEpoch(value: 0, timescale: 1, epoch: 1),
            duration: CMTime(value: 10, timescale: 1))
        #expect(!range(0, 10).intersection(otherEpoch).isValid)
        // Across timescales: [1/3, 2/3) ∩ [1/2, 1) = [1/2, 2/3), duration 2/3 - 1/2 = 4/6 - 3/6.
        let mixed = CMTimeRangeGetIntersection(range(1, 1, timescale: 3), otherRange: range(1, 1, timescale: 2))
        #expect(fields(mixed) == [Fields(1, 2), Fields(1, 6)])
        let forever = CMTimeRange(start: .zero, duration: .positiveInfinity)
        #expect(fields(forever.intersection(range(3, 4))) == [Fields(3, 1), Fields(4, 1)])
    }

    @Test func union() {
        #expect(fields(range(0, 10).union(range(5, 10))) == [Fields(0, 1), Fields(15, 1)])  // Overlapping.
        #expect(fields(range(0, 5).union(range(8, 2))) == [Fields(0, 1), Fields(10, 1)])  // Disjoint: gap included.
        #expect(fields(range(0, 5).union(range(5, 5))) == [Fields(0, 1), Fields(10, 1)])  // Touching.
        #expect(fields(range(0, 10).union(range(2, 3))) == [Fields(0, 1), Fields(10, 1)])  // Containing.
        #expect(fields(range(0, 10).union(range(20, 0))) == [Fields(0, 1), Fields(10, 1)])  // Empty adds nothing.
        #expect(fields(range(20, 0).union(range(0, 10))) == [Fields(0, 1), Fields(10, 1)])
        #expect(fields(CMTimeRangeGetUnion(range(3, 0), otherRange: range(7, 0))) == [Fields(3, 1), Fields(0, 1)])
        #expect(!range(0, 10).union(.invalid).isValid)
        let otherEpoch = CMTimeRange(start: CMTimeMakeWithEpoch(value: 0, timescale: 1, epoch: 1),
            duration: CMTime(value: 10, timescale: 1))
        #expect(!range(0, 10).union(otherEpoch).isValid)
        // Across timescales: [1/3, 2/3) ∪ [1/2, 1) = [1/3, 1), duration 1 - 1/3 = 3/3 - 1/3.
        #expect(fields(range(1, 1, timescale: 3).union(range(1, 1, timescale: 2))) == [Fields(1, 3), Fields(4, 6)])
    }

    @Test func equalityAndHashingCompareValues() {
        let a = range(1, 2, timescale: 2)
        let b = CMTimeRange(start: CMTime(value: 2, timescale: 4), duration: CMTime(value: 1, timescale: 1))
        #expect(a == b && CMTimeRangeEqual(a, b))
        #expect(a.hashValue == b.hashValue)
        #expect(a != range(1, 3, timescale: 2))
        #expect(Set([a, b, range(0, 1)]).count == 2)
        #expect(CMTimeRange.invalid == CMTimeRange(start: invalidTime, duration: invalidTime))
    }

    @Test func descriptionMatchesApplesFormat() {
        #expect(range(0, 600, timescale: 600).description == "{{0/600 = 0.000}, {600/600 = 1.000}}")
        #expect(CMTimeRange.invalid.description == "{{INVALID}, {INVALID}}")
    }
}
