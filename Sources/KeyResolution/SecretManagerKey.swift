import GoogleAuth
import Settings
import SystemIO
import VaultCore

/// `key_secret`: a key kept in Secret Manager, fetched with the Google credentials rotation
/// uses (token_command, GOOGLE_APPLICATION_CREDENTIALS, gcloud's, the metadata server) every
/// time it is needed and held in memory only, for machines without a vault (a CI runner).
public enum SecretManagerKey {
    static func fetch(_ settings: Settings, environment: [String: String], home: String, warn: @escaping (String) -> Void) throws -> ResolvedKey? {
        guard let text = settings[.keySecret], !text.isEmpty else { return nil }
        guard let reference = SecretReference(parsing: text) else {
            throw ConfigError.invalidValue(layer: settings.resolved(.keySecret).origin.label, setting: Setting.keySecret.name,
                                           message: "'\(text)' is not gsm://projects/PROJECT/secrets/SECRET or …/versions/N", fromFlag: false)
        }
        let endpoint = try settings.credentialEndpoint(.secretmanagerEndpoint, warn: warn)
        let credentials = try CredentialSettings(settings, environment: environment, home: home, allowInsecure: false, warn: warn)
        let fetched = try access(reference, settings, endpoint: endpoint, credentials: credentials)
        return ResolvedKey(secret: fetched.value, source: .secretManager(secret: reference.resource, version: fetched.version), updated: nil)
    }

    /// One fetch of `reference`, with the command's Google credentials (`CredentialSettings(settings…)`).
    /// `endpoint`: secretmanager_endpoint as `Settings.credentialEndpoint` allows it.
    /// `newerThan`: the version already taken; a newer answer must be one the secret has.
    public static func access(_ reference: SecretReference, _ settings: Settings, endpoint: String, credentials credentialSettings: CredentialSettings,
                              newerThan known: UInt64? = nil, check: FetchedValueCheck = .googleKey) throws(GoogleError) -> FetchedSecret {
        var credentialSettings = credentialSettings
        credentialSettings.service = "Secret Manager (\(reference.resource))"
        let credentials = GoogleCredentials(credentialSettings)
        let client = SecretManagerClient(endpoint: endpoint, token: try credentials.token(), timeout: settings[.timeout],
                                         retries: settings[.retries])
        let fetched = try client.access(reference, check: check)
        if let known, reference.version == nil { try client.confirmNewer(fetched, than: known, reference) }
        return fetched
    }
}

/// What refreshing a linked vault key gave: a value fetched now, or the cached one.
public struct LinkedValue {
    public let secret: SecretBytes
    public let link: SecretLink
    /// True when the vault's copy was used (fresh enough, or Secret Manager out of reach).
    public let fromCache: Bool
}

extension KeyResolver {
    /// A vault key linked to Secret Manager (`key set --from`): its copy when younger than
    /// `secret_cache_ttl`; else fetched, checked and stored. When Secret Manager cannot be
    /// reached the copy is used with one warning up to `secret_max_stale`, then it is an
    /// error (exit 7); a refusal or bad data is an error at once, and the copy stays.
    public func linkedValue(of stored: StoredKey, _ settings: Settings) throws -> LinkedValue? {
        guard let link = stored.link else { return nil }
        if Double(Clock.now() - link.fetched) < settings[.secretCacheTTL] { return LinkedValue(secret: stored.secret, link: link, fromCache: true) }
        guard let reference = SecretReference(parsing: link.reference) else {
            throw VaultError.payloadDamaged(path: vaultPath, detail: "the Secret Manager link of '\(stored.name)' is not a gsm:// reference")
        }
        let refresh = LinkedRefresh(shown: "'\(stored.name)'", name: stored.name, link: link, reference: reference,
                                    olderVersionHint: "if the newer version was disabled on purpose (or the vault took a forged one), link the secret again: gemvault key set \(stored.name) --from \(SecretReference.scheme + reference.resource) --relink",
                                    warn: warn, note: note)
        let refreshed = try refresh.run(settings, environment: environment, home: paths.home, check: .googleKey) { value, newLink, now in
            try vault.apply(.refreshLink(name: stored.name, secret: value, now: now, link: newLink, since: link.fetched)).replaced
        }
        guard let refreshed else { return LinkedValue(secret: stored.secret, link: link, fromCache: true) }
        return LinkedValue(secret: refreshed.value, link: refreshed.link, fromCache: false)
    }
}
