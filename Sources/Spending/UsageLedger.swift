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
/// the records added since. The records are never rewritten, so a lost or damaged summary is
/// rebuilt from them.
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

    public init(history: HistoryStore) { folder = history.folder }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case refused(String)
        case system(SystemError)
        case noRecipient
        case crypto(String)

        public var description: String {
            switch self {
            case .refused(let reason): reason
            case .system(let error): "\(error.operation) \(error.path): \(error.reason)"
            case .noRecipient: "the vault was never opened here, so there is no key to seal usage to (open it once: 'gemvault unlock')"
            case .crypto(let reason): reason
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
        guard let file = try open(Self.recordsName, in: folder, flags: O_RDWR | O_APPEND | O_CREAT) else { throw .system(SystemError("open", path: folder.path(of: Self.recordsName), code: ENOENT)) }
        do {
            try file.lockExclusively()
            let size = Int(try file.status().size)
            if size % Self.recordLength != 0 { try file.truncate(to: size - size % Self.recordLength) }
            try file.writeAll(sealed)
        } catch {
            throw .system(error)
        }
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
    /// in. `notes` says what was set aside: a summary that does not open with the vault's keys
    /// or does not parse, records sealed to another vault.
    /// `saveFrom`: the summary is written back only when at least this many records were
    /// merged (a check before each request leaves a few for the next reader).
    public func read(with keys: HistoryKeys, now: Int64, saveFrom: Int = 1) throws(Failure) -> (summary: UsageSummary, notes: [String]) {
        guard let folder = try openFolder() else { return (UsageSummary(), []) }
        var notes: [String] = []
        var summary = UsageSummary()
        if let file = try open(Self.summaryName, in: folder, flags: O_RDONLY) {
            let bytes: [UInt8]
            do { bytes = try file.readAll(limit: 256 << 20) } catch {
                if case .failed(let failure) = error { throw .system(failure) }
                throw .refused("\(file.path) is larger than a usage summary can be")
            }
            if let opened = Self.decodeSummary(bytes, with: keys) {
                summary = opened
            } else {
                let aside = Self.summaryName + ".set-aside-\(now)"
                try? folder.rename(Self.summaryName, to: aside)
                notes.append("the usage summary \(file.path) is damaged or belongs to another vault: it was set aside as \(aside) and is rebuilt from the records")
            }
        }
        guard let records = try open(Self.recordsName, in: folder, flags: O_RDONLY) else { return (summary, notes) }
        let bytes: [UInt8]
        let inode: UInt64
        do {
            try records.lockExclusively()
            let status = try records.status()
            inode = status.inode
            // Another file (or a new one with the old inode number, shorter than what was merged): start again.
            if summary.recordsInode != inode || Int64(summary.recordsMerged) * Int64(Self.recordLength) > status.size { summary = UsageSummary() }
            guard lseek(records.raw, off_t(summary.recordsMerged * Self.recordLength), SEEK_SET) >= 0 else { throw SystemError("seek", path: records.path) }
            bytes = try records.readAll(limit: 1 << 30)
        } catch let error as SystemError {
            throw .system(error)
        } catch FileDescriptor.ReadFailure.failed(let error) {
            throw .system(error)
        } catch {
            throw .refused("\(records.path) is larger than gemvault reads")
        }
        let complete = bytes.count / Self.recordLength
        guard complete > 0 else { return (summary, notes) }
        let plain = SecretBytes(count: Self.recordPlainLength)
        var foreign = 0
        bytes.withUnsafeBytes { raw in
            for index in 0..<complete {
                let sealed = UnsafeRawBufferPointer(rebasing: raw[index * Self.recordLength..<(index + 1) * Self.recordLength])
                let entry = plain.withUnsafeMutableBytes { out in
                    keys.all.contains { SealedBox.open(sealed, with: $0, into: out) } ? Self.entry(UnsafeRawBufferPointer(out)) : nil
                }
                if let entry { summary.add(entry) } else { foreign += 1 }
            }
        }
        summary.recordsInode = inode
        summary.recordsMerged += complete
        summary.setAside += foreign
        if foreign > 0 {
            notes.append("\(foreign) usage record\(foreign == 1 ? "" : "s") in \(records.path) did not open with this vault's keys (another vault's, or damaged): set aside, not counted")
        }
        guard complete >= saveFrom || foreign > 0 else { return (summary, notes) }
        do {
            try folder.replace(Self.summaryName, with: Self.summaryMagic + (try keys.current.sealPrivately(summary.encoded(), purpose: Self.summaryPurpose)),
                               tempPrefix: ".usage-summary.tmp.")
        } catch let error as SystemError {
            throw .system(error)
        } catch {
            throw .crypto("\(error)")
        }
        return (summary, notes)
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
