import VaultCore

/// Which secret a command asks for to open the vault. A new slot kind is a new case here, in
/// `Unlock` and in `UnlockKey`. `.passphrase` means any way in the vault offers: an ssh-agent
/// slot is tried first (`SSHSlotUnlock`).
public enum UnlockKind: Sendable, Equatable {
    case passphrase
    /// The passphrase `passwd` is about to replace: asked for by that name.
    case currentPassphrase
    /// The passphrase itself, never an ssh slot: for changes that rewrap the passphrase slot
    /// or remove a way in (rekey, recovery-code, slot rm).
    case passphraseSlot
    case recoveryCode
}

/// The secret that opens the vault for one command, typed by the slot it opens.
public enum Unlock {
    case passphrase(SecretBytes)
    case recoveryCode(SecretBytes)
    /// An ssh-agent's signature, already checked against its slot (`SSHSlotUnlock`).
    case sshAgent(SSHSlotOpener)

    /// The error a secret that opens nothing is reported with.
    var wrongSecret: VaultError {
        switch self {
        case .passphrase: .wrongPassphrase
        case .recoveryCode: .wrongRecoveryCode
        case .sshAgent: .wrongPassphrase
        }
    }

    /// The key of `file`'s slot for this secret, derived once (one Argon2 run).
    public func derive(opening file: VaultFile) throws -> UnlockKey {
        switch self {
        case .passphrase(let secret):
            guard let key = try PassphraseKey.derive(secret, opening: file) else { throw wrongSecret }
            return UnlockKey(unlock: self, derived: .passphrase(key))
        case .recoveryCode(let code):
            guard let key = try RecoveryKey.derive(code, opening: file) else { throw wrongSecret }
            return UnlockKey(unlock: self, derived: .recoveryCode(key))
        case .sshAgent(let opener):
            return UnlockKey(unlock: self, derived: .sshAgent(opener))
        }
    }

    /// Opens `file` from the secret itself: a full derivation.
    func open(_ file: VaultFile, path: String) throws -> VaultDocument {
        switch self {
        case .passphrase(let secret): try VaultDocument.open(file, path: path, passphrase: secret)
        case .recoveryCode(let code): try VaultDocument.open(file, path: path, recoveryCode: code)
        case .sshAgent(let opener): try VaultDocument.open(file, path: path, ssh: opener)
        }
    }
}

/// A secret with the key it derived for the vault's slot, so reading and then writing cost
/// one Argon2 run while the slot is unchanged.
public struct UnlockKey {
    /// The secret, derived again if the slot changed; nil for a vault this command created.
    public let unlock: Unlock?
    enum Derived {
        case passphrase(PassphraseKey)
        case recoveryCode(RecoveryKey)
        /// A vault this command created: its passphrase slot's key, taken from the new document.
        case created(SecretBytes)
        /// An ssh slot's key pair: it opens the slot whatever data key it holds now.
        case sshAgent(SSHSlotOpener)
    }
    let derived: Derived

    /// Opens `file` with the derived key while its slot is the one it was derived for; after
    /// another writer's passwd changed the salt, the secret is derived again.
    func open(_ file: VaultFile, path: String) throws -> VaultDocument {
        switch derived {
        case .passphrase(let key) where key.fits(file): return try VaultDocument.open(file, path: path, kek: key.kek)
        case .recoveryCode(let key) where key.fits(file): return try VaultDocument.open(file, path: path, recoveryKey: key)
        case .created(let kek): return try VaultDocument.open(file, path: path, kek: kek)
        case .sshAgent(let opener): return try VaultDocument.open(file, path: path, ssh: opener)
        default:
            guard let unlock else { throw VaultError.wrongPassphrase }
            return try unlock.open(file, path: path)
        }
    }

    /// The passphrase slot's derived key, which a new passphrase keeps the parameters of.
    public var passphraseKey: PassphraseKey? {
        if case .passphrase(let key) = derived { return key }
        return nil
    }
}
