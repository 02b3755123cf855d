import FoundationEssentials
import GoogleHTTP
import SystemIO
import VaultCore

/// An `external_account` file (Workload Identity Federation, AIP-4117): a subject token from
/// a file, a URL or a program, exchanged at Google's Security Token Service for a federated
/// token, which then mints a service account's token (`service_account_impersonation_url`)
/// or is used itself.
struct ExternalAccount {
    struct Fields: Decodable {
        struct Impersonation: Decodable { let token_lifetime_seconds: Int? }
        struct Format: Decodable { let type: String?; let subject_token_field_name: String? }
        struct Executable: Decodable { let command: String?; let timeout_millis: Int?; let output_file: String? }
        struct Source: Decodable {
            let file: String?
            let url: String?
            let headers: [String: String]?
            let format: Format?
            let executable: Executable?
        }
        let audience: String?
        let subject_token_type: String?
        let token_url: String?
        let service_account_impersonation_url: String?
        let service_account_impersonation: Impersonation?
        let credential_source: Source?
        let workforce_pool_user_project: String?
        let quota_project_id: String?
    }

    let path: String
    let audience: String
    let subjectTokenType: String
    /// The file's `token_url`; nil without a file (a CI job's federation, asked of `sts_endpoint`).
    let tokenURL: String?
    let subject: SubjectTokenSource
    let impersonation: ServiceAccountTarget?
    var workforceUserProject: String?
    var quotaProject: String?
    /// How `key which` names the subject token's source, when not by its URL or file.
    var subjectLabel: String?

    /// "GitHub OIDC → sts → gemini-ci@P.iam.gserviceaccount.com", for `key which`.
    /// Without impersonation the token is the federated principal's, named by its provider.
    var chain: String {
        let provider = audience.hasPrefix("//iam.googleapis.com/") ? String(audience.dropFirst("//iam.googleapis.com/".count)) : audience
        return (subjectLabel ?? subject.label) + " → sts → " + (impersonation?.email ?? provider)
    }

    static func parse(_ split: SecretJSON, path: String) throws(GoogleError) -> ExternalAccount {
        guard let fields = split.decode(Fields.self), let audience = fields.audience, let type = fields.subject_token_type,
              let tokenURL = fields.token_url, let source = fields.credential_source else {
            throw GoogleError(.credentials, "the external_account file \(path) lacks audience, subject_token_type, token_url or credential_source")
        }
        let subject = try SubjectTokenSource.parse(source, secrets: split.secrets, path: path)
        var impersonation: ServiceAccountTarget?
        if let url = fields.service_account_impersonation_url {
            impersonation = try ServiceAccountTarget(url: url, path: path)
            if let lifetime = fields.service_account_impersonation?.token_lifetime_seconds {
                guard (600...43200).contains(lifetime) else {
                    throw GoogleError(.credentials, "the external_account file \(path) asks for token_lifetime_seconds \(lifetime); Google allows 600 to 43200")
                }
                impersonation?.lifetime = lifetime
            }
        }
        if fields.workforce_pool_user_project != nil, !audience.hasPrefix("//iam.googleapis.com/locations/global/workforcePools/") {
            throw GoogleError(.credentials, "the external_account file \(path) sets workforce_pool_user_project, which only a workforce pool's audience takes")
        }
        return ExternalAccount(path: path, audience: audience, subjectTokenType: type, tokenURL: tokenURL, subject: subject, impersonation: impersonation,
                               workforceUserProject: fields.workforce_pool_user_project, quotaProject: fields.quota_project_id)
    }

    var source: CredentialSource { .externalAccount(path: path, chain: chain) }

    func token(settings: CredentialSettings, transport: any HTTPTransport) throws(GoogleError) -> AccessToken {
        let subjectToken = try subject.fetch(SubjectTokenSource.Context(audience: audience, tokenType: subjectTokenType,
                                                                        impersonatedEmail: impersonation?.email, settings: settings, transport: transport))
        // With impersonation STS grants only what generateAccessToken needs (AIP-4117).
        let federated = try exchange(subjectToken, scopes: impersonation == nil ? settings.scopes : [cloudPlatformScope], settings: settings, transport: transport)
        guard let impersonation else {
            return AccessToken(token: federated.token, source: source, quotaProject: quotaProject, expiresAt: federated.expiresAt)
        }
        let minted = try impersonation.generateAccessToken(bearer: federated.token, scopes: settings.scopes, settings: settings, transport: transport,
                                                           path: path, caller: "the federated principal of \(audience)", role: "roles/iam.workloadIdentityUser")
        return AccessToken(token: minted.token, source: source, quotaProject: quotaProject, expiresAt: minted.expiresAt)
    }

    /// `sts_endpoint` when set, else the file's token_url (Google's or loopback).
    func stsURL(_ settings: CredentialSettings) throws(GoogleError) -> String {
        if let base = settings.stsEndpoint { return base + "/v1/token" }
        guard let tokenURL else { return defaultSTSEndpoint + "/v1/token" }
        return try checkedFileURL(tokenURL, field: "token_url", path: path, allowInsecure: settings.allowInsecure)
    }

    /// The token exchange (RFC 8693 as Google's STS takes it): a form, no Authorization header.
    func exchange(_ subjectToken: SecretBytes, scopes: [String], settings: CredentialSettings,
                  transport: any HTTPTransport) throws(GoogleError) -> TokenEndpoint.Minted {
        let url = try stsURL(settings)
        var form = "grant_type=" + PercentEncoding.encode("urn:ietf:params:oauth:grant-type:token-exchange")
            + "&audience=" + PercentEncoding.encode(audience) + "&scope=" + PercentEncoding.encode(scopes.joined(separator: " "))
            + "&requested_token_type=" + PercentEncoding.encode("urn:ietf:params:oauth:token-type:access_token")
            + "&subject_token_type=" + PercentEncoding.encode(subjectTokenType)
        if let project = workforceUserProject { form += "&options=" + PercentEncoding.encode(#"{"userProject":"\#(project)"}"#) }
        let body = PercentEncoding.join([.literal(form + "&subject_token="), .encoded(subjectToken)])
        do {
            return try TokenEndpoint.mint(what: "the Security Token Service (\(url))", method: "POST", url: url, headers: [], body: .secret(body),
                                          exchange: GoogleExchange(transport: transport, timeout: settings.timeout))
        } catch where error.category == .refused {
            throw GoogleError(.refused, error.message + " for the audience \(audience)",
                              hint: "the workload identity provider must trust this token: its issuer, its allowed audiences (the token's aud) and its attribute condition; see: gcloud iam workload-identity-pools providers describe PROVIDER --workload-identity-pool=POOL --location=global",
                              status: error.status, reason: error.reason)
        }
    }
}
