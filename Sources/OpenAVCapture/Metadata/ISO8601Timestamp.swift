/// ISO 8601 timestamps as container tags hold them (`2026-11-27T23:16:00Z`), written and read with the C library's
/// `gmtime_r` and `timegm`.
///
/// Why not Foundation's formatters: on Linux, `ISO8601DateFormatter` and `Date.ISO8601FormatStyle` build an ICU
/// calendar and time zone on first use, which maps about 6 MB of ICU's tables into the process (measured with
/// `/proc/PID/smaps` during `avcapture record`). Every recording writes a creation date and every asset read
/// parses one, so that was the price of a timestamp. Text in a form this parser does not know still goes to
/// `ISO8601DateFormatter` (see ``date(from:)``).
///
/// Threading: stateless; call from any thread.
enum ISO8601Timestamp {
    /// `date` in UTC to the second, as `ISO8601DateFormatter` writes it by default (`2026-11-27T23:16:00Z`).
    static func string(from date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var fields = tm()
        guard gmtime_r(&seconds, &fields) != nil else { return ISO8601DateFormatter().string(from: date) }
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02dZ", fields.tm_year + 1900, fields.tm_mon + 1, fields.tm_mday,
            fields.tm_hour, fields.tm_min, fields.tm_sec)
    }

    /// The date in `text`: `YYYY-MM-DDTHH:MM:SS`, optional fractional seconds, then `Z` or an offset (`+01:00`,
    /// `+0100`, `+01`); anything else as `ISO8601DateFormatter` reads it (with and without fractional seconds).
    static func date(from text: String) -> Date? {
        if let date = internetDateTime(Substring(text)) { return date }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }

    /// RFC 3339's date-time, read by hand; nil for anything else, including dates that do not exist (February 30).
    private static func internetDateTime(_ text: Substring) -> Date? {
        var rest = text.utf8[...]
        func number(_ digits: Int) -> Int? {
            let field = rest.prefix(digits)
            guard field.count == digits, field.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
            else { return nil }
            rest = rest.dropFirst(digits)
            return field.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        }
        func skip(_ character: Character) -> Bool {
            guard let first = rest.first, first == character.asciiValue else { return false }
            rest = rest.dropFirst()
            return true
        }
        guard let year = number(4), skip("-"), let month = number(2), skip("-"), let day = number(2),
            skip("T") || skip("t") || skip(" "), let hour = number(2), skip(":"), let minute = number(2), skip(":"),
            let second = number(2)
        else { return nil }
        var fraction = 0.0
        if skip(".") {
            let digits = rest.prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
            guard !digits.isEmpty, let value = Double("0." + String(decoding: digits, as: UTF8.self)) else {
                return nil
            }
            fraction = value
            rest = rest.dropFirst(digits.count)
        }
        // Seconds east of UTC: none for `Z`.
        var offset = 0
        if !(skip("Z") || skip("z")) {
            let west = skip("-")
            guard west || skip("+"), let hours = number(2), hours <= 23 else { return nil }
            var minutes = 0
            if !rest.isEmpty {
                _ = skip(":")
                guard let value = number(2), value <= 59 else { return nil }
                minutes = value
            }
            offset = (hours * 60 + minutes) * 60 * (west ? -1 : 1)
        }
        guard rest.isEmpty, (1...12).contains(month), (1...31).contains(day), hour <= 23, minute <= 59, second <= 60
        else { return nil }
        var fields = tm()
        fields.tm_year = Int32(year - 1900)
        fields.tm_mon = Int32(month - 1)
        fields.tm_mday = Int32(day)
        fields.tm_hour = Int32(hour)
        fields.tm_min = Int32(minute)
        fields.tm_sec = Int32(second)
        let seconds = timegm(&fields)
        // timegm moves a day that does not exist into the next month; such a date is refused, not moved.
        guard fields.tm_mday == Int32(day), fields.tm_mon == Int32(month - 1) else { return nil }
        return Date(timeIntervalSince1970: Double(seconds - offset) + fraction)
    }
}
