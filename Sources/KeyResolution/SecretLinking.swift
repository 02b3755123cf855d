import GoogleAuth
import Settings
import SystemIO
import VaultAccess
import VaultCore

/// `key set NAME --from gsm://…`: the secret's value fetched now, checked, and stored with the
/// link, so that it is fetched again when its copy is older than secret_cache_ttl.
public enum SecretLinking {
    /// Why a key was not linked; each words itself (ErrorReports.swift).
    public enum Refusal: Error, Equatable, Sendable {
        /// `--from` is not a gsm:// reference (exit 64).
        case notAReference(String)
        /// Secret Manager answers an older version than the one the key took, without --relink (exit 1).
        case olderVersion(name: String, taken: UInt64, answered: UInt64, resource: String, reference: String)
    }

    /// What was stored: the vault's outcome, the value, and where it came from.
    public struct Linked {
        public let outcome: VaultChange.Outcome
        public let value: SecretBytes
        public let resource: String
        public let version: UInt64
        /// The settings it was fetched with (the vault's among them).
        public let settings: Settings
    }

    /// Fetches `from` with the vault's settings (`resolve` layers them in), refuses an older
    /// version than the key took unless `relink`, lets `beforeStoring` look at the value, and stores it.
    public static func link(_ name: String, from text: String, vault: VaultAccess, resolve: ([String: String]) throws -> Settings, relink: Bool,
                            environment: [String: String], home: String, warn: @escaping (String) -> Void,
                            beforeStoring: (SecretBytes) -> Void) throws -> Linked {
        guard let reference = SecretReference(parsing: text) else { throw Refusal.notAReference(text) }
        try vault.checkBeforePrompt()
        let settings = try resolve(try vault.settings())
        let endpoint = try settings.credentialEndpoint(.secretmanagerEndpoint, warn: warn)
        let credentials = try CredentialSettings(settings, environment: environment, home: home, allowInsecure: false, warn: warn)
        let fetched = try SecretManagerKey.access(reference, settings, endpoint: endpoint, credentials: credentials)
        try refuseOlder(fetched, reference, name: name, vault: vault, relink: relink)
        beforeStoring(fetched.value)
        let now = Clock.now()
        let outcome = try vault.apply(.linkKey(name: name, secret: fetched.value, now: now,
                                               link: SecretLink(reference: reference.description, version: fetched.version, fetched: now)))
        return Linked(outcome: outcome, value: fetched.value, resource: reference.resource, version: fetched.version, settings: settings)
    }

    /// Linking a key again to the latest version of its secret never goes back to an older
    /// version than the one it took, unless --relink says so (the way back from a forged answer).
    static func refuseOlder(_ fetched: FetchedSecret, _ reference: SecretReference, name: String, vault: VaultAccess, relink: Bool) throws {
        guard reference.version == nil, !relink, let taken = try vault.keySummaries().first(where: { $0.name == name })?.link,
              SecretReference(parsing: taken.reference)?.resource == reference.resource, fetched.version < taken.version else { return }
        throw Refusal.olderVersion(name: name, taken: taken.version, answered: fetched.version, resource: reference.resource, reference: reference.description)
    }

    /// The secret a link names (`projects/P/secrets/S`), or the link as written when it is not a reference.
    public static func secret(of reference: String) -> String {
        SecretReference(parsing: reference)?.resource ?? reference
    }
}
