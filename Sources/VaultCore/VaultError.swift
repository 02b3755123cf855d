import SystemIO

/// Everything that can go wrong with a vault, sorted by what the user has to do about it.
public enum VaultError: Error, Equatable, Sendable {
    /// No vault at this path.
    case notFound(path: String)
    /// `init` found a vault already there.
    case alreadyExists(path: String)
    /// A file or folder gemvault refuses: a symlink, someone else's, or open to others.
    case refused(FileCheckFailure)
    /// The passphrase did not open the passphrase slot (or the slot was altered).
    case wrongPassphrase
    /// The recovery code did not open the recovery slot (or the slot was altered).
    case wrongRecoveryCode
    /// The file is not a vault, or its bytes were damaged or cut short.
    case damaged(path: String, detail: String)
    /// The key slots are not what any writer produces.
    case slotsDamaged(path: String, detail: String)
    /// The key opened, but authentication of the header or payload failed.
    case tampered(path: String)
    /// A file format version this build does not read.
    case unsupportedVersion(path: String, version: Int)
    /// The decrypted contents have a version this build does not read.
    case unsupportedPayloadVersion(path: String, version: Int)
    /// The decrypted contents break a rule every writer follows.
    case payloadDamaged(path: String, detail: String)
    /// KDF parameters outside the accepted bounds (downgrade or denial-of-service attempt).
    case kdfParametersRejected(path: String, detail: String)
    /// The file is older than a generation already seen for this vault.
    case rolledBack(path: String, generation: UInt64, seen: UInt64)
    /// The file at the path is another vault than the one seen there before (ids in hex).
    case anotherVault(path: String, found: String, seen: String)
    /// Another writer held the lock for the whole wait.
    case lockTimedOut(path: String, seconds: Double, holder: String?)
    /// A save failed; the vault on disk is unchanged.
    case writeFailed(path: String, reason: String)
    /// A file system call failed.
    case system(SystemError)
    /// libsodium failed, which only happens when memory runs out.
    case cryptoFailure(String)
    /// No key with this name.
    case keyNotFound(name: String)
    /// A key or setting name that the format cannot hold.
    case invalidName(String)
    /// A value larger than the format allows.
    case valueTooLarge(String)
    /// `key rollback` on a key without an earlier value.
    case noEarlierValue(name: String)
    /// The key is linked to Secret Manager: its value changes there, not by rotation here.
    case linkedKey(name: String, reference: String)
    /// A change for a linked key's rotation, when the key is (no longer) linked to that secret.
    case notLinked(name: String)
    /// No secret (for another tool) with this name.
    case secretNotFound(name: String)
    /// `secret rename` onto a name another secret has.
    case secretExists(name: String)
    /// `secret rollback` on a secret without an earlier value.
    case noEarlierSecretValue(name: String)
    /// A secret's value that is not printable text of 1 to 65,536 bytes; the reason says why.
    case invalidSecret(name: String, reason: String)
    /// A slot that cannot be added or removed; the text says why.
    case slotRefused(String)
    /// No backup to restore.
    case noBackup(path: String)
}

extension VaultError {
    public init(_ error: TrustedOpenError) {
        switch error {
        case .refused(let failure): self = .refused(failure)
        case .failed(let system): self = .system(system)
        }
    }

    /// A lock that could not be taken: its file refused, another holder past the time, or a failure.
    public init(_ error: FileLock.Failure) {
        switch error {
        case .open(let error): self.init(error)
        case .timedOut(let path, let seconds, let holder): self = .lockTimedOut(path: path, seconds: seconds, holder: holder)
        case .failed(let error): self = .system(error)
        }
    }
}
