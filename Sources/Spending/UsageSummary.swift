import FoundationEssentials

/// Spending added up by day, key and model, and how far into the records file that reaches.
public struct UsageSummary: Sendable, Equatable {
    public struct Row: Sendable, Equatable {
        public let day: UsageDay
        public let key: String
        public let model: String
        public var counts: UsageCounts
    }

    public struct Place: Hashable, Sendable {
        let day: Int
        let key: String
        let model: String
    }

    public private(set) var rows: [Place: UsageCounts] = [:]
    /// The records file these rows came from (its inode) and how many of its records they hold.
    var recordsInode: UInt64 = 0
    var recordsMerged = 0
    /// Records that no key of the vault opened.
    public internal(set) var setAside = 0

    public init() {}

    public mutating func add(_ entry: UsageLedger.Entry) {
        let place = Place(day: entry.day.number, key: entry.key, model: entry.model)
        rows[place] = (rows[place] ?? UsageCounts()) + entry.counts
    }

    /// The rows from `first` on, for `key` when given, by day then key then model.
    public func rows(from first: UsageDay, key: String? = nil) -> [Row] {
        rows.compactMap { place, counts in
            guard place.day >= first.number, key == nil || place.key == key else { return nil }
            return Row(day: UsageDay(number: place.day), key: place.key, model: place.model, counts: counts)
        }.sorted { ($0.day, $0.key, $0.model) < ($1.day, $1.key, $1.model) }
    }

    /// What `key` spent on each day, priced by `prices` (rows without a price count 0 and are
    /// named in `unpriced`).
    public func dailyCost(of key: String, prices: PriceTable) -> (days: [UsageDay: Double], unpriced: Set<String>) {
        var days: [UsageDay: Double] = [:]
        var unpriced: Set<String> = []
        for (place, counts) in rows where place.key == key {
            guard let cost = prices.cost(counts, model: place.model) else { unpriced.insert(place.model); continue }
            days[UsageDay(number: place.day), default: 0] += cost
        }
        return (days, unpriced)
    }

    // MARK: Stored form

    private struct Stored: Codable {
        var version = 1
        var inode: UInt64
        var merged: Int
        var setAside: Int
        var keys: [String]
        var models: [String]
        /// day, key index, model index, then the six counts.
        var rows: [[Int]]
    }

    func encoded() throws -> [UInt8] {
        let keys = Array(Set(rows.keys.map(\.key))).sorted()
        let models = Array(Set(rows.keys.map(\.model))).sorted()
        let keyIndex = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) })
        let modelIndex = Dictionary(uniqueKeysWithValues: models.enumerated().map { ($1, $0) })
        let stored = Stored(inode: recordsInode, merged: recordsMerged, setAside: setAside, keys: keys, models: models,
                            rows: rows.map { place, counts in [place.day, keyIndex[place.key]!, modelIndex[place.model]!] + counts.fields }
                                .sorted { $0.lexicographicallyPrecedes($1) })
        return Array(try JSONEncoder().encode(stored))
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) -> UsageSummary? {
        guard let stored = try? JSONDecoder().decode(Stored.self, from: Data(bytes)), stored.version == 1, stored.merged >= 0 else { return nil }
        var summary = UsageSummary()
        summary.recordsInode = stored.inode
        summary.recordsMerged = stored.merged
        summary.setAside = max(0, stored.setAside)
        for row in stored.rows {
            guard row.count == 9, stored.keys.indices.contains(row[1]), stored.models.indices.contains(row[2]),
                  let counts = UsageCounts(fields: row[3...]) else { return nil }
            summary.rows[Place(day: row[0], key: stored.keys[row[1]], model: stored.models[row[2]]), default: UsageCounts()] = counts
        }
        return summary
    }
}
