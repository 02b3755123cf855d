import GoogleAuth
import Settings
import SystemIO
import VaultAccess
import VaultCore

/// Secrets for other tools linked to Secret Manager (`secret set NAME --from gsm://…`): fetched
/// and checked as text (not as a Google key), stored with the link, and fetched again when the
/// copy is older than secret_cache_ttl, as a linked key is (SecretManagerKey.swift).
public struct LinkedToolSecrets {
    let vault: VaultAccess
    /// The settings with the vault's layered in.
    let resolve: ([String: String]) throws -> Settings
    let environment: [String: String]
    let home: String
    let warn: (String) -> Void
    let note: (String) -> Void

    public init(vault: VaultAccess, resolve: @escaping ([String: String]) throws -> Settings, environment: [String: String], home: String,
                warn: @escaping (String) -> Void, note: @escaping (String) -> Void) {
        self.vault = vault
        self.resolve = resolve
        self.environment = environment
        self.home = home
        self.warn = warn
        self.note = note
    }

    /// Fetches `text` now (one line of printable text, or several with `multiline`) and stores it
    /// as `name` with its link; a replaced value goes into the secret's history.
    public func link(_ name: String, from text: String, multiline: Bool) throws -> SecretLinking.Linked {
        guard let reference = SecretReference(parsing: text) else { throw SecretLinking.Refusal.notAReference(text) }
        try vault.checkBeforePrompt()
        let settings = try resolve(try vault.settings())
        let endpoint = try settings.credentialEndpoint(.secretmanagerEndpoint, warn: warn)
        let credentials = try CredentialSettings(settings, environment: environment, home: home, allowInsecure: false, warn: warn)
        let fetched = try SecretManagerKey.access(reference, settings, endpoint: endpoint, credentials: credentials, check: .text(multiline: multiline))
        Redaction.register(fetched.value)
        let now = Clock.now()
        let outcome = try vault.apply(.secret(.link(name: name, value: fetched.value, now: now,
                                                    link: SecretLink(reference: reference.description, version: fetched.version, fetched: now))))
        return SecretLinking.Linked(outcome: outcome, value: fetched.value, resource: reference.resource, version: fetched.version, settings: settings)
    }

    /// The value to hand out: the secret's own, or for a linked one whose copy is older than
    /// secret_cache_ttl the latest version fetched now (kept in the vault, best effort). Secret
    /// Manager out of reach: the copy, with a warning, up to secret_max_stale; a refusal, bad
    /// data or an older version than the one taken is an error, and the copy stays.
    public func current(_ secret: ToolSecret) throws -> SecretBytes {
        guard let link = secret.link else { return secret.value }
        let settings = try resolve(try vault.settings())
        if Double(Clock.now() - link.fetched) < settings[.secretCacheTTL] { return secret.value }
        guard let reference = SecretReference(parsing: link.reference) else {
            throw GoogleError(.badData, "the Secret Manager link of secret '\(secret.name)' is not a gsm:// reference")
        }
        let refresh = LinkedRefresh(shown: "secret '\(secret.name)'", name: secret.name, link: link, reference: reference,
                                    olderVersionHint: "if the newer version was disabled on purpose, link the secret again: gemvault secret set \(secret.name) --from \(SecretReference.scheme + reference.resource)",
                                    warn: warn, note: note)
        let refreshed = try refresh.run(settings, environment: environment, home: home, check: .text(multiline: true)) { value, newLink, now in
            try vault.apply(.secret(.refreshLink(name: secret.name, value: value, now: now, link: newLink, since: link.fetched))).replaced
        }
        return refreshed?.value ?? secret.value
    }
}
