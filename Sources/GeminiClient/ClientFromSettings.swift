import GoogleHTTP
import Settings
import VaultCore

extension GeminiClient {
    /// The one way gemvault builds its Gemini client: the endpoint, API version, timeout and
    /// retries from the settings, and errors worded for where the key came from.
    /// `timeout` shortens the settings' own (a check that must end sooner). With `accessToken`
    /// (`auth` = `google`) the requests carry the identity's token instead of the key.
    public convenience init(settings: Settings, apiKey: SecretBytes, keyOrigin: String, keyReplaceHint: String, timeout: Double? = nil,
                            accessToken: (any AccessTokenSource)? = nil, transport: any HTTPTransport = CurlTransport()) throws(ConfigError) {
        let configuration = ClientConfiguration(endpoint: try settings.endpoint(.endpoint), apiVersion: settings[.apiVersion],
                                                timeout: timeout.map { min($0, settings[.timeout]) } ?? settings[.timeout],
                                                maxAttempts: settings[.retries] + 1)
        var errors = ErrorMapper(keyOrigin: keyOrigin, keyReplaceHint: keyReplaceHint, keyKind: apiKey.googleKeyKind,
                                 model: settings[.model], apiVersion: settings[.apiVersion])
        errors.identity = accessToken != nil
        self.init(configuration: configuration, credential: accessToken.map { .accessToken($0) } ?? .apiKey(apiKey), errors: errors, transport: transport)
    }
}
