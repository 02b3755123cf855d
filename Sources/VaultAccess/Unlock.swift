import VaultCore

/// Which secret a command asks for to open the vault. A new slot kind (a PIN, an ssh-agent
/// signature) is a new case here, in `Unlock` and in `UnlockKey`.
public enum UnlockKind: Sendable, Equatable {
    case passphrase
    /// The passphrase `passwd` is about to replace: asked for by that name.
    case currentPassphrase
    case recoveryCode
}

/// The secret that opens the vault for one command, typed by the slot it opens.
public enum Unlock {
    case passphrase(SecretBytes)
    case recoveryCode(SecretBytes)

    /// The error a secret that opens nothing is reported with.
    var wrongSecret: VaultError {
        switch self {
        case .passphrase: .wrongPassphrase
        case .recoveryCode: .wrongRecoveryCode
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
        }
    }

    /// Opens `file` from the secret itself: a full derivation.
    func open(_ file: VaultFile, path: String) throws -> VaultDocument {
        switch self {
        case .passphrase(let secret): try VaultDocument.open(file, path: path, passphrase: secret)
        case .recoveryCode(let code): try VaultDocument.open(file, path: path, recoveryCode: code)
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
    }
    let derived: Derived

    /// Opens `file` with the derived key while its slot is the one it was derived for; after
    /// another writer's passwd changed the salt, the secret is derived again.
    func open(_ file: VaultFile, path: String) throws -> VaultDocument {
        switch derived {
        case .passphrase(let key) where key.fits(file): return try VaultDocument.open(file, path: path, kek: key.kek)
        case .recoveryCode(let key) where key.fits(file): return try VaultDocument.open(file, path: path, recoveryKey: key)
        case .created(let kek): return try VaultDocument.open(file, path: path, kek: kek)
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
