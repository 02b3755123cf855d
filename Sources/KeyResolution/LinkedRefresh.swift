import GoogleAuth
import Settings
import SystemIO
import VaultCore

/// The one refresh rule of anything kept in the vault and linked to Secret Manager (a key by
/// `key set --from`, a secret by `secret set --from`), once its copy is older than
/// secret_cache_ttl: fetched and checked now; Secret Manager out of reach, the copy with one
/// warning up to secret_max_stale, then exit 7; a refusal, bad data or an older version than
/// the one taken is an error at once, and the copy stays. Storing the fetched value is best
/// effort: a vault that cannot be written still gets the value, and says so.
struct LinkedRefresh {
    /// How messages name the thing (`'lab'`, `secret 'github'`), and its name.
    let shown: String
    let name: String
    let link: SecretLink
    let reference: SecretReference
    /// What to do when Secret Manager went back to an older version.
    let olderVersionHint: String
    let warn: (String) -> Void
    let note: (String) -> Void

    /// The fetched value and its new link, or nil when the copy is to be used.
    func run(_ settings: Settings, environment: [String: String], home: String, check: FetchedValueCheck,
             store: (SecretBytes, SecretLink, _ now: Int64) throws -> Bool) throws -> (value: SecretBytes, link: SecretLink)? {
        let now = Clock.now()
        let endpoint = try settings.credentialEndpoint(.secretmanagerEndpoint, warn: warn)
        let credentials = try CredentialSettings(settings, environment: environment, home: home, allowInsecure: false, warn: warn)
        let attempt = Result { () throws(GoogleError) in
            try SecretManagerKey.access(reference, settings, endpoint: endpoint, credentials: credentials, newerThan: link.version, check: check)
        }
        if case .failure(let error) = attempt, error.category == .network || error.category == .credentials {
            let age = now - link.fetched
            guard Double(age) <= settings[.secretMaxStale] else {
                throw KeySourceError.secretUnreachable(name: name, secret: reference.resource, since: link.fetched, detail: error.message)
            }
            warn("could not refresh \(shown) from Secret Manager (\(error.message)); using the copy of version \(link.version) fetched \(Clock.elapsedText(age)) ago")
            return nil
        }
        let fetched = try attempt.get()
        // `latest` going back to an older version is a rollback at Google (or a replayed answer):
        // refused like a replayed share, the copy kept.
        guard fetched.version >= link.version else {
            throw GoogleError(.badData, "Secret Manager answered version \(fetched.version) of \(reference.resource) for \(shown), older than version \(link.version) already taken; the copy was kept",
                              hint: olderVersionHint)
        }
        let refreshed = SecretLink(reference: link.reference, version: fetched.version, fetched: now)
        do {
            if try store(fetched.value, refreshed, now) { note("took version \(fetched.version) of \(shown) from Secret Manager \(reference.resource)") }
        } catch {
            warn("fetched version \(fetched.version) of \(shown) from Secret Manager but could not keep it in the vault (\(error)); it is used for this command")
        }
        return (fetched.value, refreshed)
    }
}
