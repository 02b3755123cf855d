/// An HTTP Date header (RFC 9110's IMF-fixdate, which Google sends: `Sun, 06 Nov 1994
/// 08:49:37 GMT`) as Unix seconds: the server's clock, for what must not hang on this machine's.
public enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let weekdays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]

    /// Unix seconds, or nil for anything but a well-formed IMF-fixdate from 1970 to 9999.
    public static func seconds(_ text: String) -> Int64? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0].count == 4, parts[0].last == ",", weekdays.contains(String(parts[0].dropLast())), parts[5] == "GMT",
              parts[1].count == 2, parts[3].count == 4, let day = number(parts[1]), let year = number(parts[3]), year >= 1970,
              let month = months.firstIndex(of: String(parts[2])).map({ Int64($0) + 1 }) else { return nil }
        let clock = parts[4].split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }), let hour = number(clock[0]), let minute = number(clock[1]), let second = number(clock[2]),
              hour < 24, minute < 60, second < 61, day >= 1, day <= daysIn(month, of: year) else { return nil }
        return daysSinceEpoch(year: year, month: month, day: day) * 86400 + hour * 3600 + minute * 60 + second
    }

    private static func number(_ text: Substring) -> Int64? {
        text.allSatisfy({ $0.isASCII && $0.isNumber }) ? Int64(text) : nil
    }

    private static func daysIn(_ month: Int64, of year: Int64) -> Int64 {
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][Int(month - 1)]
    }

    /// Days from 1970-01-01 to the date (Howard Hinnant's days_from_civil).
    private static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
