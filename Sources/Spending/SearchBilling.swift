/// Google Search grounding is billed per query the model ran, past a free allowance a month
/// (5,000 for Gemini 3 and 4, per project). gemvault counts each key's queries per UTC month
/// and treats a key as a project of its own; the `search_free_queries` setting lowers the
/// allowance when other users of the project share it.
extension UsageSummary {
    /// Each key's search cost by day: the month's queries taken in the order of their days,
    /// those past `prices.searchFreeQueries` at the price of the model that ran them.
    public func searchCosts(prices: PriceTable) -> [String: [UsageDay: Double]] {
        var byKey: [String: [(day: UsageDay, model: String, queries: Int)]] = [:]
        for (place, counts) in rows where counts.searchQueries > 0 {
            byKey[place.key, default: []].append((UsageDay(number: place.day), place.model, counts.searchQueries))
        }
        var costs: [String: [UsageDay: Double]] = [:]
        for (key, entries) in byKey {
            var usedInMonth: [UsageDay: Int] = [:]
            for entry in entries.sorted(by: { ($0.day, $0.model) < ($1.day, $1.model) }) {
                let month = entry.day.monthStart
                let used = usedInMonth[month] ?? 0
                usedInMonth[month] = used + entry.queries
                guard let cost = prices.searchCost(entry.queries, model: entry.model, on: entry.day, usedBefore: used), cost > 0 else { continue }
                costs[key, default: [:]][entry.day, default: 0] += cost
            }
        }
        return costs
    }

    /// The search queries `key` ran in the UTC month of `day`.
    public func searchQueries(key: String, month day: UsageDay) -> Int {
        let first = day.monthStart.number
        return rows.reduce(0) { sum, row in
            row.key.key == key && row.key.day >= first && UsageDay(number: row.key.day).monthStart.number == first ? sum + row.value.searchQueries : sum
        }
    }
}
