import FoundationEssentials
import SystemIO

/// What a million tokens of each kind cost for one model, and a thousand search queries.
public struct ModelPrice: Sendable, Equatable {
    public var input: Double
    public var output: Double
    /// Cached prompt tokens; a tenth of `input` when not given (Google's discount for Gemini 2.5 and 3).
    public var cached: Double
    /// A thousand Google Search queries the model ran (grounding), beyond the month's free ones;
    /// nil when the table has no such price.
    public var search: Double?

    public init(input: Double, output: Double, cached: Double? = nil, search: Double? = nil) {
        self.input = input
        self.output = output
        self.cached = cached ?? input / 10
        self.search = search
    }

    /// What `counts`' tokens cost: cached prompt tokens at their rate, tool use as input,
    /// thinking as output. Search queries are priced apart (`SearchBilling`): the month's free
    /// allowance decides which of them cost.
    public func cost(_ counts: UsageCounts) -> Double {
        let uncachedPrompt = Double(max(0, counts.prompt - counts.cached))
        let inputCost = (uncachedPrompt + Double(counts.toolUse)) * input + Double(min(counts.cached, counts.prompt)) * cached
        return (inputCost + (Double(counts.output) + Double(counts.thoughts)) * output) / 1_000_000
    }

    /// Every rate times `factor` (a service tier's).
    public func scaled(by factor: Double) -> ModelPrice {
        guard factor != 1 else { return self }
        return ModelPrice(input: input * factor, output: output * factor, cached: cached * factor, search: search)
    }
}

/// One price of a model and the days it holds: `from` and `through` are UTC days, both
/// included; nil is open.
public struct PricePeriod: Sendable, Equatable {
    public var price: ModelPrice
    public var from: UsageDay?
    public var through: UsageDay?
    /// Where the price comes from and when that was read.
    public var source: String

    public init(_ price: ModelPrice, from: UsageDay? = nil, through: UsageDay? = nil, source: String) {
        self.price = price
        self.from = from
        self.through = through
        self.source = source
    }

    public func covers(_ day: UsageDay) -> Bool { (from.map { day >= $0 } ?? true) && (through.map { day <= $0 } ?? true) }
}

/// The service tier that served a request (Google's `x-gemini-service-tier` response header),
/// and what it does to the list price (ai.google.dev/gemini-api/docs/optimization).
public enum ServiceTier: String, Sendable, CaseIterable {
    case standard, flex, batch, priority

    /// Flex and Batch at half price; Priority "75% to 100% more", taken at the 1.8× seen on
    /// 3.8 Flash and Gemini 4 (gemini-prices-2026-12.md §3).
    public var factor: Double {
        switch self {
        case .standard: 1
        case .flex, .batch: 0.5
        case .priority: 1.8
        }
    }

    /// The header's value: `standard`, `flex`, `priority`, `batch`, any case, with or without
    /// `SERVICE_TIER_`; `unspecified` and unknown words are Standard.
    public init(header: String?) {
        var word = (header ?? "").trimmedWhitespace.lowercased()
        if word.hasPrefix("service_tier_") { word = String(word.dropFirst(13)) }
        self = ServiceTier(rawValue: word) ?? .standard
    }

    /// The name a ledger row holds for `model` served at this tier: `gemini-3.8-flash:flex`,
    /// the model alone at Standard, so old rows and Standard ones read the same.
    public func ledgerModel(_ model: String) -> String { self == .standard ? model : model + ":" + rawValue }

    /// A ledger row's model split into the model and its tier.
    public static func split(_ ledgerModel: String) -> (model: String, tier: ServiceTier) {
        guard let colon = ledgerModel.lastIndex(of: ":"), let tier = ServiceTier(rawValue: String(ledgerModel[ledgerModel.index(after: colon)...])) else {
            return (ledgerModel, .standard)
        }
        return (String(ledgerModel[..<colon]), tier)
    }
}

/// Prices per million tokens, by model name prefix and period, in one currency: the built-in
/// table or the one the `prices` setting gives. A turn is priced at the period of its own day.
public struct PriceTable: Sendable, Equatable {
    public var currency: String
    /// Where the prices come from, for `key usage` and `--json`.
    public var origin: String
    /// Each model's periods, in the order of their days.
    public var periods: [String: [PricePeriod]]
    /// Google Search queries a month that cost nothing (the `search_free_queries` setting):
    /// Google's 5,000 are per project, and gemvault sees only the queries it sent.
    public var searchFreeQueries = 5000

    public init(currency: String, origin: String, periods: [String: [PricePeriod]]) {
        self.currency = currency
        self.origin = origin
        self.periods = periods.mapValues { $0.sorted { ($0.from?.number ?? Int.min) < ($1.from?.number ?? Int.min) } }
    }

    /// One price for all time per model.
    public init(currency: String, origin: String, models: [String: ModelPrice]) {
        self.init(currency: currency, origin: origin, periods: models.mapValues { [PricePeriod($0, source: origin)] })
    }

    /// The table's model names, sorted.
    public var modelNames: [String] { periods.keys.sorted() }

    /// The table name `model` is priced under (a `models/` prefix, a version suffix such as
    /// `-preview` or `-001`, and a service tier `:flex` are allowed): the longest name it
    /// starts with, at a `-` or its end.
    public func entry(for model: String) -> String? {
        let bare = ServiceTier.split(model).model
        let name = bare.hasPrefix("models/") ? String(bare.dropFirst(7)) : bare
        return periods.keys.filter { name == $0 || name.hasPrefix($0 + "-") }.max { $0.count < $1.count }
    }

    /// The period of `model`'s price that holds on `day`.
    public func period(of model: String, on day: UsageDay) -> PricePeriod? {
        entry(for: model).flatMap { periods[$0]?.first { $0.covers(day) } }
    }

    /// The price of `model` on `day`, at the tier its ledger name says.
    public func price(of model: String, on day: UsageDay) -> ModelPrice? {
        period(of: model, on: day)?.price.scaled(by: ServiceTier.split(model).tier.factor)
    }

    /// The price of `model` today (UTC).
    public func price(of model: String) -> ModelPrice? { price(of: model, on: UsageDay(seconds: Clock.now())) }

    /// The cost of `counts`' tokens for `model` on `day`, or nil when it has no price then.
    public func cost(_ counts: UsageCounts, model: String, on day: UsageDay) -> Double? { price(of: model, on: day)?.cost(counts) }

    /// The same, today.
    public func cost(_ counts: UsageCounts, model: String) -> Double? { price(of: model)?.cost(counts) }

    /// What `queries` search queries cost for `model` on `day` once `usedBefore` of the month's
    /// were run: only those past the free allowance; nil when the model has no search price.
    public func searchCost(_ queries: Int, model: String, on day: UsageDay, usedBefore: Int) -> Double? {
        guard queries > 0 else { return 0 }
        guard let rate = period(of: model, on: day)?.price.search else { return nil }
        let freeLeft = max(0, searchFreeQueries - max(0, usedBefore))
        return Double(max(0, queries - freeLeft)) * rate / 1000
    }
}
