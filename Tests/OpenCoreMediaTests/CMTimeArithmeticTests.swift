import OpenCoreMedia
import Testing

@Suite("CMTime arithmetic: exact results, Apple's timescale rules, overflow, non-numeric operands")
struct CMTimeArithmeticTests {
    @Test func additionWithEqualTimescalesKeepsIt() {
        #expect(Fields(CMTime(value: 1, timescale: 30) + CMTime(value: 2, timescale: 30)) == Fields(3, 30))
        #expect(Fields(CMTime(value: 1, timescale: 30) - CMTime(value: 2, timescale: 30)) == Fields(-1, 30))
        var sum = CMTime(value: 1001, timescale: 30000)
        sum += CMTime(value: 1001, timescale: 30000)
        sum -= CMTime(value: 1, timescale: 30000)
        #expect(Fields(sum) == Fields(2001, 30000))
    }

    @Test func additionUsesTheLeastCommonMultiple() {
        // 1/3 + 1/6 = 2/6 + 1/6: the LCM (6), not the product (18), and not reduced to 1/2.
        #expect(Fields(CMTimeAdd(CMTime(value: 1, timescale: 3), CMTime(value: 1, timescale: 6))) == Fields(3, 6))
        // 1/30 + 1/1000 = 100/3000 + 3/3000.
        #expect(Fields(CMTime(value: 1, timescale: 30) + CMTime(value: 1, timescale: 1000)) == Fields(103, 3000))
        // 1/600 - 1/90000 = 150/90000 - 1/90000.
        #expect(Fields(CMTime(value: 1, timescale: 600) - CMTime(value: 1, timescale: 90000)) == Fields(149, 90000))
    }

    @Test func additionBeyondTheMaximumTimescaleRounds() {
        // LCM(2^31 - 1, 2) = 2^32 - 2 > kCMTimeMaxTimescale: the result is in 2^31 - 1 with default rounding.
        // 1/(2^31-1) + 1/2 = (2^31+1)/(2(2^31-1)) → at 2^31-1 the value is (2^31+1)/2 = 1073741824.5 → 1073741825.
        let sum = CMTime(value: 1, timescale: .max) + CMTime(value: 1, timescale: 2)
        #expect(Fields(sum) == Fields(1_073_741_825, .max, rounded: true))
        // Subtraction: 1/2 - 1/(2^31-1) → value (2^31-1)/2 - 1 = 1073741822.5 → 1073741823 (away from zero).
        let difference = CMTime(value: 1, timescale: 2) - CMTime(value: 1, timescale: .max)
        #expect(Fields(difference) == Fields(1_073_741_823, .max, rounded: true))
    }

    @Test func additionOverflowHalvesTheTimescale() {
        // (2^63-1)/4 + 1/4 = 2^63/4: overflows at 4, exact at 2 (2^62/2).
        #expect(Fields(CMTime(value: .max, timescale: 4) + CMTime(value: 1, timescale: 4)) == Fields(1 << 62, 2))
        // (2^63-1)/3 + 2/3 = (2^63+1)/3 = 3074457345618258603 exactly at timescale 1 (3 halves to 1).
        #expect(Fields(CMTime(value: .max, timescale: 3) + CMTime(value: 2, timescale: 3))
            == Fields(3_074_457_345_618_258_603, 1))
        // (2^63-1)/3 + 1/3 = 2^63/3 = 3074457345618258602.67 → rounded at timescale 1.
        #expect(Fields(CMTime(value: .max, timescale: 3) + CMTime(value: 1, timescale: 3))
            == Fields(3_074_457_345_618_258_603, 1, rounded: true))
        // Still overflowing at timescale 1: the infinity of the overflow's direction.
        #expect(Kind(CMTime(value: .max, timescale: 1) + CMTime(value: 1, timescale: 1)) == .positiveInfinity)
        #expect(Kind(CMTime(value: .min + 1, timescale: 1) - CMTime(value: 2, timescale: 1)) == .negativeInfinity)
        // Values are kept within ±Int64.max, so negation is always exact: -(2^63) is an overflow.
        #expect(Kind(CMTime(value: -Int64.max, timescale: 1) - CMTime(value: 1, timescale: 1)) == .negativeInfinity)
        #expect(Fields(CMTime(value: .max, timescale: 1) - CMTime(value: 1, timescale: 1)) == Fields(.max - 1, 1))
    }

    @Test func roundingIsInherited() {
        let rounded = CMTime(value: 1, timescale: 3, flags: [.valid, .hasBeenRounded], epoch: 0)
        #expect(Fields(rounded + CMTime(value: 1, timescale: 3)) == Fields(2, 3, rounded: true))
        #expect(Fields(CMTime(value: 1, timescale: 2) - rounded) == Fields(1, 6, rounded: true))
        #expect(Fields(rounded * Int32(2)) == Fields(2, 3, rounded: true))
        #expect(Fields(CMTimeMultiplyByRatio(rounded, multiplier: 1, divisor: 1)) == Fields(1, 3, rounded: true))
    }

    @Test func epochs() {
        let timestamp = CMTimeMakeWithEpoch(value: 10, timescale: 1, epoch: 2)
        let duration = CMTime(value: 3, timescale: 1)
        #expect(Fields(timestamp + duration) == Fields(13, 1, epoch: 2))
        #expect(Fields(duration + timestamp) == Fields(13, 1, epoch: 2))
        #expect(Fields(timestamp - duration) == Fields(7, 1, epoch: 2))
        // Same nonzero epoch: the difference (and, by Apple's rule, the sum) is a duration in epoch 0.
        #expect(Fields(timestamp - CMTimeMakeWithEpoch(value: 4, timescale: 1, epoch: 2)) == Fields(6, 1))
        #expect(Fields(timestamp + CMTimeMakeWithEpoch(value: 4, timescale: 2, epoch: 2)) == Fields(24, 2))
        // Different nonzero epochs cannot be combined.
        #expect(Kind(timestamp + CMTimeMakeWithEpoch(value: 1, timescale: 1, epoch: 3)) == .invalid)
        #expect(Kind(timestamp - CMTimeMakeWithEpoch(value: 1, timescale: 1, epoch: 3)) == .invalid)
    }

    /// The expected kind of `lhs ± rhs` for every pair of kinds, from Apple's documentation of CMTimeAdd and
    /// CMTimeSubtract.
    static let kinds: [(CMTime, Kind)] = [
        (numericOne, .numeric), (plusInfinity, .positiveInfinity), (minusInfinity, .negativeInfinity),
        (indefiniteTime, .indefinite), (invalidTime, .invalid),
    ]

    static func expectedSum(_ lhs: Kind, _ rhs: Kind, subtracting: Bool) -> Kind {
        if lhs == .invalid || rhs == .invalid { return .invalid }
        let flippedRhs: Kind
        switch rhs {
        case .positiveInfinity: flippedRhs = subtracting ? .negativeInfinity : .positiveInfinity
        case .negativeInfinity: flippedRhs = subtracting ? .positiveInfinity : .negativeInfinity
        default: flippedRhs = rhs
        }
        let lhsInfinite = lhs == .positiveInfinity || lhs == .negativeInfinity
        let rhsInfinite = flippedRhs == .positiveInfinity || flippedRhs == .negativeInfinity
        if lhsInfinite && rhsInfinite { return lhs == flippedRhs ? lhs : .invalid }
        if lhsInfinite { return lhs }
        if rhsInfinite { return flippedRhs }
        if lhs == .indefinite || rhs == .indefinite { return .indefinite }
        return .numeric
    }

    @Test func everyCombinationOfKindsForAdditionAndSubtraction() {
        var checked = 0
        for (lhs, lhsKind) in Self.kinds {
            for (rhs, rhsKind) in Self.kinds {
                #expect(Kind(lhs + rhs) == Self.expectedSum(lhsKind, rhsKind, subtracting: false),
                    "\(lhsKind) + \(rhsKind)")
                #expect(Kind(lhs - rhs) == Self.expectedSum(lhsKind, rhsKind, subtracting: true),
                    "\(lhsKind) - \(rhsKind)")
                checked += 1
            }
        }
        #expect(checked == 25)
        // Spot checks of Apple's four documented infinity rules.
        #expect(Kind(plusInfinity + minusInfinity) == .invalid)
        #expect(Kind(plusInfinity - plusInfinity) == .invalid)
        #expect(Kind(plusInfinity - minusInfinity) == .positiveInfinity)
        #expect(Kind(minusInfinity - plusInfinity) == .negativeInfinity)
        #expect(Kind(indefiniteTime + plusInfinity) == .positiveInfinity)
        #expect(Kind(numericOne - plusInfinity) == .negativeInfinity)
    }

    @Test(arguments: [Int32(2), -2, 0])
    func everyKindForMultiplication(multiplier: Int32) {
        let product = numericOne * multiplier
        #expect(Kind(product) == .numeric && product.value == Int64(multiplier) && product.timescale == 1)
        #expect(Kind(plusInfinity * multiplier) == (multiplier < 0 ? .negativeInfinity : .positiveInfinity))
        #expect(Kind(minusInfinity * multiplier) == (multiplier < 0 ? .positiveInfinity : .negativeInfinity))
        #expect(Kind(indefiniteTime * multiplier) == .indefinite)
        #expect(Kind(invalidTime * multiplier) == .invalid)
        #expect(Kind(CMTimeMultiplyByRatio(plusInfinity, multiplier: multiplier, divisor: 3))
            == (multiplier < 0 ? .negativeInfinity : .positiveInfinity))
        #expect(Kind(CMTimeMultiplyByRatio(indefiniteTime, multiplier: multiplier, divisor: 3)) == .indefinite)
        #expect(Kind(CMTimeMultiplyByRatio(invalidTime, multiplier: multiplier, divisor: 3)) == .invalid)
        let floatMultiplier = Double(multiplier)
        #expect(Kind(plusInfinity * floatMultiplier) == (multiplier < 0 ? .negativeInfinity : .positiveInfinity))
        #expect(Kind(indefiniteTime * floatMultiplier) == .indefinite)
        #expect(Kind(invalidTime * floatMultiplier) == .invalid)
    }

    @Test func multiplicationKeepsTimescaleAndHalvesOnOverflow() {
        #expect(Fields(CMTimeMultiply(CMTime(value: 1001, timescale: 30000), multiplier: 3)) == Fields(3003, 30000))
        #expect(Fields(Int32(-4) * CMTimeMakeWithEpoch(value: 3, timescale: 7, epoch: 5)) == Fields(-12, 7, epoch: 5))
        var time = CMTime(value: 5, timescale: 9)
        time *= Int32(3)
        #expect(Fields(time) == Fields(15, 9))
        // 2^62/4 × 4 = 2^64/4: overflows at 4 and at 2 (2^63), exact at 1 (2^62).
        #expect(Fields(CMTime(value: 1 << 62, timescale: 4) * Int32(4)) == Fields(1 << 62, 1))
        // (2^62+1)/3 × 3 = 2^62+1 exactly: overflows at 3, halved to 1, exact.
        #expect(Fields(CMTime(value: (1 << 62) + 1, timescale: 3) * Int32(3)) == Fields((1 << 62) + 1, 1))
        // (2^62+1)/3 × 2 = (2^63+2)/3 s: overflows at 3, and at 1 is 3074457345618258603.33 → rounded.
        #expect(Fields(CMTime(value: (1 << 62) + 1, timescale: 3) * Int32(2))
            == Fields(3_074_457_345_618_258_603, 1, rounded: true))
        #expect(Kind(CMTime(value: .max, timescale: 1) * Int32(2)) == .positiveInfinity)
        #expect(Kind(CMTime(value: .max, timescale: 1) * Int32.min) == .negativeInfinity)
        #expect(Fields(CMTime(value: .max, timescale: 1) * Int32(-1)) == Fields(-Int64.max, 1))
    }

    @Test func multiplyByRatioIsExact() {
        #expect(Fields(CMTimeMultiplyByRatio(CMTime(value: 1, timescale: 30), multiplier: 1, divisor: 2))
            == Fields(1, 60))
        #expect(Fields(CMTimeMultiplyByRatio(CMTime(value: 10, timescale: 30), multiplier: 1, divisor: 2))
            == Fields(5, 30))
        #expect(Fields(CMTimeMultiplyByRatio(CMTime(value: 7, timescale: 30), multiplier: 2, divisor: 3))
            == Fields(14, 90))
        #expect(Fields(CMTimeMultiplyByRatio(CMTime(value: 1, timescale: 30), multiplier: 1, divisor: -2))
            == Fields(-1, 60))
        #expect(Fields(CMTimeMultiplyByRatio(CMTime(value: -3, timescale: 4), multiplier: -5, divisor: 6))
            == Fields(5, 8))
        #expect(Fields(CMTimeMultiplyByRatio(CMTimeMakeWithEpoch(value: 9, timescale: 10, epoch: 4), multiplier: 0,
            divisor: 7)) == Fields(0, 10, epoch: 4))
        // 1 s of host time on a clock 100 ppm fast: 10^9 ns × 1000100/1000000 = 1000100000 ns, exact.
        #expect(Fields(CMTimeMultiplyByRatio(CMTime(value: 1_000_000_000, timescale: 1_000_000_000),
            multiplier: 1_000_100, divisor: 1_000_000)) == Fields(1_000_100_000, 1_000_000_000))
        // The divisor divides value × multiplier, so the timescale is kept: 3/(2^31-1) × (2^31-1)/3.
        #expect(Fields(CMTimeMultiplyByRatio(CMTime(value: 3, timescale: .max), multiplier: .max, divisor: 3))
            == Fields(Int64(Int32.max), .max))
        // The un-reduced timescale 4 × 2^30 × 3 is too large; the reduced fraction fits: 2^30/(2^30) × 1/3 → 1/3.
        #expect(Fields(CMTimeMultiplyByRatio(CMTime(value: 1 << 30, timescale: 1 << 30), multiplier: 2, divisor: 6))
            == Fields(1, 3))
    }

    @Test func multiplyByRatioRoundsOnlyWhenItMust() {
        // 1/(2^31-1) × 1/2 = 1/(2^32-2): the denominator does not fit; the finest timescale is 2^31-1, where the
        // value is exactly 1/2 → 1 (half away from zero).
        #expect(Fields(CMTimeMultiplyByRatio(CMTime(value: 1, timescale: .max), multiplier: 1, divisor: 2))
            == Fields(1, .max, rounded: true))
        // (2^63-1)/2 × 3/2 = 3(2^63-1)/4 = 6917529027641081855.25 s: only timescale 1 fits.
        #expect(Fields(CMTimeMultiplyByRatio(CMTime(value: .max, timescale: 2), multiplier: 3, divisor: 2))
            == Fields(6_917_529_027_641_081_855, 1, rounded: true))
        #expect(Kind(CMTimeMultiplyByRatio(CMTime(value: .max, timescale: 1), multiplier: 2, divisor: 1))
            == .positiveInfinity)
        #expect(Kind(CMTimeMultiplyByRatio(CMTime(value: .max, timescale: 1), multiplier: .max, divisor: -1))
            == .negativeInfinity)
    }

    @Test func multiplyByRatioWithZeroDivisor() {
        #expect(Kind(CMTimeMultiplyByRatio(CMTime(value: 1, timescale: 1), multiplier: 1, divisor: 0))
            == .positiveInfinity)
        #expect(Kind(CMTimeMultiplyByRatio(CMTime(value: -1, timescale: 1), multiplier: 1, divisor: 0))
            == .negativeInfinity)
        #expect(Kind(CMTimeMultiplyByRatio(CMTime(value: 1, timescale: 1), multiplier: -1, divisor: 0))
            == .negativeInfinity)
        #expect(Kind(CMTimeMultiplyByRatio(CMTime(value: 0, timescale: 1), multiplier: 1, divisor: 0)) == .invalid)
        #expect(Kind(CMTimeMultiplyByRatio(CMTime(value: 1, timescale: 1), multiplier: 0, divisor: 0)) == .invalid)
        #expect(Kind(CMTimeMultiplyByRatio(minusInfinity, multiplier: 2, divisor: 0)) == .negativeInfinity)
    }

    @Test func multiplyByFloat64() {
        // 1/30 × 2.0: timescale 30 doubled to 122880 (≥ 65536); 1/30 × 2 = 8192/122880 exactly.
        #expect(Fields(CMTime(value: 1, timescale: 30) * 2.0) == Fields(8192, 122_880))
        #expect(Fields(0.5 * CMTime(value: 1, timescale: 3)) == Fields(16384, 98304))
        // 0.1 is 3602879701896397 / 2^55; × 65536 = 6553.6000000000003638 → 6554, rounded.
        #expect(Fields(CMTimeMultiplyByFloat64(CMTime(value: 1, timescale: 1), multiplier: 0.1))
            == Fields(6554, 65536, rounded: true))
        #expect(Fields(CMTime(value: 3, timescale: 1_000_000_000) * -1.5) == Fields(-5, 1_000_000_000, rounded: true))
        #expect(Fields(CMTime(value: 2, timescale: 1_000_000_000) * -1.5) == Fields(-3, 1_000_000_000))
        var time = CMTime(value: 90_000, timescale: 90_000)
        time *= 0.25
        #expect(Fields(time) == Fields(22_500, 90_000))
        #expect(Kind(CMTime(value: 1, timescale: 1) * Double.nan) == .invalid)
        #expect(Kind(CMTime(value: 1, timescale: 1) * -Double.infinity) == .negativeInfinity)
        #expect(Kind(CMTime.zero * Double.infinity) == .invalid)
        #expect(Kind(CMTime(value: .max, timescale: 1) * 2.0) == .positiveInfinity)
        // (2^63-1)/65536 × 0.5: exact at 65536 ((2^63-1)/2 = 4611686018427387903.5 → rounded up).
        #expect(Fields(CMTime(value: .max, timescale: 65536) * 0.5)
            == Fields(4_611_686_018_427_387_904, 65536, rounded: true))
    }
}
