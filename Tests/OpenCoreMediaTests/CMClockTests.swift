#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import OpenCoreMedia
import Testing

private func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

private func ns(_ value: Int64) -> CMTime { CMTime(value: value, timescale: 1_000_000_000) }

@Suite("CMClock and CMSyncConvertTime")
struct CMClockTests {
    @Test func hostClockIsCLOCK_MONOTONICInNanoseconds() {
        #expect(CMClockGetHostTimeClock() === CMClock.hostTimeClock)
        let before = monotonicNanoseconds()
        let time = CMClockGetTime(.hostTimeClock)
        let after = monotonicNanoseconds()
        #expect(time.timescale == 1_000_000_000 && time.isNumeric && !time.hasBeenRounded && time.epoch == 0)
        #expect(before <= time.value && time.value <= after)
        let property = CMClock.hostTimeClock.time
        #expect(after <= property.value)
        let sync = CMSyncGetTime(.hostTimeClock)
        #expect(property.value <= sync.value && sync.value <= monotonicNanoseconds())
    }

    @Test func hostClockIsMonotonic() {
        var previous = CMClock.hostTimeClock.time
        for _ in 0..<10_000 {
            let next = CMClock.hostTimeClock.time
            #expect(previous.value <= next.value)
            previous = next
        }
    }

    @Test func hostTimeHelpers() {
        #expect(Fields(CMClock.hostTime(nanoseconds: 42)) == Fields(42, 1_000_000_000))
        #expect(Fields(CMClock.hostTime(timespec(tv_sec: 3, tv_nsec: 500))) == Fields(3_000_000_500, 1_000_000_000))
        #expect(Kind(CMClock.hostTime(timespec(tv_sec: .max, tv_nsec: 0))) == .positiveInfinity)
        let before = monotonicNanoseconds()
        let now = CMClock.hostTimeNow
        #expect(before <= now.value && now.value <= monotonicNanoseconds())
        #expect(CMClockConvertHostTimeToSystemUnits(ns(123_456_789)) == 123_456_789)
        #expect(CMClockConvertHostTimeToSystemUnits(CMTime(value: 3, timescale: 2)) == 1_500_000_000)
        #expect(CMClockConvertHostTimeToSystemUnits(.invalid) == 0)
        #expect(Fields(CMClockMakeHostTimeFromSystemUnits(987)) == Fields(987, 1_000_000_000))
        #expect(Kind(CMClockMakeHostTimeFromSystemUnits(.max)) == .positiveInfinity)
    }

    @Test func affineClockConvertsExactly() {
        // +100 ppm: clock = 5 s + (host - 1000 s) × 1.0001.
        let device = CMClock(
            name: "mic", rateMultiplier: 1_000_100, rateDivisor: 1_000_000, anchorHostTime: ns(1_000_000_000_000),
            anchorClockTime: ns(5_000_000_000))
        let host = CMClock.hostTimeClock
        // 1 s of host time after the anchor is 1.0001 s of device time: exactly 6_000_100_000 ns.
        #expect(Fields(CMSyncConvertTime(ns(1_001_000_000_000), from: host, to: device)) == Fields(6_000_100_000,
            1_000_000_000))
        #expect(Fields(CMSyncConvertTime(ns(6_000_100_000), from: device, to: host)) == Fields(1_001_000_000_000,
            1_000_000_000))
        // The anchor maps to the anchor.
        #expect(Fields(CMSyncConvertTime(ns(1_000_000_000_000), from: host, to: device)) == Fields(5_000_000_000,
            1_000_000_000))
        // 1 host ns is 1.0001 device ns: rounded to 1, and flagged.
        #expect(Fields(CMSyncConvertTime(ns(1_000_000_000_001), from: host, to: device))
            == Fields(5_000_000_001, 1_000_000_000, rounded: true))
        // 1 device ns is 0.99990001 host ns: rounded to 1, and flagged.
        #expect(Fields(device.convertTime(ns(5_000_000_001), to: host))
            == Fields(1_000_000_000_001, 1_000_000_000, rounded: true))
        // 5000 host ns before the anchor: -5000.5 device ns, half away from zero → -5001.
        #expect(Fields(CMSyncConvertTime(ns(999_999_995_000), from: host, to: device))
            == Fields(4_999_994_999, 1_000_000_000, rounded: true))
        // Any input timescale: 1/3 s after the anchor, in host time, is 1.0001/3 s = 333366666.67 ns → …667.
        let third = CMTime(value: 3_001, timescale: 3)  // 1000 s + 1/3 s.
        #expect(Fields(CMSyncConvertTime(third, from: host, to: device))
            == Fields(5_333_366_667, 1_000_000_000, rounded: true))
    }

    @Test func convertsBetweenTwoDeviceClocksThroughHostTime() {
        let fast = CMClock(name: "a", partsPerMillion: 100, anchorHostTime: .zero, anchorClockTime: .zero)
        let slow = CMClock(
            name: "b", partsPerMillion: -50, anchorHostTime: .zero, anchorClockTime: CMTime(value: 10, timescale: 1))
        // 1.0001 s on the fast clock is host 1 s, which is 10 s + 0.99995 s on the slow clock.
        #expect(Fields(CMSyncConvertTime(ns(1_000_100_000), from: fast, to: slow))
            == Fields(10_999_950_000, 1_000_000_000))
        #expect(Fields(CMSyncConvertTime(ns(10_999_950_000), from: slow, to: fast)) == Fields(1_000_100_000,
            1_000_000_000))
        // Composed exactly, rounded once: 1 ns on the fast clock is 0.99995/1.0001 = 0.99985… ns on the slow one.
        #expect(Fields(CMSyncConvertTime(ns(1), from: fast, to: slow)) == Fields(10_000_000_001, 1_000_000_000,
            rounded: true))
        #expect(fast.affineMap == CMClock.AffineMap(anchorHostNanoseconds: 0, anchorClockNanoseconds: 0,
            rateMultiplier: 1_000_100, rateDivisor: 1_000_000))
    }

    @Test func identityAndNonNumericConversions() {
        let device = CMClock(name: "d", partsPerMillion: 7, anchorHostTime: .zero, anchorClockTime: .zero)
        let odd = CMTime(value: 1, timescale: 3, flags: .valid, epoch: 4)
        #expect(Fields(CMSyncConvertTime(odd, from: device, to: device)) == Fields(odd))
        #expect(Fields(CMSyncConvertTime(odd, from: .hostTimeClock, to: .hostTimeClock)) == Fields(odd))
        #expect(Kind(CMSyncConvertTime(.positiveInfinity, from: .hostTimeClock, to: device)) == .positiveInfinity)
        #expect(Kind(CMSyncConvertTime(.negativeInfinity, from: device, to: .hostTimeClock)) == .negativeInfinity)
        #expect(Kind(CMSyncConvertTime(.indefinite, from: device, to: .hostTimeClock)) == .indefinite)
        #expect(Kind(CMSyncConvertTime(.invalid, from: device, to: .hostTimeClock)) == .invalid)
        #expect(Kind(CMSyncConvertTime(CMTime(value: .max, timescale: 1), from: .hostTimeClock, to: device))
            == .positiveInfinity)
        // The epoch is kept.
        #expect(CMSyncConvertTime(odd, from: .hostTimeClock, to: device).epoch == 4)
    }

    @Test func deviceClockTimeIsItsFunctionOfHostTimeNow() {
        let device = CMClock(
            name: "mic", rateMultiplier: 1_000_100, rateDivisor: 1_000_000, anchorHostTime: CMClock.hostTimeNow,
            anchorClockTime: CMTime(value: 100, timescale: 1))
        let before = CMSyncConvertTime(CMClock.hostTimeNow, from: .hostTimeClock, to: device)
        let time = CMClockGetTime(device)
        let after = CMSyncConvertTime(CMClock.hostTimeNow, from: .hostTimeClock, to: device)
        #expect(time.timescale == 1_000_000_000)
        #expect(before <= time && time <= after)
        #expect(time.value >= 100_000_000_000)
    }

    @Test func reanchoringIsThreadSafe() async {
        let device = CMClock(name: "drifting", partsPerMillion: 0, anchorHostTime: .zero, anchorClockTime: .zero)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for step in 0..<500 {
                if worker == 0 {
                    device.reanchor(
                        rateMultiplier: 1_000_000 + Int32(step % 3), rateDivisor: 1_000_000, anchorHostTime: .zero,
                        anchorClockTime: .zero)
                } else {
                    let converted = CMSyncConvertTime(ns(1_000_000), from: .hostTimeClock, to: device)
                    // 1 ms at a rate of 1, 1.000001 or 1.000002: 1_000_000, 1_000_001 or 1_000_002 ns.
                    #expect((1_000_000...1_000_002).contains(converted.value))
                }
            }
        }
        device.reanchor(rateMultiplier: 2, rateDivisor: 1, anchorHostTime: .zero, anchorClockTime: .zero)
        #expect(Fields(CMSyncConvertTime(ns(21), from: .hostTimeClock, to: device)) == Fields(42, 1_000_000_000))
    }
}
