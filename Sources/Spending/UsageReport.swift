import Settings

/// What `key usage` reports of the ledger: each day's tokens and cost by key and model, and
/// per key its totals, budgets, today's and this month's spending and its unusual days.
/// Encoded as `--json` prints it (Docs/schemas/key-usage): every field present, null when unknown.
public struct UsageReport: Encodable {
    public struct Row: Encodable {
        public let day: String
        public let key: String
        public let model: String
        public let requests: Int
        public let promptTokens: Int
        public let cachedTokens: Int
        public let toolUseTokens: Int
        public let outputTokens: Int
        public let thoughtsTokens: Int
        /// Google Search queries the model ran (grounding), billed past the month's free ones.
        public let searchQueries: Int
        /// The tokens' cost at the row's day (search queries are in the key's totals).
        public let cost: Double?

        private enum Keys: String, CodingKey {
            case day, key, model, requests, promptTokens, cachedTokens, toolUseTokens, outputTokens, thoughtsTokens, searchQueries, cost
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(day, forKey: .day)
            try container.encode(key, forKey: .key)
            try container.encode(model, forKey: .model)
            try container.encode(requests, forKey: .requests)
            try container.encode(promptTokens, forKey: .promptTokens)
            try container.encode(cachedTokens, forKey: .cachedTokens)
            try container.encode(toolUseTokens, forKey: .toolUseTokens)
            try container.encode(outputTokens, forKey: .outputTokens)
            try container.encode(thoughtsTokens, forKey: .thoughtsTokens)
            try container.encode(searchQueries, forKey: .searchQueries)
            try container.encode(cost, forKey: .cost)
        }
    }

    public struct KeyTotal: Encodable {
        public let key: String
        public let tokens: Int
        /// The tokens' cost and the search queries' past the free ones.
        public let cost: Double
        public let searchQueries: Int
        /// Models without a price, whose tokens the cost leaves out.
        public let unpriced: [String]
        public let budgetDaily: Double?
        public let budgetMonthly: Double?
        public let spentToday: Double
        public let spentThisMonth: Double
        /// Days more than 3× the key's usual one.
        public let unusualDays: [String]

        private enum Keys: String, CodingKey {
            case key, tokens, cost, searchQueries, unpriced, budgetDaily, budgetMonthly, spentToday, spentThisMonth, unusualDays
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(key, forKey: .key)
            try container.encode(tokens, forKey: .tokens)
            try container.encode(cost, forKey: .cost)
            try container.encode(searchQueries, forKey: .searchQueries)
            try container.encode(unpriced, forKey: .unpriced)
            try container.encode(budgetDaily, forKey: .budgetDaily)
            try container.encode(budgetMonthly, forKey: .budgetMonthly)
            try container.encode(spentToday, forKey: .spentToday)
            try container.encode(spentThisMonth, forKey: .spentThisMonth)
            try container.encode(unusualDays, forKey: .unusualDays)
        }
    }

    public let days: Int
    public let currency: String
    public let prices: String
    public let rows: [Row]
    public let keys: [KeyTotal]
    public let notes: [String]

    /// The last `days` days of `summary` up to `now`, for the key stored as `key` or every key.
    public init(_ summary: UsageSummary, notes: [String], prices: PriceTable, settings: Settings, vaultSettings: [String: String], days: Int,
                key name: String?, now: Int64) {
        let today = UsageDay(seconds: now)
        let first = UsageDay(number: today.number - days + 1)
        let rows = summary.rows(from: first, key: name).map { row in
            Row(day: row.day.text, key: row.key, model: row.model, requests: row.counts.requests, promptTokens: row.counts.prompt,
                cachedTokens: row.counts.cached, toolUseTokens: row.counts.toolUse, outputTokens: row.counts.output,
                thoughtsTokens: row.counts.thoughts, searchQueries: row.counts.searchQueries, cost: prices.cost(row.counts, model: row.model, on: row.day))
        }
        let costs = summary.dailyCosts(prices: prices).costs
        let searchCosts = summary.searchCosts(prices: prices)
        keys = Set(rows.map(\.key)).union(name.map { [$0] } ?? []).sorted().map { key -> KeyTotal in
            let mine = rows.filter { $0.key == key }
            let daily = costs[key] ?? [:]
            let budget = SpendGuard.budget(for: key, settings: settings, vaultSettings: vaultSettings)
            return KeyTotal(key: key, tokens: mine.reduce(0) { min($0 + $1.promptTokens + $1.toolUseTokens + $1.outputTokens + $1.thoughtsTokens, UsageCounts.limit) },
                            cost: mine.compactMap(\.cost).reduce(0, +) + (searchCosts[key] ?? [:]).filter { $0.key >= first }.values.reduce(0, +),
                            searchQueries: mine.reduce(0) { $0 + $1.searchQueries }, unpriced: Array(Set(mine.filter { $0.cost == nil }.map(\.model))).sorted(),
                            budgetDaily: budget.daily, budgetMonthly: budget.monthly, spentToday: daily[today] ?? 0,
                            spentThisMonth: daily.filter { $0.key >= today.monthStart && $0.key <= today }.values.reduce(0, +),
                            unusualDays: SpendGuard.unusualDays(daily, from: first).map(\.text))
        }
        self.days = days
        currency = prices.currency
        self.prices = prices.origin
        self.rows = rows
        self.notes = notes
    }
}
