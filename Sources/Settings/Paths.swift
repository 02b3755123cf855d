import SystemIO

/// The XDG locations gemvault uses, computed from an environment (so tests can pass their own).
public struct Paths: Sendable {
    public let environment: [String: String]

    public init(environment: [String: String]) { self.environment = environment }

    /// $HOME when it is absolute; else the password database's home (a relative HOME would
    /// put the vault wherever the command happens to run).
    public var home: String {
        if let home = environment["HOME"], home.hasPrefix("/") { return home }
        return ProcessIdentity.homeDirectory ?? "/"
    }

    /// An XDG variable is used only when it holds an absolute path, as the spec requires.
    private func xdg(_ name: String, fallback: String) -> String {
        if let value = environment[name], value.hasPrefix("/") { return value }
        return home + fallback
    }

    public var dataHome: String { xdg("XDG_DATA_HOME", fallback: "/.local/share") }
    public var configHome: String { xdg("XDG_CONFIG_HOME", fallback: "/.config") }
    public var stateHome: String { xdg("XDG_STATE_HOME", fallback: "/.local/state") }
    public var cacheHome: String { xdg("XDG_CACHE_HOME", fallback: "/.cache") }

    /// `--vault`, then `GEMVAULT_VAULT`, then `$XDG_DATA_HOME/gemvault/vault`.
    public func vault(flag: String?) -> String {
        if let flag, !flag.isEmpty { return flag }
        if let env = environment["GEMVAULT_VAULT"], !env.isEmpty { return env }
        return dataHome + "/gemvault/vault"
    }

    public var configDirectory: String { configHome + "/gemvault" }
    public var configFile: String { configDirectory + "/config.json" }
    public var keyFile: String { configDirectory + "/api-key" }
}
