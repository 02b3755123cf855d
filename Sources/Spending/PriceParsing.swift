import FoundationEssentials

/// The `prices` setting and prices files: models with one price or with periods.
extension PriceTable {
    public enum ParseError: Error, Equatable {
        case invalid(String)
    }

    /// The `prices` setting: `MODEL=INPUT/OUTPUT[/CACHED[/SEARCH]][@FROM..TO]` entries separated
    /// by commas, with an optional `currency=EUR`; a model given twice with different days has
    /// periods (`@..2026-12-31`, `@2027-01-01..`). Or, read by the caller, a JSON file of the
    /// same (`parse(json:)`). Models it names replace the built-in ones; the others keep theirs
    /// only in the same currency.
    public static func parse(setting text: String, origin: String) throws(ParseError) -> PriceTable {
        var currency = "USD"
        var periods: [String: [PricePeriod]] = [:]
        for entry in text.split(separator: ",").map({ String($0).trimmedWhitespace }) where !entry.isEmpty {
            let pair = entry.split(separator: "=", maxSplits: 1).map { String($0).trimmedWhitespace }
            guard pair.count == 2, !pair[0].isEmpty else { throw .invalid("'\(entry)' is not MODEL=INPUT/OUTPUT[/CACHED[/SEARCH]][@FROM..TO]") }
            if pair[0] == "currency" {
                currency = try checkedCurrency(pair[1])
                continue
            }
            let halves = pair[1].split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).map { String($0).trimmedWhitespace }
            let numbers = halves[0].split(separator: "/").map { Double($0) }
            guard (2...4).contains(numbers.count), let input = numbers[0], let output = numbers[1], numbers.allSatisfy({ $0.map(isPrice) ?? false }) else {
                throw .invalid("'\(entry)': the prices are INPUT/OUTPUT[/CACHED[/SEARCH]], numbers from 0 to 1000000 per million tokens (SEARCH: per 1000 queries)")
            }
            let (from, to) = halves.count == 2 ? try days(halves[1], entry: entry) : (nil, nil)
            let price = ModelPrice(input: input, output: output, cached: numbers.count >= 3 ? numbers[2] : nil, search: numbers.count == 4 ? numbers[3] : nil)
            periods[pair[0], default: []].append(PricePeriod(price, from: from, through: to, source: origin))
        }
        return try merged(periods, currency: currency, origin: origin)
    }

    /// `FROM..TO`, either side may be empty: the first and last UTC day of a period.
    static func days(_ text: String, entry: String) throws(ParseError) -> (UsageDay?, UsageDay?) {
        let sides = text.components(separatedBy: "..")
        guard sides.count == 2 else { throw .invalid("'\(entry)': a period is @FROM..TO with dates such as 2027-01-01 (either may be left out)") }
        return (try date(sides[0], entry: entry), try date(sides[1], entry: entry))
    }

    static func date(_ text: String, entry: String) throws(ParseError) -> UsageDay? {
        let trimmed = text.trimmedWhitespace
        if trimmed.isEmpty { return nil }
        guard let day = UsageDay(text: trimmed) else { throw .invalid("'\(entry)': '\(trimmed)' is not a date YYYY-MM-DD") }
        return day
    }

    /// A prices file: `{"currency": "EUR", "models": {"gemini-2.5-flash": {"input": 0.28, "output": 2.3, "cached": 0.03},
    /// "gemini-3.8-flash": [{"input": 0.7, "output": 3.5, "to": "2026-12-31"}, {"input": 1.4, "output": 7, "from": "2027-01-01"}]}}`.
    public static func parse(json bytes: [UInt8], origin: String) throws(ParseError) -> PriceTable {
        struct Entry: Decodable { var input: Double; var output: Double; var cached: Double?; var search: Double?; var from: String?; var to: String? }
        enum Entries: Decodable {
            case one(Entry), many([Entry])
            var list: [Entry] { switch self { case .one(let entry): [entry]; case .many(let entries): entries } }
            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let entry = try? container.decode(Entry.self) { self = .one(entry) } else { self = .many(try container.decode([Entry].self)) }
            }
        }
        struct File: Decodable { var currency: String?; var models: [String: Entries] }
        let file: File
        do { file = try JSONDecoder().decode(File.self, from: Data(bytes)) } catch {
            throw .invalid("it is not a prices file ({\"currency\": …, \"models\": {\"MODEL\": {\"input\": …, \"output\": …}}}, or a list of such prices with \"from\" and \"to\" dates)")
        }
        var periods: [String: [PricePeriod]] = [:]
        for (name, entries) in file.models {
            for entry in entries.list {
                guard [entry.input, entry.output, entry.cached ?? 0, entry.search ?? 0].allSatisfy(isPrice) else { throw .invalid("the prices of '\(name)' must be numbers from 0 to 1000000") }
                let period = PricePeriod(ModelPrice(input: entry.input, output: entry.output, cached: entry.cached, search: entry.search),
                                         from: try date(entry.from ?? "", entry: name), through: try date(entry.to ?? "", entry: name), source: origin)
                periods[name, default: []].append(period)
            }
        }
        return try merged(periods, currency: try checkedCurrency(file.currency ?? "USD"), origin: origin)
    }

    /// A price per million tokens: 0 to a million.
    private static func isPrice(_ value: Double) -> Bool { (0...1_000_000).contains(value) }

    private static func checkedCurrency(_ text: String) throws(ParseError) -> String {
        guard (1...8).contains(text.count), text.allSatisfy({ $0.isLetter && $0.isASCII }) else { throw .invalid("currency '\(text)' is not a currency code such as USD or EUR") }
        return text.uppercased()
    }

    private static func merged(_ given: [String: [PricePeriod]], currency: String, origin: String) throws(ParseError) -> PriceTable {
        for (name, periods) in given {
            let sorted = periods.sorted { ($0.from?.number ?? Int.min) < ($1.from?.number ?? Int.min) }
            for period in sorted {
                if let from = period.from, let to = period.through, to < from { throw .invalid("a period of '\(name)' ends before it starts") }
            }
            for (earlier, later) in zip(sorted, sorted.dropFirst()) {
                guard let end = earlier.through, let start = later.from, end < start else {
                    throw .invalid("the periods of '\(name)' overlap: give each a FROM..TO that leaves the others' days alone")
                }
            }
        }
        // Built-in dollar prices never mix into another currency's table.
        let base = currency == builtIn.currency ? builtIn.periods : [:]
        return PriceTable(currency: currency, origin: origin, periods: base.merging(given) { _, mine in mine })
    }
}
