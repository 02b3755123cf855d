import SystemIO

/// Errors of the settings: a value, a setting's name, config.json or an endpoint refused.
public enum ConfigError: Error, Equatable, Sendable {
    /// A value refused by validation, naming the layer it came from (`config.json`, `GEMVAULT_MODEL`, `--temperature`).
    case invalidValue(layer: String, setting: String, message: String, fromFlag: Bool)
    case unknownSetting(String)
    case invalidFile(path: String, reason: String)
    case unreadable(path: String, reason: String)
    case insecureEndpoint(String, layer: String, setting: String = "endpoint")
    /// A host other than Google's and loopback for an endpoint that receives Google access
    /// tokens, from a layer anyone who can set an environment variable or write config.json
    /// controls: only the vault or the command's own flag may name one.
    case untrustedEndpoint(String, layer: String, setting: String)
    /// config.json or its folder could be changed by another user.
    case refused(FileCheckFailure)
}
