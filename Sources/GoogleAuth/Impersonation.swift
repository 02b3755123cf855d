import FoundationEssentials
import GoogleHTTP
import SystemIO
import VaultCore

/// The scope Gemini's Developer API needs besides `cloud-platform` (a token with
/// `cloud-platform` alone is refused with ACCESS_TOKEN_SCOPE_INSUFFICIENT).
public let generativeLanguageScope = "https://www.googleapis.com/auth/generative-language.retriever"
/// What a token for Gemini is asked with.
public let geminiScopes = [cloudPlatformScope, generativeLanguageScope]
let defaultIAMCredentialsEndpoint = "https://iamcredentials.googleapis.com"
let defaultSTSEndpoint = "https://sts.googleapis.com"

/// A URL a credential file names (`token_url`, `service_account_impersonation_url`): https, or
/// http on loopback; Google's or this machine's, as a file is copied around and written by tools.
func checkedFileURL(_ uri: String, field: String, path: String, allowInsecure: Bool) throws(GoogleError) -> String {
    guard let url = EndpointURL(uri) else { throw GoogleError(.credentials, "the credential file \(path) has a \(field) that is not an http or https URL") }
    guard url.isSecure || allowInsecure else {
        throw GoogleError(.credentials, "the credential file \(path) has \(field) \(uri), plain http on a non-loopback host; the credential would travel unencrypted",
                          hint: "use https, or pass --allow-insecure-endpoint if you really mean it")
    }
    guard !url.isCustom else {
        throw GoogleError(.credentials, "the credential file \(path) has \(field) \(uri), which is not Google's and not loopback; its credential is not sent there",
                          hint: "use Google's URL, or set the endpoint in the vault or on the command line for a private deployment")
    }
    return uri
}

/// The service account a token is minted for with IAM Credentials `generateAccessToken`.
struct ServiceAccountTarget {
    let email: String
    /// The file's `service_account_impersonation_url`.
    let url: String
    /// Seconds the minted token lives (`token_lifetime_seconds`; Google's default is an hour).
    var lifetime = 3600
    /// `projects/-/serviceAccounts/…`, each allowed to act as the next.
    var delegates: [String] = []

    /// The email between the last `/` and `:generateAccessToken`, as Google's libraries read it.
    init(url: String, path: String) throws(GoogleError) {
        let tail = url.split(separator: "/").last.map(String.init) ?? ""
        guard tail.hasSuffix(":generateAccessToken"), tail.count > ":generateAccessToken".count else {
            throw GoogleError(.credentials, "the credential file \(path) has a service_account_impersonation_url that does not end in …/serviceAccounts/EMAIL:generateAccessToken")
        }
        self.email = String(tail.dropLast(":generateAccessToken".count))
        self.url = url
    }

    init(email: String) {
        self.email = email
        self.url = defaultIAMCredentialsEndpoint + "/v1/projects/-/serviceAccounts/\(email):generateAccessToken"
    }

    /// The endpoint asked: `iamcredentials_endpoint` when set, else the file's URL.
    func endpoint(_ settings: CredentialSettings, path: String) throws(GoogleError) -> String {
        if let base = settings.iamCredentialsEndpoint { return base + "/v1/projects/-/serviceAccounts/\(email):generateAccessToken" }
        return try checkedFileURL(url, field: "service_account_impersonation_url", path: path, allowInsecure: settings.allowInsecure)
    }

    /// A token for this account with `scopes`, asked with the caller's `bearer`.
    /// `caller` and `role` name who asked and what it needs, for a refusal.
    func generateAccessToken(bearer: SecretBytes, scopes: [String], settings: CredentialSettings, transport: any HTTPTransport,
                             path: String, caller: String, role: String) throws(GoogleError) -> TokenEndpoint.Minted {
        struct Request: Encodable { let scope: [String]; let lifetime: String; let delegates: [String]? }
        struct Answer: Decodable { let expireTime: String? }
        let url = try endpoint(settings, path: path)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let body = try? encoder.encode(Request(scope: scopes, lifetime: "\(lifetime)s", delegates: delegates.isEmpty ? nil : delegates)) else {
            throw GoogleError(.credentials, "could not write the generateAccessToken request")
        }
        let policy = RetryPolicy(maxAttempts: 3, retryOn: [.noAnswer, .rateLimit, .serverErrors], backoff: .exponential(initial: 1, max: 4, jitter: false))
        let json = try GoogleExchange(transport: transport, timeout: settings.timeout).call(
            "POST", .plain(url), body: .plain(Array(body)), headers: [], bearer: bearer, policy: policy, clock: .standard,
            service: "IAM Credentials", setting: "iamcredentials_endpoint", what: "minting a token for \(email)", secretFields: ["accessToken"],
            refusal: { status, envelope in refusal(status, envelope, caller: caller, role: role) })
        guard let token = json.secrets["accessToken"]?.singleLineCredential() else {
            throw GoogleError(.badData, "IAM Credentials answered without a usable accessToken for \(email)")
        }
        Redaction.register(token)
        let expiry = json.decode(Answer.self)?.expireTime.flatMap(GoogleKey.unixSeconds)
        return TokenEndpoint.Minted(token: token, expiresAt: expiry)
    }

    /// Names the principal, the permission and the fix.
    func refusal(_ status: Int, _ envelope: GoogleStatus?, caller: String, role: String) -> GoogleError {
        let said = envelope?.message.map { ", " + GoogleStatus.shown($0) } ?? ""
        let category: GoogleError.Category = status >= 500 ? .network : .refused
        let hint = status == 403 || status == 401
            ? "\(caller) needs iam.serviceAccounts.getAccessToken on \(email): grant it \(role) (gcloud iam service-accounts add-iam-policy-binding \(email) --role=\(role) --member=PRINCIPAL), and check that the IAM Credentials API (iamcredentials.googleapis.com) is enabled"
            : nil
        return GoogleError(category, "IAM Credentials refused a token for \(email) to \(caller) (HTTP \(status)\(said))", hint: hint,
                           status: status, reason: envelope?.googleReason)
    }
}

/// An `impersonated_service_account` file: a source credential (a user's or a service
/// account's) that mints tokens for a target service account.
struct ImpersonatedAccount {
    struct Fields: Decodable {
        let service_account_impersonation_url: String?
        let delegates: [String]?
        let quota_project_id: String?
        let source_credentials: CredentialFile.Fields?
    }

    let path: String
    let target: ServiceAccountTarget
    let source: CredentialFile
    let quotaProject: String?

    static func parse(_ split: SecretJSON, path: String) throws(GoogleError) -> ImpersonatedAccount {
        guard let fields = split.decode(Fields.self), let url = fields.service_account_impersonation_url, let nested = fields.source_credentials else {
            throw GoogleError(.credentials, "the impersonated_service_account file \(path) lacks service_account_impersonation_url or source_credentials")
        }
        var target = try ServiceAccountTarget(url: url, path: path)
        target.delegates = (fields.delegates ?? []).map { $0.hasPrefix("projects/") ? $0 : "projects/-/serviceAccounts/" + $0 }
        let kind: CredentialFile.Kind
        switch nested.type {
        case "service_account", "authorized_user": kind = try CredentialFile.kind(of: nested, split, path: path + " (source_credentials)")
        case let other:
            throw GoogleError(.credentials, "the impersonated_service_account file \(path) has source_credentials of type '\(other ?? "none")'; gemvault takes service_account or authorized_user there")
        }
        let source = CredentialFile(path: path, kind: kind, fields: nested, secrets: split.secrets)
        return ImpersonatedAccount(path: path, target: target, source: source, quotaProject: fields.quota_project_id)
    }

    func token(settings: CredentialSettings, transport: any HTTPTransport) throws(GoogleError) -> AccessToken {
        // The source only needs to call IAM Credentials; Gemini's scopes go on the minted token.
        var sourceSettings = settings
        sourceSettings.scopes = [cloudPlatformScope]
        let sourceToken = try source.exchange(settings: sourceSettings, transport: transport)
        let caller = source.fields.client_email ?? "the user of \(path)"
        let minted = try target.generateAccessToken(bearer: sourceToken.token, scopes: settings.scopes, settings: settings, transport: transport,
                                                    path: path, caller: caller, role: "roles/iam.serviceAccountTokenCreator")
        return AccessToken(token: minted.token, source: .impersonatedAccount(path: path, email: target.email), quotaProject: quotaProject,
                           expiresAt: minted.expiresAt)
    }
}
