import Conversations
import Glibc
import SystemIO
import VaultCore

/// What one key (its value, wherever it came from) spent this month and last, for its budgets.
///
/// The usage ledger is the vault's and opens only with it; a budget must hold for a script
/// with only `GEMINI_API_KEY` too. So every reply is also added to the key's meter, a small
/// file named by a fingerprint derived from the key and sealed with a key derived from it:
/// whoever holds the key (and so could spend it) reads it, nobody else can, and the same key
/// reached through the vault, the environment, a key file or key_command meets one meter.
public struct KeyMeter: Sendable {
    public let folder: String
    /// The file's name: a fingerprint of the derived public key, which tells nothing of the key.
    public let id: String
    private let pair: SealedBox.KeyPair
    static let magic = Array("GVKM".utf8)
    static let purpose = "gemvault key meter 1"

    public init(stateDirectory: String, key: SecretBytes) throws(VaultError) {
        folder = stateDirectory + "/gemvault/meters"
        pair = try SealedBox.keyPair(derivedFrom: key, purpose: Self.purpose)
        id = Sodium.hex(Array(Sodium.blake2b256(pair.publicKey[...]).prefix(16)))
    }

    public var path: String { folder + "/" + id }

    /// The key's spending since the first day of last month (nothing before its first reply).
    /// A meter that does not open with the key, or does not parse, is damage, never read as nothing.
    public func read() throws(UsageLedger.Failure) -> UsageSummary {
        let folder: TrustedFolder?
        do { folder = try TrustedFolder.open(self.folder) } catch { throw UsageLedger.Failure(error) }
        guard let folder, let file = try open(in: folder, flags: O_RDONLY) else { return UsageSummary() }
        return try decode(file)
    }

    /// Adds one reply and drops the days before last month: under a lock file beside it, the
    /// meter replaced whole (a crash leaves the old one or the new, never a torn one).
    public func add(model: String, day: UsageDay, counts: UsageCounts) throws(UsageLedger.Failure) {
        let folder: TrustedFolder
        do { folder = try TrustedFolder.create(self.folder) } catch { throw UsageLedger.Failure(error) }
        let lockName = id + ".lock"
        guard let lock = try TrustedFile.openChecked(lockName, in: folder) else { throw .system(SystemError("open", path: folder.path(of: lockName), code: ENOENT)) }
        do { try lock.lockExclusively() } catch { throw .system(error) }
        var summary = try open(in: folder, flags: O_RDONLY).map(decode) ?? UsageSummary()
        summary.add(UsageLedger.Entry(key: "", model: UsageLedger.storedName(model), day: day, counts: counts))
        summary.dropRows(before: Self.horizon(day))
        let sealed: [UInt8]
        do { sealed = Self.magic + (try pair.sealPrivately(summary.encoded(), purpose: Self.purpose)) } catch { throw .crypto("\(error)") }
        do { try folder.replace(id, with: sealed, tempPrefix: "." + id + ".tmp.") } catch { throw .system(error) }
    }

    /// The first day a meter keeps on `day`: the first of last month.
    static func horizon(_ day: UsageDay) -> UsageDay { UsageDay(number: day.monthStart.number - 1).monthStart }

    /// What the key spent on `day` and in its month, priced by `prices`; the models without a price.
    public static func spent(_ summary: UsageSummary, on day: UsageDay, prices: PriceTable) -> (today: Double, month: Double, unpriced: Set<String>) {
        let (costs, unpriced) = summary.dailyCosts(prices: prices)
        let daily = costs.values.reduce(into: [UsageDay: Double]()) { all, days in all.merge(days, uniquingKeysWith: +) }
        let month = daily.filter { $0.key >= day.monthStart && $0.key <= day }.values.reduce(0, +)
        return (daily[day] ?? 0, month, unpriced.values.reduce(into: Set<String>()) { $0.formUnion($1) })
    }

    private func open(in folder: TrustedFolder, flags: Int32) throws(UsageLedger.Failure) -> FileDescriptor? {
        do { return try TrustedFile.open(id, in: folder, requirement: .secret, flags: flags) } catch { throw UsageLedger.Failure(error) }
    }

    private func decode(_ file: FileDescriptor) throws(UsageLedger.Failure) -> UsageSummary {
        let bytes: [UInt8]
        do { bytes = try file.readFromStart(limit: 4 << 20) } catch { throw .system(error) }
        if bytes.isEmpty { return UsageSummary() }
        guard bytes.count > Self.magic.count, Array(bytes.prefix(Self.magic.count)) == Self.magic,
              let plain = pair.openPrivately(Array(bytes.dropFirst(Self.magic.count)), purpose: Self.purpose),
              let summary = plain.withUnsafeBytes({ UsageSummary.decode($0) }) else {
            throw .damaged("the key's spending meter \(path) is damaged: what the key spent this month cannot be read")
        }
        return summary
    }
}

extension TrustedFile {
    /// A private file opened (made when missing) in a checked folder, for a lock.
    static func openChecked(_ name: String, in folder: TrustedFolder) throws(UsageLedger.Failure) -> FileDescriptor? {
        do { return try open(name, in: folder, requirement: .secret, flags: O_RDWR | O_CREAT) } catch { throw UsageLedger.Failure(error) }
    }
}

/// Which keys (by their meter's id, or `*` for all) have a budget kept in the vault: written whenever the vault
/// is open, read when it is locked, so a key reached through the environment or a file while
/// the vault is locked is refused rather than sent unchecked. Ids only: nothing of a key or
/// its name.
public struct BudgetMarks: Sendable {
    public let folder: String
    static let name = "budgeted-keys"
    /// The mark of a budget the vault's settings set for every key.
    public static let everyKey = "*"

    public init(history: HistoryStore) { folder = history.folder }

    public func contains(_ id: String) -> Bool { ids().contains(id) }

    public func set(_ id: String, budgeted: Bool) throws(UsageLedger.Failure) {
        var ids = ids()
        if budgeted { ids.insert(id) } else { ids.remove(id) }
        do {
            try TrustedFolder.create(folder).replace(Self.name, with: Array(ids.sorted().map { $0 + "\n" }.joined().utf8), tempPrefix: ".budgeted-keys.tmp.")
        } catch let error as TrustedOpenError {
            throw UsageLedger.Failure(error)
        } catch {
            throw .system(error as? SystemError ?? SystemError("write", path: folder))
        }
    }

    private func ids() -> Set<String> {
        guard let folder = try? TrustedFolder.open(folder), let file = try? TrustedFile.open(Self.name, in: folder, requirement: .secret),
              let bytes = try? file.readAll(limit: 1 << 20) else { return [] }
        return Set(String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init))
    }
}
