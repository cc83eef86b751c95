import OpenCoreMedia
import Testing

@Suite("CMTime: construction, seconds, comparison, hashing, description")
struct CMTimeTests {
    @Test func flagRawValuesAreApples() {
        #expect(CMTimeFlags.valid.rawValue == 1)
        #expect(CMTimeFlags.hasBeenRounded.rawValue == 2)
        #expect(CMTimeFlags.positiveInfinity.rawValue == 4)
        #expect(CMTimeFlags.negativeInfinity.rawValue == 8)
        #expect(CMTimeFlags.indefinite.rawValue == 16)
        #expect(CMTimeFlags.impliedValueFlagsMask.rawValue == 28)
        #expect(kCMTimeMaxTimescale == 2_147_483_647)
    }

    @Test func constantsHaveApplesFields() {
        #expect(Fields(CMTime.zero) == Fields(0, 1))
        #expect(Fields(CMTime.invalid) == Fields(CMTime(value: 0, timescale: 0, flags: [], epoch: 0)))
        #expect(Fields(CMTime()) == Fields(CMTime.invalid))
        #expect(CMTime.indefinite.flags.rawValue == 17)
        #expect(CMTime.positiveInfinity.flags.rawValue == 5)
        #expect(CMTime.negativeInfinity.flags.rawValue == 9)
        #expect(Fields(CMTimeMake(value: 1001, timescale: 30000)) == Fields(1001, 30000))
        #expect(Fields(CMTime(value: -5, timescale: 7)) == Fields(-5, 7))
        #expect(Fields(CMTimeMakeWithEpoch(value: 1, timescale: 2, epoch: 9)) == Fields(1, 2, epoch: 9))
    }

    @Test func predicatesFollowApplesMacros() {
        #expect(numericOne.isValid && numericOne.isNumeric && !numericOne.hasBeenRounded)
        #expect(!invalidTime.isValid && !invalidTime.isNumeric)
        #expect(plusInfinity.isPositiveInfinity && !plusInfinity.isNumeric && !plusInfinity.isNegativeInfinity)
        #expect(minusInfinity.isNegativeInfinity && !minusInfinity.isPositiveInfinity)
        #expect(indefiniteTime.isIndefinite && !indefiniteTime.isNumeric)
        // Implied-value flags without `valid` are still invalid.
        let notValid = CMTime(value: 0, timescale: 0, flags: .positiveInfinity, epoch: 0)
        #expect(!notValid.isPositiveInfinity && !CMTIME_IS_VALID(notValid) && CMTIME_IS_INVALID(notValid))
        let rounded = CMTime(value: 1, timescale: 3, flags: [.valid, .hasBeenRounded], epoch: 0)
        #expect(rounded.hasBeenRounded && CMTIME_HAS_BEEN_ROUNDED(rounded))
        // hasBeenRounded only counts on numeric times.
        #expect(!CMTime(value: 0, timescale: 0, flags: [.valid, .hasBeenRounded, .indefinite], epoch: 0).hasBeenRounded)
    }

    @Test func secondsOfEachKind() {
        #expect(CMTime(value: 1, timescale: 4).seconds == 0.25)
        #expect(CMTimeGetSeconds(CMTime(value: -3, timescale: 2)) == -1.5)
        #expect(CMTime(value: 1, timescale: 4, flags: .valid, epoch: 8).seconds == 0.25)  // Epoch ignored.
        #expect(plusInfinity.seconds == .infinity)
        #expect(minusInfinity.seconds == -.infinity)
        #expect(indefiniteTime.seconds.isNaN)
        #expect(invalidTime.seconds.isNaN)
        #expect(CMTime(value: 1, timescale: 0).seconds.isNaN)  // A zero timescale is treated as invalid.
    }

    @Test func makeWithSecondsExactAndRounded() {
        #expect(Fields(CMTime(seconds: 0.5, preferredTimescale: 600)) == Fields(300, 600))
        // 1/3 as a Double × 600 = 199.99999999999998889…, rounds to 200; 200/600 converts back to the same Double,
        // so Apple's rule leaves hasBeenRounded clear.
        #expect(Fields(CMTimeMakeWithSeconds(1.0 / 3.0, preferredTimescale: 600)) == Fields(200, 600))
        #expect(Fields(CMTimeMakeWithSeconds(0.1, preferredTimescale: 3)) == Fields(0, 3, rounded: true))
        // Exact binary halves round away from zero.
        #expect(Fields(CMTimeMakeWithSeconds(0.5, preferredTimescale: 1)) == Fields(1, 1, rounded: true))
        #expect(Fields(CMTimeMakeWithSeconds(-0.5, preferredTimescale: 1)) == Fields(-1, 1, rounded: true))
        #expect(Fields(CMTimeMakeWithSeconds(-2.5, preferredTimescale: 1)) == Fields(-3, 1, rounded: true))
        #expect(Fields(CMTimeMakeWithSeconds(-0.0, preferredTimescale: 1000)) == Fields(0, 1000))
        #expect(Fields(CMTimeMakeWithSeconds(0x1p-1074, preferredTimescale: 1000)) == Fields(0, 1000, rounded: true))
    }

    @Test func makeWithSecondsSpecialValuesAndOverflow() {
        #expect(Kind(CMTimeMakeWithSeconds(.nan, preferredTimescale: 600)) == .invalid)
        #expect(Kind(CMTimeMakeWithSeconds(.infinity, preferredTimescale: 600)) == .positiveInfinity)
        #expect(Kind(CMTimeMakeWithSeconds(-.infinity, preferredTimescale: 600)) == .negativeInfinity)
        #expect(Kind(CMTimeMakeWithSeconds(1, preferredTimescale: 0)) == .invalid)
        #expect(Kind(CMTimeMakeWithSeconds(1, preferredTimescale: -600)) == .invalid)
        #expect(Kind(CMTimeMakeWithSeconds(1e300, preferredTimescale: 600)) == .positiveInfinity)
        #expect(Kind(CMTimeMakeWithSeconds(-1e300, preferredTimescale: 600)) == .negativeInfinity)
        // 2^62 s overflows at timescale 4 (2^64) and 2 (2^63) and fits exactly at 1.
        #expect(Fields(CMTimeMakeWithSeconds(0x1p62, preferredTimescale: 4)) == Fields(1 << 62, 1))
        // 2^62 s at timescale 3 overflows; halving 3 gives 1.
        #expect(Fields(CMTimeMakeWithSeconds(0x1p62, preferredTimescale: 3)) == Fields(1 << 62, 1))
        #expect(Kind(CMTimeMakeWithSeconds(0x1p63, preferredTimescale: 1)) == .positiveInfinity)
        #expect(Fields(CMTimeMakeWithSeconds(-0x1p62, preferredTimescale: 1_000_000_000)) == Fields(-(1 << 62), 1))
    }

    @Test(arguments: [0.0, 1.0, -1.0, 0.033_366_7, 1234.567_890_123, -98_765.432_1, 1e-9, 9.2e9])
    func secondsRoundTripWithinHalfAUnit(seconds: Double) {
        for timescale: Int32 in [1_000_000_000, 48_000, 90_000, 600, 30_000] {
            let time = CMTime(seconds: seconds, preferredTimescale: timescale)
            #expect(time.isNumeric)
            #expect(time.timescale == timescale)
            // |value - seconds × timescale| ≤ 1/2, checked in Double with slack for the Double product's rounding.
            let product = seconds * Double(timescale)
            #expect((Double(time.value) - product).magnitude <= 0.5 + 2 * product.ulp)
            #expect(time.hasBeenRounded == (time.seconds != seconds))
        }
    }

    @Test func compareAcrossTimescales() {
        let third = CMTime(value: 1, timescale: 3)
        #expect(CMTimeCompare(third, CMTime(value: 333_333, timescale: 1_000_000)) == 1)
        #expect(CMTimeCompare(CMTime(value: 333_334, timescale: 1_000_000), third) == 1)
        #expect(CMTimeCompare(CMTime(value: 333_333, timescale: 1_000_000), third) == -1)
        #expect(CMTimeCompare(CMTime(value: 1, timescale: 2), CMTime(value: 2, timescale: 4)) == 0)
        #expect(CMTime(value: 1, timescale: 2) == CMTime(value: 500_000_000, timescale: 1_000_000_000))
        #expect(CMTime(value: -1, timescale: 3) < CMTime(value: -333_333, timescale: 1_000_000))
        #expect(CMTime(value: 0, timescale: 1) == CMTime(value: 0, timescale: 90_000))
        // a/b < (a-1)/(b-1) whenever a > b > 1; exact at the extremes of both fields.
        let big = CMTime(value: .max, timescale: .max)
        let bigger = CMTime(value: .max - 1, timescale: .max - 1)
        #expect(CMTimeCompare(big, bigger) == -1)
        #expect(CMTimeCompare(CMTime(value: .max, timescale: 1), CMTime(value: .max, timescale: 2)) == 1)
        #expect(CMTimeCompare(CMTime(value: .min, timescale: 1), CMTime(value: .min + 1, timescale: 1)) == -1)
    }

    @Test func compareOrdersEveryKindAsApple() {
        // Apple: -infinity < all finite values < indefinite < +infinity < invalid.
        let scrambled = [invalidTime, plusInfinity, numericOne, indefiniteTime, minusInfinity, CMTime.zero]
        let sorted = scrambled.sorted()
        #expect(sorted.map(Kind.init) == [.negativeInfinity, .numeric, .numeric, .indefinite, .positiveInfinity,
            .invalid])
        #expect(sorted[1].value == 0 && sorted[2].value == 1)
        #expect(CMTimeCompare(invalidTime, .invalid) == 0)
        #expect(CMTimeCompare(plusInfinity, .positiveInfinity) == 0)
        #expect(CMTimeCompare(minusInfinity, CMTime(value: .min, timescale: 1)) == -1)
        #expect(CMTimeCompare(indefiniteTime, CMTime(value: .max, timescale: 1)) == 1)
        #expect(CMTimeCompare(indefiniteTime, plusInfinity) == -1)
        #expect(CMTimeCompare(plusInfinity, invalidTime) == -1)
        // A valid-flagged time with a non-positive timescale counts as invalid.
        #expect(CMTimeCompare(CMTime(value: 1, timescale: 0), .invalid) == 0)
    }

    @Test func compareUsesEpochFirst() {
        let early = CMTime(value: 5, timescale: 1, flags: .valid, epoch: 0)
        let late = CMTime(value: 1, timescale: 1, flags: .valid, epoch: 1)
        #expect(CMTimeCompare(early, late) == -1)
        #expect(CMTimeCompare(late, early) == 1)
        #expect(late != CMTime(value: 1, timescale: 1))
    }

    @Test func equalTimesHashEqually() {
        let half = CMTime(value: 1, timescale: 2)
        let halves = [half, CMTime(value: 2, timescale: 4), CMTime(value: 300, timescale: 600),
            CMTime(value: 1, timescale: 2, flags: [.valid, .hasBeenRounded], epoch: 0)]
        for other in halves {
            #expect(other == half)
            #expect(other.hashValue == half.hashValue)
        }
        #expect(Set(halves).count == 1)
        let zeros = [CMTime.zero, CMTime(value: 0, timescale: 90_000), CMTime(value: 0, timescale: 7)]
        #expect(Set(zeros).count == 1)
        let invalids = [invalidTime, CMTime.invalid, CMTime(value: 3, timescale: 0), CMTime(value: 1, timescale: -5)]
        #expect(Set(invalids).count == 1)
        let infinities = [plusInfinity, CMTime(value: 9, timescale: 9, flags: [.valid, .positiveInfinity], epoch: 4)]
        #expect(Set(infinities).count == 1)
        let distinct: Set<CMTime> = [half, CMTime(value: 1, timescale: 3), CMTime(value: -1, timescale: 2),
            CMTime(value: 1, timescale: 2, flags: .valid, epoch: 1), .invalid, .indefinite, .positiveInfinity,
            .negativeInfinity]
        #expect(distinct.count == 8)
        #expect(CMTime(value: .min, timescale: 2).hashValue == CMTime(value: .min / 2, timescale: 1).hashValue)
    }

    @Test func minimumMaximumAbsoluteValue() {
        let a = CMTime(value: 1, timescale: 3)
        let b = CMTime(value: 1, timescale: 2)
        #expect(Fields(CMTimeMinimum(a, b)) == Fields(1, 3))
        #expect(Fields(CMTimeMaximum(a, b)) == Fields(1, 2))
        #expect(Fields(CMTimeMinimum(b, CMTime(value: 2, timescale: 4))) == Fields(1, 2))  // Ties: the first.
        #expect(Kind(CMTimeMaximum(a, invalidTime)) == .invalid)
        #expect(Kind(CMTimeMinimum(a, minusInfinity)) == .negativeInfinity)
        #expect(Fields(CMTimeAbsoluteValue(CMTime(value: -7, timescale: 3))) == Fields(7, 3))
        #expect(Fields(CMTimeAbsoluteValue(CMTime(value: 7, timescale: 3))) == Fields(7, 3))
        #expect(Kind(CMTimeAbsoluteValue(minusInfinity)) == .positiveInfinity)
        #expect(Kind(CMTimeAbsoluteValue(indefiniteTime)) == .indefinite)
        // |Int64.min| does not fit at timescale 2: halved to 1, exactly 2^62.
        #expect(Fields(CMTimeAbsoluteValue(CMTime(value: .min, timescale: 2))) == Fields(1 << 62, 1))
        #expect(Kind(CMTimeAbsoluteValue(CMTime(value: .min, timescale: 1))) == .positiveInfinity)
    }

    @Test func negation() {
        #expect(Fields(-CMTime(value: 5, timescale: 3, flags: [.valid, .hasBeenRounded], epoch: 2))
            == Fields(-5, 3, rounded: true, epoch: 2))
        #expect(Kind(-plusInfinity) == .negativeInfinity)
        #expect(Kind(-minusInfinity) == .positiveInfinity)
        #expect(Kind(-indefiniteTime) == .indefinite)
        #expect(Kind(-invalidTime) == .invalid)
    }

    @Test func descriptionMatchesApplesFormat() {
        #expect(CMTime(value: 1, timescale: 30).description == "{1/30 = 0.033}")
        #expect(CMTime(value: -1, timescale: 30).description == "{-1/30 = -0.033}")
        #expect(CMTime(value: 2, timescale: 3).description == "{2/3 = 0.667}")
        #expect(CMTime(value: 1, timescale: 2000).description == "{1/2000 = 0.001}")  // Half away from zero.
        #expect(CMTime(value: 12345, timescale: 1).description == "{12345/1 = 12345.000}")
        #expect(CMTime.zero.description == "{0/1 = 0.000}")
        #expect(CMTime(value: 1, timescale: 3, flags: [.valid, .hasBeenRounded], epoch: 2).description
            == "{1/3 = 0.333, rounded, epoch = 2}")
        #expect(CMTime.invalid.description == "{INVALID}")
        #expect(CMTime.indefinite.description == "{INDEFINITE}")
        #expect(CMTime.positiveInfinity.description == "{+INFINITY}")
        #expect(CMTime.negativeInfinity.description == "{-INFINITY}")
        #expect("\(CMTime(value: .max, timescale: 1_000_000_000))"
            == "{9223372036854775807/1000000000 = 9223372036.855}")
    }

    @Test func roundingMethodRawValuesAreApples() {
        #expect(CMTimeRoundingMethod.roundHalfAwayFromZero.rawValue == 1)
        #expect(CMTimeRoundingMethod.roundTowardZero.rawValue == 2)
        #expect(CMTimeRoundingMethod.roundAwayFromZero.rawValue == 3)
        #expect(CMTimeRoundingMethod.quickTime.rawValue == 4)
        #expect(CMTimeRoundingMethod.roundTowardPositiveInfinity.rawValue == 5)
        #expect(CMTimeRoundingMethod.roundTowardNegativeInfinity.rawValue == 6)
        #expect(CMTimeRoundingMethod.default == .roundHalfAwayFromZero)
    }
}
