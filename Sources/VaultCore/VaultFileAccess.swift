/// The vault file's rules, the same for every command and for the session agent: read and
/// check it without a secret (permissions, checksum, structure, KDF bounds, the rollback
/// rule), and save a document above every generation seen, recording the new one.
public struct VaultFileAccess: Sendable {
    public let store: VaultStore
    public let kdfPolicy: KDFPolicy
    public let rollback: RollbackGuard
    /// Hears of a generation record that could not be read or written: a second line of
    /// defence, so the command goes on.
    let warn: @Sendable (String) -> Void

    public init(store: VaultStore, kdfPolicy: KDFPolicy = .standard, rollback: RollbackGuard, warn: @escaping @Sendable (String) -> Void) {
        self.store = store
        self.kdfPolicy = kdfPolicy
        self.rollback = rollback
        self.warn = warn
    }

    public var path: String { store.path }

    public func parse(_ bytes: [UInt8]) throws(VaultError) -> VaultFile {
        try VaultFile.parse(bytes, path: path, policy: kdfPolicy)
    }

    /// The file as it is now, checked.
    public func readFile() throws(VaultError) -> VaultFile {
        do {
            return try checked(parse(try store.read()))
        } catch .rolledBack {
            // A writer records its generation just after its rename: read without the lock, the
            // file can look older than the record for a moment. A real rollback stays.
            return try checked(parse(try store.read()))
        }
    }

    /// Refuses a file older than a generation seen for its vault id or path, or another vault
    /// at the path.
    public func checked(_ file: VaultFile) throws(VaultError) -> VaultFile {
        do { try rollback.check(file) } catch {
            switch error {
            case .rolledBack, .anotherVault: throw error
            default: warn("the record of this vault's generations could not be read (\(error)); a restored old copy would go unnoticed")
            }
        }
        return file
    }

    public func highestSeen(_ file: VaultFile) -> UInt64? {
        do { return try rollback.highestSeen(file) } catch {
            warn("the record of this vault's generations could not be read (\(error)); a restored old copy would go unnoticed")
            return nil
        }
    }

    /// Records an authenticated file's generation; `newVault` (init) makes the path's record
    /// follow a new vault.
    public func remember(_ file: VaultFile, newVault: Bool = false) {
        do { try rollback.remember(file, newVault: newVault) } catch {
            warn("the vault's generation could not be recorded (\(error)); a restored old copy would go unnoticed")
        }
    }

    /// Seals and writes a document above every generation seen, under the lock `session`
    /// holds, then records the new generation.
    public func save(_ document: VaultDocument, in session: VaultStore.WriteSession, backup: VaultStore.Backup, newVault: Bool = false) throws(VaultError) {
        let seen = newVault ? 0 : highestSeen(document.file) ?? 0
        try store.write(try document.sealed(minimumGeneration: seen), in: session, backup: backup)
        remember(document.file, newVault: newVault)
    }
}
