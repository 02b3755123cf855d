import SystemIO
import VaultCore

/// Errors of the configuration layer.
public enum ConfigError: Error, Equatable, Sendable {
    /// A value refused by validation, naming the layer it came from (`config.json`, `GEMVAULT_MODEL`, `--temperature`).
    case invalidValue(layer: String, setting: String, message: String, fromFlag: Bool)
    case unknownSetting(String)
    case invalidFile(path: String, reason: String)
    case unreadable(path: String, reason: String)
    case insecureEndpoint(String, layer: String, setting: String = "endpoint")
    /// No key anywhere; `reasons` says what each source lacked.
    case noKey(reasons: [String])
    /// The vault has a key but no passphrase can be read without a terminal.
    case vaultNeedsPassphrase(path: String)
    case keyCommandFailed(command: String, detail: String, stderr: String, setting: String = "key_command")
    case keyFile(VaultError)
    /// config.json or its folder could be changed by another user.
    case refused(FileCheckFailure)
}
