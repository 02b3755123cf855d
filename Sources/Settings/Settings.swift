import SystemIO

/// Where an effective value came from, lowest layer first.
public enum SettingOrigin: Sendable, Equatable {
    case builtIn
    case configFile(path: String)
    case vault(path: String)
    case environment(variable: String)
    case flag(String)

    public var label: String {
        switch self {
        case .builtIn: "default"
        case .configFile(let path): "config file \(path)"
        case .vault(let path): "vault \(path)"
        case .environment(let variable): "environment \(variable)"
        case .flag(let flag): "flag \(flag)"
        }
    }

    public var kind: String {
        switch self {
        case .builtIn: "default"
        case .configFile: "config-file"
        case .vault: "vault"
        case .environment: "environment"
        case .flag: "flag"
        }
    }

    /// The short name used in validation errors: `config.json: temperature: …`.
    var layerName: String {
        switch self {
        case .builtIn: "default"
        case .configFile: "config.json"
        case .vault: "vault"
        case .environment(let variable): variable
        case .flag(let flag): flag
        }
    }
}

/// An effective setting with its origin.
public struct ResolvedSetting: Sendable, Equatable {
    public let name: String
    public let value: String?
    public let origin: SettingOrigin
}

/// The inputs of each layer.
public struct SettingLayers: Sendable {
    public var configFile: ConfigFile?
    public var vaultPath: String?
    public var vaultSettings: [String: String]?
    public var environment: [String: String]
    /// Setting name to (flag spelling, value).
    public var flags: [String: (flag: String, value: String)]
    public var allowInsecureEndpoint: Bool

    public init(configFile: ConfigFile? = nil, vaultPath: String? = nil, vaultSettings: [String: String]? = nil,
                environment: [String: String] = [:], flags: [String: (flag: String, value: String)] = [:],
                allowInsecureEndpoint: Bool = false) {
        self.configFile = configFile
        self.vaultPath = vaultPath
        self.vaultSettings = vaultSettings
        self.environment = environment
        self.flags = flags
        self.allowInsecureEndpoint = allowInsecureEndpoint
    }
}

/// Every effective setting, validated, each knowing its layer.
public struct Settings: Sendable {
    public let all: [ResolvedSetting]
    /// Plain-http endpoints off loopback, by setting: refused only by the commands that use them.
    let insecureEndpoints: [String: ConfigError]

    public init(all: [ResolvedSetting], insecureEndpoints: [String: ConfigError] = [:]) {
        self.all = all
        self.insecureEndpoints = insecureEndpoints
    }

    /// An endpoint's value for a command that is about to send something to it.
    public func endpoint(_ setting: Setting<String>) throws(ConfigError) -> String {
        if let refusal = insecureEndpoints[setting.name] { throw refusal }
        return self[setting]
    }

    /// Whether an endpoint in force is plain http off loopback (shown by `config explain`,
    /// refused by the commands that use it).
    public func isInsecure(_ name: String) -> Bool { insecureEndpoints[name] != nil }

    /// Resolves defaults < config file < vault < environment < flags.
    public static func resolve(_ layers: SettingLayers) throws(ConfigError) -> Settings {
        var resolved: [ResolvedSetting] = []
        var insecure: [String: ConfigError] = [:]
        for spec in SettingsSchema.all {
            var candidates: [(String, SettingOrigin)] = []
            if let value = spec.defaultValue { candidates.append((value, .builtIn)) }
            if let file = layers.configFile, let value = file.values[spec.name] { candidates.append((value, .configFile(path: file.path))) }
            if let vault = layers.vaultSettings, let value = vault[spec.name] { candidates.append((value, .vault(path: layers.vaultPath ?? "vault"))) }
            if spec.name == "endpoint", let value = layers.environment["GOOGLE_GEMINI_BASE_URL"], !value.isEmpty {
                candidates.append((value, .environment(variable: "GOOGLE_GEMINI_BASE_URL")))
            }
            if let value = layers.environment[spec.environmentVariable], !value.isEmpty {
                candidates.append((value, .environment(variable: spec.environmentVariable)))
            }
            if let flag = layers.flags[spec.name] { candidates.append((flag.value, .flag(flag.flag))) }

            // Every layer is validated, not only the winner: a broken config file is reported
            // even while an environment variable hides it.
            var winner: ResolvedSetting?
            for (raw, origin) in candidates {
                switch spec.validate(raw) {
                case .success(let value):
                    if spec.isEndpoint, let url = EndpointURL(value), !url.isSecure, !layers.allowInsecureEndpoint {
                        insecure[spec.name] = .insecureEndpoint(value, layer: origin.layerName, setting: spec.name)
                    } else if spec.isEndpoint {
                        insecure[spec.name] = nil
                    }
                    winner = ResolvedSetting(name: spec.name, value: value, origin: origin)
                case .failure(let problem):
                    throw .invalidValue(layer: origin.layerName, setting: spec.name, message: problem.message, fromFlag: origin.kind == "flag")
                }
            }
            resolved.append(winner ?? ResolvedSetting(name: spec.name, value: nil, origin: .builtIn))
        }
        return Settings(all: resolved, insecureEndpoints: insecure)
    }

    /// A setting's effective value, typed: `settings[.retries]`.
    public subscript<Value>(_ setting: Setting<Value>) -> Value { setting.read(resolved(setting).value) }

    /// A setting's effective value as text, with the layer it came from.
    public func resolved<Value>(_ setting: Setting<Value>) -> ResolvedSetting { self[setting.name] }

    /// By name, for what the user names (`config get NAME`).
    public subscript(_ name: String) -> ResolvedSetting {
        all.first { $0.name == name } ?? ResolvedSetting(name: name, value: nil, origin: .builtIn)
    }
}
