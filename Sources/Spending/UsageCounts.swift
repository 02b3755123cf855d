import Conversations

/// The tokens a key spent, by the kinds Google bills: the prompt (cached tokens are part of it,
/// billed at the cached rate), the tool-use prompt (Search, URL context), the answer and the
/// thinking (both billed as output), the requests they came in, and the Google Search queries
/// the model ran (billed per query past a monthly allowance).
public struct UsageCounts: Sendable, Equatable {
    public var requests = 0
    public var prompt = 0
    public var cached = 0
    public var toolUse = 0
    public var output = 0
    public var thoughts = 0
    public var searchQueries = 0

    public init(requests: Int = 0, prompt: Int = 0, cached: Int = 0, toolUse: Int = 0, output: Int = 0, thoughts: Int = 0, searchQueries: Int = 0) {
        self.requests = requests
        self.prompt = prompt
        self.cached = cached
        self.toolUse = toolUse
        self.output = output
        self.thoughts = thoughts
        self.searchQueries = searchQueries
    }

    /// No count goes above this, however many replies add up (or whatever a server claims):
    /// sums of four stay far from overflow and every count is exact as a Double.
    public static let limit = 1 << 50

    /// One reply's usage and search queries; counts Google left out are 0, and none is taken above 2^40.
    public init(_ usage: TokenUsage, searchQueries: Int = 0) {
        func count(_ value: Int?) -> Int { min(max(0, value ?? 0), 1 << 40) }
        self.init(requests: 1, prompt: count(usage.inputTokens), cached: count(usage.cachedInputTokens),
                  toolUse: count(usage.toolInputTokens), output: count(usage.outputTokens), thoughts: count(usage.thinkingTokens),
                  searchQueries: count(searchQueries))
    }

    public var total: Int { prompt + toolUse + output + thoughts }

    /// Adds counts, stopping at `limit`.
    public static func + (left: UsageCounts, right: UsageCounts) -> UsageCounts {
        func sum(_ a: Int, _ b: Int) -> Int { min(a + b, limit) }
        return UsageCounts(requests: sum(left.requests, right.requests), prompt: sum(left.prompt, right.prompt), cached: sum(left.cached, right.cached),
                           toolUse: sum(left.toolUse, right.toolUse), output: sum(left.output, right.output), thoughts: sum(left.thoughts, right.thoughts),
                           searchQueries: sum(left.searchQueries, right.searchQueries))
    }

    /// The fields in their stored order (version 2; version 1 stored the first six).
    var fields: [Int] { [requests, prompt, cached, toolUse, output, thoughts, searchQueries] }

    /// Six fields (version 1, no search queries) or seven.
    init?(fields: ArraySlice<Int>) {
        guard (6...7).contains(fields.count), fields.allSatisfy({ (0...Self.limit).contains($0) }) else { return nil }
        let values = Array(fields)
        self.init(requests: values[0], prompt: values[1], cached: values[2], toolUse: values[3], output: values[4], thoughts: values[5],
                  searchQueries: values.count == 7 ? values[6] : 0)
    }
}

/// A day in UTC, as days since 1970-01-01.
public struct UsageDay: Sendable, Hashable, Comparable {
    public let number: Int

    public init(number: Int) { self.number = number }
    public init(seconds: Int64) { number = Int((seconds >= 0 ? seconds : seconds - 86_399) / 86_400) }

    /// A civil date (Howard Hinnant's days-from-civil).
    public init(year: Int, month: Int, day: Int) {
        let shifted = month <= 2 ? year - 1 : year
        let era = (shifted >= 0 ? shifted : shifted - 399) / 400
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        number = era * 146_097 + dayOfEra - 719_468
    }

    /// `2027-01-01`; nil for anything else (a day the month lacks included).
    public init?(text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]), (1...12).contains(month), (1...31).contains(day) else { return nil }
        self.init(year: year, month: month, day: day)
        guard civil == (year, month, day) else { return nil }
    }

    public static func < (left: UsageDay, right: UsageDay) -> Bool { left.number < right.number }

    /// `2026-12-05` (the civil date of the proleptic Gregorian calendar).
    public var text: String {
        let (year, month, day) = civil
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day))"
    }

    /// The first day of this day's month.
    public var monthStart: UsageDay {
        let (_, _, day) = civil
        return UsageDay(number: number - (day - 1))
    }

    /// Howard Hinnant's days-to-civil algorithm.
    var civil: (year: Int, month: Int, day: Int) {
        let z = number + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPart = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPart + 2) / 5 + 1
        let month = monthPart < 10 ? monthPart + 3 : monthPart - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
