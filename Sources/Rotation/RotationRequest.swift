import GoogleAuth
import GoogleHTTP
import Settings
import VaultAccess
import VaultCore

/// One rotation command as the workflow needs it: the options given, the vault, where this
/// user's state lives, how settings resolve once the vault's are known, and what the command
/// supplies (progress, the way to Google, the check of a new key).
public struct RotationRequest {
    /// The options a rotation reads, by their names on the command line.
    public enum Option: String, CaseIterable, Sendable {
        case ifOlderThan = "--if-older-than", ifDue = "--if-due", keepOld = "--keep-old", project = "--project"
        case serviceAccount = "--service-account", verifyTimeout = "--verify-timeout", grace = "--grace", noWait = "--no-wait"
        case forceClaim = "--force", allowInsecureEndpoint = "--allow-insecure-endpoint"

        public var name: String { rawValue }
    }

    /// Each option given, with its value ("" for a flag).
    public var given: [Option: String]
    public let vault: VaultAccess
    /// `$XDG_STATE_HOME`: the rotation journals live under it.
    public let stateHome: String
    public let environment: [String: String]
    public let home: String
    /// The command's settings with the vault's own layered in.
    public let resolve: ([String: String]) throws -> Settings
    public let progress: any RotationProgress
    /// The way to Google for the API Keys service, Secret Manager and the new key's check.
    public let transport: any HTTPTransport
    /// The check of a new key, for the settings the key will be used with.
    public let checker: (Settings, any HTTPTransport) throws -> any KeyChecker

    public init(given: [Option: String], vault: VaultAccess, stateHome: String, environment: [String: String], home: String,
                resolve: @escaping ([String: String]) throws -> Settings, progress: any RotationProgress, transport: any HTTPTransport,
                checker: @escaping (Settings, any HTTPTransport) throws -> any KeyChecker) {
        self.given = given
        self.vault = vault
        self.stateHome = stateHome
        self.environment = environment
        self.home = home
        self.resolve = resolve
        self.progress = progress
        self.transport = transport
        self.checker = checker
    }

    public func flag(_ option: Option) -> Bool { given[option] != nil }
    public func value(_ option: Option) -> String? { given[option] }
}
