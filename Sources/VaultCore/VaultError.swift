/// Everything that can go wrong with a vault, sorted by what the user has to do about it.
public enum VaultError: Error, Equatable, Sendable {
    /// No vault at this path.
    case notFound(path: String)
    /// `init` found a vault already there.
    case alreadyExists(path: String)
    /// A file gemvault refuses to read: a symlink, someone else's, or open to group or others.
    case insecureFile(path: String, problem: String, fix: String)
    /// The passphrase did not open any passphrase slot.
    case wrongPassphrase
    /// The recovery code did not open the recovery slot.
    case wrongRecoveryCode
    /// The file is not a gemvault vault, or its bytes do not match the checksum (accidental damage).
    case damaged(path: String, detail: String)
    /// The checksum matched, the key opened, but authentication of the header or payload failed.
    case tampered(path: String)
    /// A format version this build does not read.
    case unsupportedVersion(path: String, version: Int)
    /// KDF parameters outside the accepted bounds (downgrade or denial-of-service attempt).
    case kdfParametersRejected(path: String, detail: String)
    /// A file system call failed.
    case io(operation: String, path: String, errno: Int32)
    /// No key with this name.
    case keyNotFound(name: String)
    /// A key or setting name that the format cannot hold.
    case invalidName(String)
    /// A value larger than the format allows.
    case valueTooLarge(String)
}
