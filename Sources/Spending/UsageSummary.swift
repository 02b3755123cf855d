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
    /// The records file these rows came from (its inode and generation, which compaction
    /// raises) and how many of its records they hold.
    var recordsInode: UInt64 = 0
    var recordsMerged = 0
    var generation: UInt64 = 0
    /// While a compaction is under way: the generation it folded and how many of its records,
    /// so a crash before the new records file is in place counts nothing twice.
    var foldedGeneration: UInt64 = 0
    var foldedRecords = 0
    /// When a damaged summary was set aside after a compaction (0: never): what was folded
    /// into it is not counted, and every read says so.
    var damagedAt: Int64 = 0
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

    /// Every row's counts added up: what the summary holds, for a report of what a cut or
    /// replaced records file leaves out.
    public var total: UsageCounts { rows.values.reduce(UsageCounts(), +) }

    /// Drops the rows before `day` (a key's meter keeps only what its budgets look at).
    public mutating func dropRows(before day: UsageDay) {
        rows = rows.filter { $0.key.day >= day.number }
    }

    /// What each key spent on each day, each row priced at its own day's period, with the
    /// search queries past each month's free allowance (`searchCosts`), in one pass; rows
    /// without a price count 0 and are named in `unpriced`.
    public func dailyCosts(prices: PriceTable) -> (costs: [String: [UsageDay: Double]], unpriced: [String: Set<String>]) {
        var costs: [String: [UsageDay: Double]] = [:]
        var unpriced: [String: Set<String>] = [:]
        for (place, counts) in rows {
            let day = UsageDay(number: place.day)
            guard let cost = prices.cost(counts, model: place.model, on: day) else { unpriced[place.key, default: []].insert(place.model); continue }
            costs[place.key, default: [:]][day, default: 0] += cost
        }
        for (key, days) in searchCosts(prices: prices) {
            for (day, cost) in days { costs[key, default: [:]][day, default: 0] += cost }
        }
        return (costs, unpriced)
    }

    // MARK: Stored form

    /// version 3, the records file's inode, records merged, records set aside, the records
    /// file's generation, the generation being folded and its records, when a damaged summary
    /// was set aside (version 1 stops after the records set aside); the key and model names
    /// (u16 length, UTF-8); then each row: day (i32), key and model (u32 indices), and the seven
    /// counts (u64; version 1 has six, without the search queries). Little-endian, read and
    /// written in one pass (a year of ten keys is 3,650 rows). No version 2 was released.
    func encoded() -> [UInt8] {
        let keys = Array(Set(rows.keys.map(\.key))).sorted()
        let models = Array(Set(rows.keys.map(\.model))).sorted()
        let keyIndex = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) })
        let modelIndex = Dictionary(uniqueKeysWithValues: models.enumerated().map { ($1, $0) })
        var out = ByteSink()
        out.put(UInt8(3))
        out.put(recordsInode)
        out.put(UInt64(recordsMerged))
        out.put(UInt64(setAside))
        out.put(generation)
        out.put(foldedGeneration)
        out.put(UInt64(foldedRecords))
        out.put(damagedAt)
        for names in [keys, models] {
            out.put(UInt32(names.count))
            for name in names { out.put(name) }
        }
        out.put(UInt32(rows.count))
        for (place, counts) in rows.sorted(by: { ($0.key.day, $0.key.key, $0.key.model) < ($1.key.day, $1.key.key, $1.key.model) }) {
            out.put(Int32(clamping: place.day))
            out.put(UInt32(keyIndex[place.key]!))
            out.put(UInt32(modelIndex[place.model]!))
            for field in counts.fields { out.put(UInt64(field)) }
        }
        return out.bytes
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) -> UsageSummary? {
        var input = ByteSource(bytes)
        guard let version = input.u8(), version == 1 || version == 3, let inode = input.u64(), let merged = input.u64(), let aside = input.u64(),
              merged < 1 << 40, aside < 1 << 40 else { return nil }
        var summary = UsageSummary()
        summary.recordsInode = inode
        summary.recordsMerged = Int(merged)
        summary.setAside = Int(aside)
        if version == 3 {
            guard let generation = input.u64(), let folded = input.u64(), let foldedRecords = input.u64(), foldedRecords < 1 << 40,
                  let damaged = input.u64() else { return nil }
            summary.generation = generation
            summary.foldedGeneration = folded
            summary.foldedRecords = Int(foldedRecords)
            summary.damagedAt = Int64(bitPattern: damaged)
        }
        var lists: [[String]] = []
        for _ in 0..<2 {
            guard let count = input.u32(), count <= 1 << 20 else { return nil }
            var names: [String] = []
            for _ in 0..<count {
                guard let name = input.text() else { return nil }
                names.append(name)
            }
            lists.append(names)
        }
        let countsPerRow = version == 1 ? 6 : 7
        // A row takes 12 bytes and its counts: more rows than the bytes left is damage, not a reason to reserve gigabytes.
        guard let rowCount = input.u32(), Int(rowCount) <= input.remaining / (12 + 8 * countsPerRow) else { return nil }
        summary.rows.reserveCapacity(Int(rowCount))
        for _ in 0..<rowCount {
            guard let day = input.i32(), let key = input.u32(), let model = input.u32(),
                  lists[0].indices.contains(Int(key)), lists[1].indices.contains(Int(model)) else { return nil }
            var fields: [Int] = []
            for _ in 0..<countsPerRow {
                guard let value = input.u64(), value <= UInt64(UsageCounts.limit) else { return nil }
                fields.append(Int(value))
            }
            summary.rows[Place(day: Int(day), key: lists[0][Int(key)], model: lists[1][Int(model)])] = UsageCounts(fields: fields[...])
        }
        return input.atEnd ? summary : nil
    }
}

/// Little-endian writing, for the summary.
struct ByteSink {
    private(set) var bytes: [UInt8] = []

    mutating func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }

    mutating func put(_ text: String) {
        let utf8 = Array(text.utf8.prefix(Int(UInt16.max)))
        put(UInt16(utf8.count))
        bytes.append(contentsOf: utf8)
    }
}

/// Little-endian reading that fails (never traps) past the end.
struct ByteSource {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var atEnd: Bool { offset == bytes.count }
    var remaining: Int { bytes.count - offset }

    mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard bytes.count - offset >= size else { return nil }
        var value: T = 0
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + size])) }
        offset += size
        return T(littleEndian: value)
    }

    mutating func u8() -> UInt8? { integer(UInt8.self) }
    mutating func u32() -> UInt32? { integer(UInt32.self) }
    mutating func i32() -> Int32? { integer(Int32.self) }
    mutating func u64() -> UInt64? { integer(UInt64.self) }
    mutating func i64() -> Int64? { integer(Int64.self) }

    mutating func text() -> String? {
        guard let length = integer(UInt16.self), bytes.count - offset >= Int(length) else { return nil }
        defer { offset += Int(length) }
        return String(validating: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + Int(length)]), as: UTF8.self)
    }
}
