import GoogleHTTP
import Settings
import VaultCore

extension GeminiClient {
    /// The one way gemvault builds its Gemini client: the endpoint, API version, timeout and
    /// retries from the settings, and errors worded for where the key came from.
    /// `timeout` shortens the settings' own (a check that must end sooner).
    public convenience init(settings: Settings, apiKey: SecretBytes, keyOrigin: String, keyReplaceHint: String, timeout: Double? = nil,
                            transport: any HTTPTransport = CurlTransport()) throws(ConfigError) {
        let configuration = ClientConfiguration(endpoint: try settings.endpoint(.endpoint), apiVersion: settings[.apiVersion],
                                                timeout: timeout.map { min($0, settings[.timeout]) } ?? settings[.timeout],
                                                maxAttempts: settings[.retries] + 1)
        let errors = ErrorMapper(keyOrigin: keyOrigin, keyReplaceHint: keyReplaceHint, keyKind: apiKey.googleKeyKind,
                                 model: settings[.model], apiVersion: settings[.apiVersion])
        self.init(configuration: configuration, apiKey: apiKey, errors: errors, transport: transport)
    }
}
