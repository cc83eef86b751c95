import Foundation
import Testing

@testable import OpenAVCapture

/// The creation dates files are written and read with, checked against Foundation's `ISO8601DateFormatter`, whose
/// ICU tables the timestamp avoids loading.
@Suite struct ISO8601TimestampTests {
    /// Dates from 1900 to 2100, whole seconds: written as Foundation writes them, read back to the same instant.
    @Test func writesWhatFoundationWritesAndReadsItBack() {
        let foundation = ISO8601DateFormatter()
        var generator = SystemRandomNumberGenerator()
        let dates =
            [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: -1), Date(timeIntervalSince1970: 951_782_400)]
            + (0..<500).map { _ in
                Date(timeIntervalSince1970: Double(Int64.random(in: -2_208_988_800...4_102_444_800, using: &generator)))
            }
        for date in dates {
            let text = ISO8601Timestamp.string(from: date)
            #expect(text == foundation.string(from: date))
            #expect(ISO8601Timestamp.date(from: text) == date, "\(text)")
        }
        // A fraction of a second is dropped, as Foundation's default options drop it.
        #expect(ISO8601Timestamp.string(from: Date(timeIntervalSince1970: 1.75)) == "1970-01-01T00:00:01Z")
    }

    /// Offsets, fractions, the forms files hold and text that is no date: read as Foundation reads them (including
    /// what Foundation is lenient about, such as February 30 or text after the zone; those go to it).
    @Test(arguments: [
        "2026-11-27T23:16:00Z", "2026-11-27T23:16:00.250Z", "2026-11-27T23:16:00.000000Z", "2026-11-28T00:16:00+01:00",
        "2026-11-27T18:46:00-04:30", "2000-02-29T12:00:00Z", "1969-12-31T23:59:59Z", "2026-02-30T00:00:00Z",
        "2026-13-01T00:00:00Z", "2026-11-27T24:00:00Z", "2026-11-27T23:16:00", "2026-11-27", "yesterday", "",
        "2026-11-27T23:16:00.Z", "2026-11-27T23:16:00Zjunk",
    ])
    func readsWhatFoundationReads(_ text: String) {
        let plain = ISO8601DateFormatter()
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let expected = plain.date(from: text) ?? fractional.date(from: text)
        let read = ISO8601Timestamp.date(from: text)
        #expect((read == nil) == (expected == nil), "\(String(describing: read)) \(String(describing: expected))")
        if let read, let expected { #expect(abs(read.timeIntervalSince(expected)) < 1e-6, "\(read) \(expected)") }
    }

    @Test func offsetsWithoutAColonOrMinutes() {
        let utc = ISO8601Timestamp.date(from: "2026-11-27T23:16:00Z")
        #expect(utc != nil)
        #expect(ISO8601Timestamp.date(from: "2026-11-28T00:16:00+0100") == utc)
        #expect(ISO8601Timestamp.date(from: "2026-11-28T01:16:00+02") == utc)
    }
}
