import GoogleAuth
import Settings

extension CredentialSettings {
    /// The one way a command's settings make its Google credentials: token_command, the STS and
    /// IAM Credentials endpoints (non-Google hosts only as `Settings.credentialEndpoint` allows),
    /// and a CI job's federation (`workload_identity_provider`), for Gemini, rotation and Secret
    /// Manager alike.
    public init(_ settings: Settings, environment: [String: String], home: String, allowInsecure: Bool,
                warn: @escaping (String) -> Void) throws(ConfigError) {
        self.init(tokenCommand: settings[.tokenCommand], commandTimeout: settings[.keyCommandTimeout], environment: environment,
                  home: home, timeout: settings[.timeout], allowInsecure: allowInsecure, warn: warn)
        if settings.resolved(.stsEndpoint).origin != .builtIn { stsEndpoint = try settings.credentialEndpoint(.stsEndpoint, warn: warn) }
        if settings.resolved(.iamcredentialsEndpoint).origin != .builtIn {
            iamCredentialsEndpoint = try settings.credentialEndpoint(.iamcredentialsEndpoint, warn: warn)
        }
        if let provider = settings[.workloadIdentityProvider], !provider.isEmpty {
            federation = CIFederation(provider: provider, serviceAccount: settings[.serviceAccount], oidcTokenEnv: settings[.oidcTokenEnv])
        }
    }
}
