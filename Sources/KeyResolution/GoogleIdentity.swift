import GoogleAuth
import GoogleHTTP
import Settings
import SystemIO
import VaultAccess
import VaultCore

/// `auth` = `google`: Gemini called with a Google identity's access token instead of a key
/// (Docs/keyless.md). The token comes from the credential chain with Gemini's scopes, is held in
/// secret memory for this command only, and is fetched again five minutes before it expires.
public final class GoogleIdentityToken: AccessTokenSource {
    /// A token is replaced this long before it expires.
    public static let refreshMargin: Int64 = 300
    /// A token whose issuer named no expiry (a token_command's) is kept this long.
    static let assumedLifetime: Int64 = 600

    public let credentials: GoogleCredentials
    /// `quota_project`, else GOOGLE_CLOUD_QUOTA_PROJECT: billed for a user's token before the file's own.
    let quotaProject: String?
    private var held: AccessToken?
    private var heldUntil: Int64 = 0
    /// The unlocked session, which keeps a service account's token for the next commands.
    let session: VaultAccess?
    /// The chain's source, found once; it names the token in the session (with the scopes).
    private var found: CredentialSource?

    init(credentials: GoogleCredentials, quotaProject: String?, session: VaultAccess?) {
        self.credentials = credentials
        self.quotaProject = quotaProject
        self.session = session
    }

    /// The chain's source, without fetching anything.
    public func source() throws(GoogleError) -> CredentialSource {
        if let found { return found }
        let source = try credentials.source()
        found = source
        return source
    }

    /// Where the session keeps the token: the credential and the scopes. A user's token is not
    /// kept there, as its quota project comes with the fetch.
    func sessionKey() throws(GoogleError) -> String? {
        let source = try source()
        return source.isUserCredential ? nil : "google " + source.label + " " + credentials.settings.scopes.joined(separator: " ")
    }

    /// The token held, or the session's, or a new one; none within `refreshMargin` of its expiry.
    public func token() throws(GoogleError) -> AccessToken {
        let now = Clock.now()
        if let held, now < heldUntil - Self.refreshMargin { return held }
        let key = try sessionKey()
        if let key, let kept = session?.sessionToken(key), now < kept.expiresAt - Self.refreshMargin {
            return hold(AccessToken(token: kept.token, source: try source(), quotaProject: nil, expiresAt: kept.expiresAt))
        }
        let fresh = hold(try credentials.token())
        if let key, let expiresAt = fresh.expiresAt { session?.keepInSession(key, fresh.token, expiresAt: expiresAt) }
        return fresh
    }

    private func hold(_ token: AccessToken) -> AccessToken {
        Redaction.register(token.token)
        held = token
        heldUntil = token.expiresAt ?? Clock.now() + Self.assumedLifetime + Self.refreshMargin
        return token
    }

    public func current() throws(TokenUnavailable) -> BearerCredential {
        do {
            let token = try token()
            return BearerCredential(token: token.token, userProject: userProject(token))
        } catch {
            throw TokenUnavailable(message: error.message, hint: error.hint, network: error.category == .network)
        }
    }

    /// `x-goog-user-project`, for a user's credential only: the setting, the environment, the file.
    public func userProject(_ token: AccessToken) -> String? {
        guard token.source.isUserCredential else { return nil }
        return quotaProject ?? token.quotaProject
    }
}

/// `auth` is `google` (from a flag, the environment, config.json or the vault, as the key's walk
/// found it): no key is looked for; the caller takes the identity with these settings.
public struct GoogleIdentityWanted: Error {
    public let settings: Settings
}

extension KeyResolver {
    /// The Google credential file this machine offers (GOOGLE_APPLICATION_CREDENTIALS, else
    /// gcloud's), looked at without reading it: for the hint when no key is found.
    public var offeredGoogleCredential: String? { GoogleCredentials.credentialFile(environment: environment, home: paths.home) }

    /// The identity's token source and settings, and the stand-in for a key that names it.
    public func resolveGoogleIdentity(_ settings: Settings) throws -> (key: ResolvedKey, settings: Settings, token: GoogleIdentityToken) {
        var credentialSettings = try CredentialSettings(settings, environment: environment, home: paths.home, allowInsecure: layers.allowInsecureEndpoint, warn: warn)
        credentialSettings.scopes = geminiScopes
        credentialSettings.service = "the Gemini API (auth = google)"
        let quota = settings[.quotaProject] ?? environment["GOOGLE_CLOUD_QUOTA_PROJECT"].flatMap { $0.isEmpty ? nil : $0 }
        let token = GoogleIdentityToken(credentials: GoogleCredentials(credentialSettings), quotaProject: quota, session: vault)
        let source = try token.source()
        let key = ResolvedKey(secret: SecretBytes(utf8: "google:" + source.principal), source: .googleIdentity(principal: source.principal, chain: source.chainLabel), updated: nil)
        return (key, settings, token)
    }
}
