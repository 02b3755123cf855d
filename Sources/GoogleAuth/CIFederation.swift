import GoogleHTTP
import SystemIO
import VaultCore

/// A CI job's federation without a credential file (Docs/keyless.md): the provider and
/// service account from settings, the subject token from GitHub's runner
/// (ACTIONS_ID_TOKEN_REQUEST_URL and _TOKEN, asked with the provider's audience) or from a CI
/// variable (GitLab's `id_tokens`, named by `oidc_token_env`).
public struct CIFederation: Sendable {
    /// `projects/N/locations/global/workloadIdentityPools/P/providers/R`.
    public let provider: String
    public let serviceAccount: String?
    public let oidcTokenEnv: String?

    public init(provider: String, serviceAccount: String?, oidcTokenEnv: String?) {
        self.provider = provider
        self.serviceAccount = serviceAccount
        self.oidcTokenEnv = oidcTokenEnv
    }

    static let setting = "the workload_identity_provider setting"

    /// The audience GitHub's token is asked with, as Google's auth action asks it.
    var githubAudience: String {
        "https://iam.googleapis.com/" + provider
    }

    /// The federation as an `external_account` would describe it; nil when this job offers no
    /// subject token (not GitHub with id-token: write, and no oidc_token_env).
    func account(environment: [String: String]) throws(GoogleError) -> ExternalAccount? {
        let parts = provider.split(separator: "/")
        guard parts.count == 8, parts[0] == "projects", parts[2] == "locations", parts[4] == "workloadIdentityPools", parts[6] == "providers" else {
            throw GoogleError(.credentials, "workload_identity_provider '\(provider)' is not projects/N/locations/global/workloadIdentityPools/POOL/providers/PROVIDER",
                              hint: "print it with: gcloud iam workload-identity-pools providers describe PROVIDER --workload-identity-pool=POOL --location=global --format='value(name)'")
        }
        let subject: SubjectTokenSource
        var label = "GitHub OIDC"
        if let name = oidcTokenEnv, !name.isEmpty {
            subject = .environment(name: name)
            label = "CI OIDC $\(name)"
        } else if let url = environment["ACTIONS_ID_TOKEN_REQUEST_URL"], !url.isEmpty,
                  let requestToken = environment["ACTIONS_ID_TOKEN_REQUEST_TOKEN"], !requestToken.isEmpty {
            let secret = SecretBytes(utf8: "Bearer " + requestToken)
            Redaction.register(SecretBytes(utf8: requestToken))
            let asked = url + (url.contains("?") ? "&" : "?") + "audience=" + PercentEncoding.encode(githubAudience)
            subject = .url(asked, headers: [], authorization: secret, format: .json(field: "value"))
        } else {
            return nil
        }
        return ExternalAccount(path: Self.setting, audience: "//iam.googleapis.com/" + provider, subjectTokenType: "urn:ietf:params:oauth:token-type:jwt",
                               tokenURL: nil, subject: subject, impersonation: serviceAccount.map { ServiceAccountTarget(email: $0) }, subjectLabel: label)
    }
}
