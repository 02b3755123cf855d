import Conversations
import FoundationEssentials
import Glibc
import SystemIO
import VaultCore

/// What each key spent, kept beside the vault's conversations and sealed like them.
///
/// `usage` is append-only: one fixed-size record per reply, sealed to the vault's conversation
/// key, so writing needs no unlock. `usage-summary` adds them up by day, key and model, sealed so
/// that only the vault's holder reads it; whoever reads the ledger with the vault open merges
/// the records added since. Once the records file holds `compactFrom` records that are all in
/// the summary, they are folded into it: a new records file of the next generation (its first
/// record a plain header) takes the old one's place, so the ledger does not grow without bound.
/// A damaged summary is rebuilt from the records left, and what was folded into it is reported
/// missing on every read; a records file cut short is reported with what the summary keeps.
public struct UsageLedger: Sendable {
    public let folder: String
    static let recordsName = "usage"
    static let summaryName = "usage-summary"
    static let summaryMagic = Array("GVUS".utf8)
    static let summaryPurpose = "gemvault usage summary 1"
    /// Every record's plaintext is padded to this, so its size says nothing of the names in it.
    static let recordPlainLength = 512
    static var recordLength: Int { recordPlainLength + SealedBox.overhead }
    static let maxName = 160
    /// A records file's header (generation 1 on; a file without one is generation 0).
    static let headerMagic = Array("GVUL".utf8)
    /// Records merged before the file is folded into the summary (2,048 records are 1.1 MB).
    public static let compactFrom = 2048

    public init(history: HistoryStore) { folder = history.folder }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case refused(String)
        case system(SystemError)
        case noRecipient
        case crypto(String)
        case damaged(String)

        public var description: String {
            switch self {
            case .refused(let reason): reason
            case .system(let error): "\(error.operation) \(error.path): \(error.reason)"
            case .noRecipient: "the vault was never opened here, so there is no key to seal usage to (open it once: 'gemvault unlock')"
            case .crypto(let reason): reason
            case .damaged(let reason): reason
            }
        }

        init(_ error: TrustedOpenError) {
            switch error {
            case .refused(let check): self = .refused(check.message)
            case .failed(let failure): self = .system(failure)
            }
        }
    }

    /// One reply's usage, as a record holds it.
    public struct Entry: Equatable, Sendable {
        public var key: String
        public var model: String
        public var day: UsageDay
        public var counts: UsageCounts

        public init(key: String, model: String, day: UsageDay, counts: UsageCounts) {
            self.key = key
            self.model = model
            self.day = day
            self.counts = counts
        }
    }

    /// Version 2 adds the search queries as a seventh count; version 1 records still read.
    private struct EntryJSON: Codable {
        var v = 2
        var key: String
        var model: String
        var day: Int
        var counts: [Int]
    }

    private func openFolder() throws(Failure) -> TrustedFolder? {
        do { return try TrustedFolder.open(folder) } catch { throw Failure(error) }
    }

    private func open(_ name: String, in folder: TrustedFolder, flags: Int32) throws(Failure) -> FileDescriptor? {
        do { return try TrustedFile.open(name, in: folder, requirement: .secret, flags: flags) } catch { throw Failure(error) }
    }

    // MARK: Writing, without the vault

    /// Appends `entry` sealed to `recipient` (the public key in the history's `recipient` file).
    /// A record cut short by a crash is dropped first, under the file's lock, so every record
    /// stays at its place.
    public func append(_ entry: Entry, recipient: [UInt8]) throws(Failure) {
        guard let folder = try openFolder() else { throw .noRecipient }
        guard let plain = Self.plaintext(entry) else { throw .crypto("the usage record does not fit its \(Self.recordPlainLength) bytes") }
        let sealed: [UInt8]
        do { sealed = try SealedBox.seal(plain, to: recipient) } catch { throw .crypto("\(error)") }
        for _ in 0..<8 {
            guard let file = try open(Self.recordsName, in: folder, flags: O_RDWR | O_APPEND | O_CREAT) else { throw .system(SystemError("open", path: folder.path(of: Self.recordsName), code: ENOENT)) }
            do {
                try file.lockExclusively()
                // A compaction put a new file in place while this one waited: append to that.
                guard try isCurrent(file, in: folder) else { continue }
                let size = Int(try file.status().size)
                if size % Self.recordLength != 0 { try file.truncate(to: size - size % Self.recordLength) }
                try file.writeAll(sealed)
                return
            } catch {
                throw .system(error)
            }
        }
        throw .refused("the usage records file \(folder.path(of: Self.recordsName)) keeps being replaced")
    }

    /// Whether `file` is still the one the records file's name leads to.
    private func isCurrent(_ file: FileDescriptor, in folder: TrustedFolder) throws(SystemError) -> Bool {
        guard let named = try? open(Self.recordsName, in: folder, flags: O_RDONLY) else { return false }
        return try named.status().inode == file.status().inode
    }

    /// The name a record holds for a key or model: itself when it is at most 80 bytes of
    /// printable text, else `#` and a fingerprint of it, so that every record fits its 512 bytes
    /// and a name is looked up as it was stored.
    public static func storedName(_ name: String) -> String {
        let printable = name.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F && !(0x80...0x9F).contains($0.value) && $0 != "\\" && $0 != "\"" }
        return printable && name.utf8.count <= 80 ? name : "#" + Sodium.fingerprint(name)
    }

    static func plaintext(_ entry: Entry) -> [UInt8]? {
        let json = EntryJSON(key: storedName(entry.key), model: storedName(entry.model), day: entry.day.number, counts: entry.counts.fields)
        guard let bytes = try? JSONEncoder().encode(json).map({ $0 }), bytes.count <= recordPlainLength else { return nil }
        // JSON allows trailing white space: the padding.
        return bytes + [UInt8](repeating: 0x20, count: recordPlainLength - bytes.count)
    }

    static func entry(_ plain: UnsafeRawBufferPointer) -> Entry? {
        guard let json = try? JSONDecoder().decode(EntryJSON.self, from: Data(plain)), (1...2).contains(json.v), json.counts.count == (json.v == 1 ? 6 : 7),
              let counts = UsageCounts(fields: json.counts[...]) else { return nil }
        return Entry(key: json.key, model: json.model, day: UsageDay(number: json.day), counts: counts)
    }

    // MARK: Reading, with the vault

    /// The spending by day, key and model, with the records added since the last read merged
    /// in. `notes` says what was set aside or is missing: a summary that does not open with the
    /// vault's keys or does not parse, records sealed to another vault, a records file cut short.
    /// `saveFrom`: the summary is written back only when at least this many records were
    /// merged (a check before each request leaves a few for the next reader); a saving read
    /// folds the records into it once there are `compactFrom`.
    public func read(with keys: HistoryKeys, now: Int64, saveFrom: Int = 1, compactFrom: Int = compactFrom) throws(Failure) -> (summary: UsageSummary, notes: [String]) {
        guard let folder = try openFolder() else { return (UsageSummary(), []) }
        var notes: [String] = []
        var (summary, setAside) = try loadSummary(in: folder, keys: keys, now: now, notes: &notes)
        guard let records = try open(Self.recordsName, in: folder, flags: O_RDONLY) else {
            if summary.recordsMerged > 0 || summary.generation > 0 {
                notes.append("the usage records file \(folder.path(of: Self.recordsName)) is gone: the summary keeps the \(Self.describe(summary.total)) it had counted")
            }
            return (summary, notes)
        }
        let bytes: [UInt8]
        let header: (generation: UInt64, size: Int)
        let inode: UInt64
        do {
            try records.lockExclusively()
            let status = try records.status()
            inode = status.inode
            header = try Self.header(of: records)
            let available = max(0, Int(status.size) - header.size) / Self.recordLength
            let start = Self.start(summary: &summary, generation: header.generation, inode: inode, available: available, path: records.path, notes: &notes)
            guard lseek(records.raw, off_t(header.size + start * Self.recordLength), SEEK_SET) >= 0 else { throw SystemError("seek", path: records.path) }
            bytes = try records.readAll(limit: 1 << 30)
        } catch let error as SystemError {
            throw .system(error)
        } catch FileDescriptor.ReadFailure.failed(let error) {
            throw .system(error)
        } catch {
            throw .refused("\(records.path) is larger than gemvault reads")
        }
        let complete = bytes.count / Self.recordLength
        let foreign = Self.merge(bytes, count: complete, into: &summary, keys: keys)
        if setAside && header.generation > 0 { summary.damagedAt = now }
        if summary.damagedAt != 0 {
            notes.append("the usage summary was damaged and set aside on \(UsageDay(seconds: summary.damagedAt).text): the spend folded into it before then is not counted")
        }
        summary.recordsInode = inode
        summary.generation = header.generation
        summary.recordsMerged += complete
        summary.setAside += foreign
        if foreign > 0 {
            notes.append("\(foreign) usage record\(foreign == 1 ? "" : "s") in \(records.path) did not open with this vault's keys (another vault's, or damaged): set aside, not counted")
        }
        guard complete >= saveFrom || foreign > 0 || setAside || !notes.isEmpty else { return (summary, notes) }
        if summary.recordsMerged >= compactFrom {
            try compact(&summary, in: folder, keys: keys)
        } else {
            try save(summary, in: folder, keys: keys)
        }
        return (summary, notes)
    }

    /// The summary as saved, or an empty one; a damaged one is set aside (`setAside`).
    private func loadSummary(in folder: TrustedFolder, keys: HistoryKeys, now: Int64, notes: inout [String]) throws(Failure) -> (UsageSummary, setAside: Bool) {
        guard let file = try open(Self.summaryName, in: folder, flags: O_RDONLY) else { return (UsageSummary(), false) }
        let bytes: [UInt8]
        do { bytes = try file.readAll(limit: 256 << 20) } catch {
            if case .failed(let failure) = error { throw .system(failure) }
            throw .refused("\(file.path) is larger than a usage summary can be")
        }
        if let opened = Self.decodeSummary(bytes, with: keys) { return (opened, false) }
        let aside = Self.summaryName + ".set-aside-\(now)"
        try? folder.rename(Self.summaryName, to: aside)
        notes.append("the usage summary \(file.path) is damaged or belongs to another vault: it was set aside as \(aside) and is rebuilt from the records")
        return (UsageSummary(), true)
    }

    /// Where to go on merging in a records file of `generation` holding `available` records:
    /// after what the summary counted, after what a compaction cut short had folded, or
    /// (another file, or one cut short) from what is there, the summary kept whole and the
    /// gap reported.
    static func start(summary: inout UsageSummary, generation: UInt64, inode: UInt64, available: Int, path: String, notes: inout [String]) -> Int {
        if generation == summary.generation && (generation > 0 || summary.recordsInode == inode || summary.recordsMerged == 0) {
            guard summary.recordsMerged > available else { return summary.recordsMerged }
            notes.append("the usage records file \(path) was cut short: it held \(summary.recordsMerged) records and holds \(available); the summary keeps the \(describe(summary.total)) it had counted")
            summary.recordsMerged = available
            return available
        }
        if generation == summary.foldedGeneration && generation < summary.generation && summary.foldedRecords <= available {
            // A compaction stopped before its new file was in place: the old one goes on.
            summary.recordsMerged = summary.foldedRecords
            return summary.foldedRecords
        }
        if !summary.rows.isEmpty {
            notes.append("the usage records file \(path) is not the one the summary was made from (replaced or restored): the summary keeps the \(describe(summary.total)) it had counted, and the file's \(available) records are added")
        }
        summary.recordsMerged = 0
        return 0
    }

    /// Opens `count` records and adds them to `summary`; returns how many did not open.
    private static func merge(_ bytes: [UInt8], count: Int, into summary: inout UsageSummary, keys: HistoryKeys) -> Int {
        guard count > 0 else { return 0 }
        let plain = SecretBytes(count: recordPlainLength)
        var foreign = 0
        bytes.withUnsafeBytes { raw in
            for index in 0..<count {
                let sealed = UnsafeRawBufferPointer(rebasing: raw[index * recordLength..<(index + 1) * recordLength])
                let entry = plain.withUnsafeMutableBytes { out in
                    keys.all.contains { SealedBox.open(sealed, with: $0, into: out) } ? Self.entry(UnsafeRawBufferPointer(out)) : nil
                }
                if let entry { summary.add(entry) } else { foreign += 1 }
            }
        }
        return foreign
    }

    /// The records file's generation and the size of its header (none: generation 0).
    static func header(of file: FileDescriptor) throws(SystemError) -> (generation: UInt64, size: Int) {
        let first = try file.readFromStart(limit: headerMagic.count + 8)
        guard first.count == headerMagic.count + 8, Array(first.prefix(headerMagic.count)) == headerMagic else { return (0, 0) }
        let generation = first.dropFirst(headerMagic.count).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return (generation, recordLength)
    }

    static func headerRecord(_ generation: UInt64) -> [UInt8] {
        var bytes = headerMagic
        withUnsafeBytes(of: generation.littleEndian) { bytes.append(contentsOf: $0) }
        return bytes + [UInt8](repeating: 0, count: recordLength - bytes.count)
    }

    private func save(_ summary: UsageSummary, in folder: TrustedFolder, keys: HistoryKeys) throws(Failure) {
        do {
            try folder.replace(Self.summaryName, with: Self.summaryMagic + (try keys.current.sealPrivately(summary.encoded(), purpose: Self.summaryPurpose)),
                               tempPrefix: ".usage-summary.tmp.")
        } catch let error as SystemError {
            throw .system(error)
        } catch {
            throw .crypto("\(error)")
        }
    }

    /// Folds the merged records into the summary (called with the records file locked): a new
    /// records file of the next generation is made, the summary saved as counting none of it
    /// (and as having folded the old one, should the next step not happen), then the new file
    /// renamed over the old. A writer waiting on the old file's lock appends to the new one.
    private func compact(_ summary: inout UsageSummary, in folder: TrustedFolder, keys: HistoryKeys) throws(Failure) {
        let temp = ".usage.tmp.\(getpid())"
        folder.remove(temp)
        guard let file = try open(temp, in: folder, flags: O_RDWR | O_CREAT | O_EXCL) else { throw .system(SystemError("create", path: folder.path(of: temp), code: ENOENT)) }
        var folded = summary
        do {
            try file.writeAll(Self.headerRecord(summary.generation + 1))
            try file.sync()
            folded.foldedGeneration = summary.generation
            folded.foldedRecords = summary.recordsMerged
            folded.generation = summary.generation + 1
            folded.recordsMerged = 0
            folded.recordsInode = try file.status().inode
            try save(folded, in: folder, keys: keys)
            try folder.rename(temp, to: Self.recordsName)
            folder.sync()
        } catch {
            folder.remove(temp)
            if let failure = error as? Failure { throw failure }
            throw .system(error as? SystemError ?? SystemError("write", path: folder.path(of: temp)))
        }
        summary = folded
    }

    /// `12 requests, 3400 tokens`: what a summary holds, for a report.
    static func describe(_ counts: UsageCounts) -> String {
        "\(counts.requests) request\(counts.requests == 1 ? "" : "s") (\(counts.total) tokens)"
    }

    static func decodeSummary(_ bytes: [UInt8], with keys: HistoryKeys) -> UsageSummary? {
        guard bytes.count > summaryMagic.count, Array(bytes.prefix(summaryMagic.count)) == summaryMagic else { return nil }
        let sealed = Array(bytes.dropFirst(summaryMagic.count))
        for pair in keys.all {
            if let plain = pair.openPrivately(sealed, purpose: summaryPurpose) {
                return plain.withUnsafeBytes { UsageSummary.decode($0) }
            }
        }
        return nil
    }
}
