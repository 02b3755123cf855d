import Synchronization
import SystemIO

/// Where the machine's Google access token may be sent (`apikeys_endpoint`,
/// `secretmanager_endpoint`, a token URL): Google's own hosts and loopback always; any other
/// host only when the vault or the command's flag names it, never from the environment or
/// config.json, which a script, a dotfile or another tool can set unseen (Docs/security.md).
enum CredentialEndpoints {
    private static let warned = Mutex<Set<String>>([])

    /// Says once per process and host that the token goes to `url`.
    static func warnOnce(_ url: EndpointURL, setting: String, origin: String, warn: (String) -> Void) {
        guard warned.withLock({ $0.insert(url.host).inserted }) else { return }
        warn("the Google access token goes to \(url.host), which is not Google's (\(setting) from \(origin))")
    }
}

extension Settings {
    /// An endpoint that will receive the machine's Google access token: refused when plain
    /// http off loopback, or when a custom host comes from the environment or config.json;
    /// from the vault or a flag, used with a warning once per command.
    public func credentialEndpoint(_ setting: Setting<String>, warn: (String) -> Void) throws(ConfigError) -> String {
        let value = try endpoint(setting)
        guard let url = EndpointURL(value), url.isCustom else { return value }
        let origin = resolved(setting).origin
        switch origin {
        case .vault, .flag: CredentialEndpoints.warnOnce(url, setting: setting.name, origin: origin.label, warn: warn)
        case .builtIn, .configFile, .environment: throw .untrustedEndpoint(value, layer: origin.layerName, setting: setting.name)
        }
        return value
    }
}
