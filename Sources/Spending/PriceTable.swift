import FoundationEssentials
import SystemIO

/// What a million tokens of each kind cost for one model.
public struct ModelPrice: Sendable, Equatable {
    public var input: Double
    public var output: Double
    /// Cached prompt tokens; a tenth of `input` when not given (Google's discount for Gemini 2.5 and 3).
    public var cached: Double

    public init(input: Double, output: Double, cached: Double? = nil) {
        self.input = input
        self.output = output
        self.cached = cached ?? input / 10
    }

    /// What `counts` cost: cached prompt tokens at their rate, tool use as input, thinking as output.
    public func cost(_ counts: UsageCounts) -> Double {
        let uncachedPrompt = Double(max(0, counts.prompt - counts.cached))
        let inputCost = (uncachedPrompt + Double(counts.toolUse)) * input + Double(min(counts.cached, counts.prompt)) * cached
        return (inputCost + (Double(counts.output) + Double(counts.thoughts)) * output) / 1_000_000
    }
}

/// Prices per million tokens, by model name prefix, in one currency: the built-in table or the
/// one the `prices` setting gives.
public struct PriceTable: Sendable, Equatable {
    public var currency: String
    /// Where the prices come from, for `key usage` and `--json`.
    public var origin: String
    public var models: [String: ModelPrice]

    public init(currency: String, origin: String, models: [String: ModelPrice]) {
        self.currency = currency
        self.origin = origin
        self.models = models
    }

    /// Google's list prices for prompts up to 200,000 tokens, paid tier, in US dollars, as
    /// ai.google.dev/gemini-api/docs/pricing gave them on the date below. Output includes
    /// thinking; tool-use prompt tokens are billed as input.
    public static let builtInDate = "2026-12-01"
    public static let builtIn = PriceTable(currency: "USD", origin: "built-in prices of \(builtInDate)", models: [
        "gemini-3.5-flash": ModelPrice(input: 1.50, output: 9.00),
        "gemini-3.1-pro": ModelPrice(input: 2.00, output: 12.00),
        "gemini-3.1-flash-lite": ModelPrice(input: 0.25, output: 1.50),
        "gemini-3-flash": ModelPrice(input: 0.50, output: 3.00),
        "gemini-3-pro": ModelPrice(input: 2.00, output: 12.00),
        "gemini-2.5-pro": ModelPrice(input: 1.25, output: 10.00),
        "gemini-2.5-flash": ModelPrice(input: 0.30, output: 2.50),
        "gemini-2.5-flash-lite": ModelPrice(input: 0.10, output: 0.40),
    ])

    /// The price of `model` (a `models/` prefix and a version suffix such as `-preview` or
    /// `-001` are allowed): the longest table name it starts with, at a `-` or its end.
    public func price(of model: String) -> ModelPrice? {
        let name = model.hasPrefix("models/") ? String(model.dropFirst(7)) : model
        let matches = models.keys.filter { name == $0 || name.hasPrefix($0 + "-") }
        return matches.max(by: { $0.count < $1.count }).flatMap { models[$0] }
    }

    /// The cost of `counts` for `model`, or nil when it has no price.
    public func cost(_ counts: UsageCounts, model: String) -> Double? { price(of: model)?.cost(counts) }

    public enum ParseError: Error, Equatable {
        case invalid(String)
    }

    /// The `prices` setting: `MODEL=INPUT/OUTPUT[/CACHED]` entries separated by commas, with an
    /// optional `currency=EUR`; or, read by the caller, a JSON file of the same (`parse(json:)`).
    /// Models it names replace the built-in ones; the others keep theirs only in the same currency.
    public static func parse(setting text: String, origin: String) throws(ParseError) -> PriceTable {
        var currency = "USD"
        var models: [String: ModelPrice] = [:]
        for entry in text.split(separator: ",").map({ String($0).trimmedWhitespace }) where !entry.isEmpty {
            let pair = entry.split(separator: "=", maxSplits: 1).map { String($0).trimmedWhitespace }
            guard pair.count == 2, !pair[0].isEmpty else { throw .invalid("'\(entry)' is not MODEL=INPUT/OUTPUT[/CACHED]") }
            if pair[0] == "currency" {
                currency = try checkedCurrency(pair[1])
                continue
            }
            let numbers = pair[1].split(separator: "/").map { Double($0) }
            guard (2...3).contains(numbers.count), let input = numbers[0], let output = numbers[1], numbers.allSatisfy({ $0.map(isPrice) ?? false }) else {
                throw .invalid("'\(entry)': the prices are INPUT/OUTPUT[/CACHED], numbers from 0 to 1000000 per million tokens")
            }
            models[pair[0]] = ModelPrice(input: input, output: output, cached: numbers.count == 3 ? numbers[2] : nil)
        }
        return merged(models, currency: currency, origin: origin)
    }

    /// A prices file: `{"currency": "EUR", "models": {"gemini-3.5-flash": {"input": 1.4, "output": 8.3, "cached": 0.14}}}`.
    public static func parse(json bytes: [UInt8], origin: String) throws(ParseError) -> PriceTable {
        struct File: Decodable {
            struct Entry: Decodable { var input: Double; var output: Double; var cached: Double? }
            var currency: String?
            var models: [String: Entry]
        }
        let file: File
        do { file = try JSONDecoder().decode(File.self, from: Data(bytes)) } catch {
            throw .invalid("it is not a prices file ({\"currency\": …, \"models\": {\"MODEL\": {\"input\": …, \"output\": …}}})")
        }
        var models: [String: ModelPrice] = [:]
        for (name, entry) in file.models {
            guard [entry.input, entry.output, entry.cached ?? 0].allSatisfy(isPrice) else { throw .invalid("the prices of '\(name)' must be numbers from 0 to 1000000") }
            models[name] = ModelPrice(input: entry.input, output: entry.output, cached: entry.cached)
        }
        return merged(models, currency: try checkedCurrency(file.currency ?? "USD"), origin: origin)
    }

    /// A price per million tokens: 0 to a million.
    private static func isPrice(_ value: Double) -> Bool { (0...1_000_000).contains(value) }

    private static func checkedCurrency(_ text: String) throws(ParseError) -> String {
        guard (1...8).contains(text.count), text.allSatisfy({ $0.isLetter && $0.isASCII }) else { throw .invalid("currency '\(text)' is not a currency code such as USD or EUR") }
        return text.uppercased()
    }

    private static func merged(_ models: [String: ModelPrice], currency: String, origin: String) -> PriceTable {
        // Built-in dollar prices never mix into another currency's table.
        let base = currency == builtIn.currency ? builtIn.models : [:]
        return PriceTable(currency: currency, origin: origin, models: base.merging(models) { _, given in given })
    }
}
