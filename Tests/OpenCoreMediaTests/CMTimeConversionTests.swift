import OpenCoreMedia
import Testing

@Suite("CMTimeConvertScale: every rounding method, signs, halves, overflow")
struct CMTimeConversionTests {
    /// A conversion and its expected value under each method, in the order halfAway, towardZero, awayFromZero,
    /// quickTime, towardPositiveInfinity, towardNegativeInfinity. Derived by hand from value × new / old.
    struct Case: CustomStringConvertible, Sendable {
        var value: Int64
        var timescale: Int32
        var newTimescale: Int32
        var expected: [Int64]
        var description: String { "\(value)/\(timescale) → /\(newTimescale)" }
    }

    static let methods: [CMTimeRoundingMethod] = [
        .roundHalfAwayFromZero, .roundTowardZero, .roundAwayFromZero, .quickTime, .roundTowardPositiveInfinity,
        .roundTowardNegativeInfinity,
    ]

    static let cases: [Case] = [
        // 2.5: an exact half.
        Case(value: 5, timescale: 2, newTimescale: 1, expected: [3, 2, 3, 2, 3, 2]),
        Case(value: -5, timescale: 2, newTimescale: 1, expected: [-3, -2, -3, -2, -2, -3]),
        // 1.75 and -1.75.
        Case(value: 7, timescale: 4, newTimescale: 1, expected: [2, 1, 2, 1, 2, 1]),
        Case(value: -7, timescale: 4, newTimescale: 1, expected: [-2, -1, -2, -1, -1, -2]),
        // 0.25 and -0.25: QuickTime never rounds a negative time to zero.
        Case(value: 1, timescale: 4, newTimescale: 1, expected: [0, 0, 1, 0, 1, 0]),
        Case(value: -1, timescale: 4, newTimescale: 1, expected: [0, 0, -1, -1, 0, -1]),
        // 1001/30000 s to 600: 20.02 and -20.02.
        Case(value: 1001, timescale: 30000, newTimescale: 600, expected: [20, 20, 21, 20, 21, 20]),
        Case(value: -1001, timescale: 30000, newTimescale: 600, expected: [-20, -20, -21, -20, -20, -21]),
        // To a larger timescale: 1/3 s to 10 is 3.33…; QuickTime rounds away from zero.
        Case(value: 1, timescale: 3, newTimescale: 10, expected: [3, 3, 4, 4, 4, 3]),
        Case(value: -1, timescale: 3, newTimescale: 10, expected: [-3, -3, -4, -4, -3, -4]),
        // 2/3 s to 10 is 6.67.
        Case(value: 2, timescale: 3, newTimescale: 10, expected: [7, 6, 7, 7, 7, 6]),
        // Exact: no rounding under any method.
        Case(value: 1, timescale: 2, newTimescale: 48000, expected: [24000, 24000, 24000, 24000, 24000, 24000]),
        Case(value: -3, timescale: 90000, newTimescale: 30000, expected: [-1, -1, -1, -1, -1, -1]),
        // Int64.max ns to seconds: 9223372036.854775807.
        Case(value: .max, timescale: 1_000_000_000, newTimescale: 1,
            expected: [9_223_372_037, 9_223_372_036, 9_223_372_037, 9_223_372_036, 9_223_372_037, 9_223_372_036]),
        Case(value: -.max, timescale: 1_000_000_000, newTimescale: 1,
            expected: [-9_223_372_037, -9_223_372_036, -9_223_372_037, -9_223_372_036, -9_223_372_036,
                -9_223_372_037]),
        // Int64.max × (2^31-2)/(2^31-1) = 9223372032559808508 + (2^31-2)/(2^31-1): just below the next integer.
        Case(value: .max, timescale: .max, newTimescale: .max - 1,
            expected: [9_223_372_032_559_808_509, 9_223_372_032_559_808_508, 9_223_372_032_559_808_509,
                9_223_372_032_559_808_508, 9_223_372_032_559_808_509, 9_223_372_032_559_808_508]),
        // 1/(2^31-1) s to ns: 0.4657 ns.
        Case(value: 1, timescale: .max, newTimescale: 1_000_000_000, expected: [0, 0, 1, 0, 1, 0]),
        Case(value: -1, timescale: .max, newTimescale: 1_000_000_000, expected: [0, 0, -1, -1, 0, -1]),
    ]

    @Test(arguments: cases)
    func eachRoundingMethod(_ testCase: Case) {
        let time = CMTime(value: testCase.value, timescale: testCase.timescale)
        let exact = Int128(testCase.value) * Int128(testCase.newTimescale) % Int128(testCase.timescale) == 0
        for (method, expected) in zip(Self.methods, testCase.expected) {
            let converted = CMTimeConvertScale(time, timescale: testCase.newTimescale, method: method)
            #expect(Fields(converted) == Fields(expected, testCase.newTimescale, rounded: !exact), "\(method)")
            #expect(Fields(time.convertScale(testCase.newTimescale, method: method)) == Fields(converted))
        }
    }

    @Test func keepsEpochAndRoundedFlag() {
        let time = CMTime(value: 10, timescale: 4, flags: [.valid, .hasBeenRounded], epoch: 6)
        #expect(Fields(CMTimeConvertScale(time, timescale: 2, method: .default))
            == Fields(5, 2, rounded: true, epoch: 6))
        let same = CMTime(value: 7, timescale: 3, flags: .valid, epoch: 1)
        #expect(Fields(CMTimeConvertScale(same, timescale: 3, method: .roundAwayFromZero)) == Fields(same))
    }

    @Test func overflowGivesInfinity() {
        #expect(Kind(CMTimeConvertScale(CMTime(value: .max, timescale: 1), timescale: 2, method: .default))
            == .positiveInfinity)
        #expect(Kind(CMTimeConvertScale(CMTime(value: .min + 1, timescale: 1), timescale: .max, method: .quickTime))
            == .negativeInfinity)
        // Just fits: (2^62)/1 to 2 is 2^63 > Int64.max, (2^62 - 1)/1 to 2 is 2^63 - 2.
        #expect(Kind(CMTimeConvertScale(CMTime(value: 1 << 62, timescale: 1), timescale: 2, method: .default))
            == .positiveInfinity)
        #expect(Fields(CMTimeConvertScale(CMTime(value: (1 << 62) - 1, timescale: 1), timescale: 2, method: .default))
            == Fields(Int64.max - 1, 2))
        // (2^63-1)/2 s is 4.6e18 s; at timescale 3 that is 1.4e19 units, beyond Int64.
        #expect(Kind(CMTimeConvertScale(CMTime(value: .max, timescale: 2), timescale: 3, method: .roundAwayFromZero))
            == .positiveInfinity)
    }

    @Test func nonNumericTimesAndBadTimescales() {
        #expect(Kind(CMTimeConvertScale(plusInfinity, timescale: 600, method: .default)) == .positiveInfinity)
        #expect(Kind(CMTimeConvertScale(minusInfinity, timescale: 600, method: .default)) == .negativeInfinity)
        #expect(Kind(CMTimeConvertScale(indefiniteTime, timescale: 600, method: .default)) == .indefinite)
        #expect(Kind(CMTimeConvertScale(invalidTime, timescale: 600, method: .default)) == .invalid)
        #expect(Kind(CMTimeConvertScale(CMTime(value: 1, timescale: 1), timescale: 0, method: .default)) == .invalid)
        #expect(Kind(CMTimeConvertScale(CMTime(value: 1, timescale: 1), timescale: -3, method: .default)) == .invalid)
        #expect(Kind(CMTimeConvertScale(CMTime(value: 1, timescale: 0), timescale: 3, method: .default)) == .invalid)
    }
}
