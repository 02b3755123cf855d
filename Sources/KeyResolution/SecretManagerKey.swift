import GoogleAuth
import Settings
import SystemIO
import VaultCore

/// `key_secret`: a key kept in Secret Manager, fetched with the Google credentials rotation
/// uses (token_command, GOOGLE_APPLICATION_CREDENTIALS, gcloud's, the metadata server) every
/// time it is needed and held in memory only, for machines without a vault (a CI runner).
enum SecretManagerKey {
    static func fetch(_ settings: Settings, environment: [String: String], home: String, warn: @escaping (String) -> Void) throws -> ResolvedKey? {
        guard let text = settings[.keySecret], !text.isEmpty else { return nil }
        guard let reference = SecretReference(parsing: text) else {
            throw ConfigError.invalidValue(layer: settings.resolved(.keySecret).origin.label, setting: Setting.keySecret.name,
                                           message: "'\(text)' is not gsm://projects/PROJECT/secrets/SECRET or …/versions/N", fromFlag: false)
        }
        let credentials = GoogleCredentials(CredentialSettings(tokenCommand: settings[.tokenCommand], commandTimeout: settings[.keyCommandTimeout],
                                                               environment: environment, home: home, timeout: settings[.timeout], allowInsecure: false, warn: warn))
        let client = SecretManagerClient(endpoint: settings[.secretmanagerEndpoint], token: try credentials.token(), timeout: settings[.timeout],
                                         retries: settings[.retries])
        let fetched = try client.accessKey(reference)
        return ResolvedKey(secret: fetched.value, source: .secretManager(secret: reference.resource, version: fetched.version), updated: nil)
    }
}
