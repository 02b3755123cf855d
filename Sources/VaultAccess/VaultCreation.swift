import SystemIO
import VaultCore

/// A vault just written, open with the key its passphrase derived, and its recovery code (to show once).
public struct CreatedVault {
    public let vault: UnlockedVault
    public let recoveryCode: SecretBytes
    /// Where the vault it replaced was kept, with its conversations.
    public let keptAside: String?
}

/// A vault.bak made the vault again.
public struct RestoredBackup: Equatable {
    /// Where the replaced vault was kept, when there was one.
    public let keptAside: String?
    /// The restored vault's new generation.
    public let generation: UInt64
}

/// Making a vault, and putting its backup back: what `init`, the first run and `restore-backup` write.
extension VaultAccess {
    /// A new vault with `passphrase`, a recovery code and a sharing identity (`identityLabel`;
    /// hybrid post-quantum unless `classicIdentity`), written under the lock. An existing vault is refused, or with `replacing` (init --force)
    /// kept aside as `.replaced-STAMP` and its conversations given to `moveConversations`.
    public func create(passphrase: SecretBytes, kdf: KDFParameters, identityLabel: String, classicIdentity: Bool = false, replacing: Bool,
                       dateStamp: String, moveConversations: (String) -> Void) throws -> CreatedVault {
        let code = RecoveryCode.generate()
        let document = try VaultDocument.create(path: path, passphrase: passphrase, recoveryCode: code, kdf: kdf)
        // The sharing identity is born with the vault (older vaults get one on first use).
        try VaultChange.identity(label: identityLabel, relabel: false, classic: classicIdentity).apply(to: document.contents)
        var kept: String?
        try store.withExclusiveLock { session in
            if try session.read() != nil {
                guard replacing else { throw VaultError.alreadyExists(path: path) }
                // Nothing a flag does may lose keys: the old vault stays, under a dated name.
                kept = try session.keepAside(suffix: ".replaced-" + dateStamp)
            }
            if let kept { moveConversations(kept) }
            try save(document, in: session, backup: .previous, newVault: true)
        }
        note(document.contents)
        return CreatedVault(vault: try created(document), recoveryCode: code, keptAside: kept)
    }

    /// Checks vault.bak with the passphrase (asked as for any unlock) and makes it the vault
    /// again with a new generation; the vault it replaces, whatever its state, is kept aside
    /// as `.damaged-STAMP`.
    public func restoreBackup(dateStamp: String, onWait: (String) -> Void) throws -> RestoredBackup {
        let policy = file.kdfPolicy
        _ = try VaultFile.parse(try store.readBackup(), path: store.backupPath, policy: policy)
        var kept: String?
        var generation: UInt64 = 0
        try withSecret(.passphrase) { passphrase in try store.withExclusiveLock(onWait: onWait) { session in
            let backup = try VaultFile.parse(try session.readBackup(), path: store.backupPath, policy: policy)
            let document = try VaultDocument.open(backup, path: store.backupPath, key: PassphraseKey.unlocking(backup, with: passphrase))
            // Nothing is lost: the vault being replaced stays beside it, whatever state it is in.
            if store.exists {
                kept = try session.keepAside(suffix: ".damaged-" + dateStamp)
            }
            try save(document, in: session, backup: .unchanged)
            generation = document.file.generation
        } }
        return RestoredBackup(keptAside: kept, generation: generation)
    }
}
