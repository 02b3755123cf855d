import SystemIO
import VaultCore

/// The default model, named in this one place.
public let defaultModel = "gemini-3.6-flash"
public let defaultEndpoint = "https://generativelanguage.googleapis.com"
/// Google's API Keys service, which `key rotate --create` asks for new keys.
public let defaultAPIKeysEndpoint = "https://apikeys.googleapis.com"
public let defaultSecretManagerEndpoint = "https://secretmanager.googleapis.com"
/// Google's Security Token Service and IAM Credentials, for keyless credentials (Docs/keyless.md).
public let defaultSTSEndpoint = "https://sts.googleapis.com"
public let defaultIAMCredentialsEndpoint = "https://iamcredentials.googleapis.com"

/// What values a setting accepts.
public enum SettingKind: Sendable {
    /// Free text; line breaks and tabs allowed, other control characters refused.
    case text
    /// One line without any control character (model names, commands).
    case line
    case number(ClosedRange<Double>)
    case integer(ClosedRange<Int>)
    case choice([String])
    /// A duration such as `15m`, `8h`, `1h30m` or `90` (seconds), within the range in seconds.
    case duration(ClosedRange<Double>)
    case endpoint
    case keyName
}

/// One setting: its name, accepted values, default and environment variable.
public struct SettingSpec: Sendable {
    public let name: String
    public let kind: SettingKind
    public let defaultValue: String?
    public let summary: String
    /// Values that may carry a secret (a key command's arguments) are masked when shown.
    public let mayHoldSecret: Bool
    /// The variable, when it is not `GEMVAULT_` and the name in capitals.
    let environmentName: String?

    public var environmentVariable: String { environmentName ?? "GEMVAULT_" + name.uppercased() }

    /// A URL that a credential is sent to: plain http only to loopback.
    public var isEndpoint: Bool { if case .endpoint = kind { true } else { false } }

    /// The canonical form of `raw`, or a message saying why it is refused.
    public func validate(_ raw: String) -> Result<String, SettingProblem> {
        let value = raw.trimmedWhitespace
        switch kind {
        case .text, .line:
            let allowed: Set<Unicode.Scalar> = kind.isLine ? [] : ["\n", "\t"]
            if let bad = raw.unicodeScalars.first(where: { ($0.properties.generalCategory == .control || $0 == "\u{7f}") && !allowed.contains($0) }) {
                return .failure(SettingProblem("contains the control character U+\(String(bad.value, radix: 16, uppercase: true)), which could drive a terminal"))
            }
            return .success(raw)
        case .keyName:
            let ok = !value.isEmpty && value.utf8.allSatisfy { $0 == 0x2d || $0 == 0x5f || $0 == 0x2e || ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7a) }
            return ok ? .success(value) : .failure(SettingProblem("\(quoted(value)) is not a key name (letters, digits, '-', '_', '.')"))
        case .number(let range):
            guard let number = Double(value), number.isFinite else { return .failure(SettingProblem("\(quoted(value)) is not a number")) }
            guard range.contains(number) else { return .failure(SettingProblem("\(value) is outside \(format(range.lowerBound))...\(format(range.upperBound))")) }
            return .success(format(number))
        case .integer(let range):
            guard let number = Int(value) else { return .failure(SettingProblem("\(quoted(value)) is not a whole number")) }
            guard range.contains(number) else { return .failure(SettingProblem("\(value) is outside \(range.lowerBound)...\(range.upperBound)")) }
            return .success(String(number))
        case .duration(let range):
            guard let seconds = DurationText.seconds(value) else {
                return .failure(SettingProblem("\(quoted(value)) is not a duration (like 90s, 15m, 8h or 1h30m)"))
            }
            guard range.contains(seconds) else {
                return .failure(SettingProblem("\(value) is outside \(DurationText.text(range.lowerBound))...\(DurationText.text(range.upperBound))"))
            }
            return .success(DurationText.text(seconds))
        case .choice(let options):
            let lowered = value.lowercased()
            guard options.contains(lowered) else { return .failure(SettingProblem("\(quoted(value)) is not one of \(options.joined(separator: ", "))")) }
            return .success(lowered)
        case .endpoint:
            guard let url = EndpointURL(value) else { return .failure(SettingProblem("\(quoted(value)) is not an http or https URL")) }
            return .success(url.normalized)
        }
    }

    private func quoted(_ value: String) -> String { "'\(value)'" }
    private func format(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }
}

/// Durations as people write them: `90`, `90s`, `15m`, `8h`, `2d`, `1h30m`.
public enum DurationText {
    public static func seconds(_ text: String) -> Double? {
        let trimmed = text.trimmedWhitespace.lowercased()
        if let plain = Double(trimmed) { return plain >= 0 ? plain : nil }
        var total = 0.0
        var number = ""
        for character in trimmed {
            if character.isNumber || character == "." { number.append(character); continue }
            guard let value = Double(number) else { return nil }
            switch character {
            case "s": total += value
            case "m": total += value * 60
            case "h": total += value * 3600
            case "d": total += value * 86400
            default: return nil
            }
            number = ""
        }
        return number.isEmpty && !trimmed.isEmpty ? total : nil
    }

    /// The shortest way to write it: `15m`, `8h`, `1h30m`, `45s`.
    public static func text(_ seconds: Double) -> String {
        var rest = Int(seconds.rounded())
        if rest == 0 { return "0s" }
        var parts = ""
        for (unit, size) in [("d", 86400), ("h", 3600), ("m", 60), ("s", 1)] where rest >= size {
            parts += "\(rest / size)\(unit)"
            rest %= size
        }
        return parts
    }
}

extension SettingKind {
    var isLine: Bool { if case .line = self { true } else { false } }
}

public struct SettingProblem: Error, Sendable, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
}

/// A setting with its type: the one declaration of its name, accepted values, default and
/// environment variable, read as `settings[.retries]` (an `Int`, the default when unset).
public struct Setting<Value: Sendable>: Sendable {
    public let spec: SettingSpec
    /// The value from the setting's canonical text (nil when unset and without a default).
    let read: @Sendable (String?) -> Value

    public var name: String { spec.name }

    /// A setting with a default: never unset.
    static func with<T>(_ name: String, _ kind: SettingKind, default value: String, _ summary: String, environment: String? = nil,
                        _ convert: @escaping @Sendable (String) -> T?) -> Setting<T> {
        Setting<T>(spec: SettingSpec(name: name, kind: kind, defaultValue: value, summary: summary, mayHoldSecret: false, environmentName: environment),
                   read: { text in text.flatMap(convert) ?? convert(value)! })
    }

    /// A setting that may be unset (nil), such as a sampling parameter left to the model.
    static func optional<T>(_ name: String, _ kind: SettingKind, _ summary: String, mayHoldSecret: Bool = false, environment: String? = nil,
                            _ convert: @escaping @Sendable (String) -> T?) -> Setting<T?> {
        Setting<T?>(spec: SettingSpec(name: name, kind: kind, defaultValue: nil, summary: summary, mayHoldSecret: mayHoldSecret, environmentName: environment),
                    read: { text in text.flatMap(convert) })
    }
}

private let text: @Sendable (String) -> String? = { $0 }
private let number: @Sendable (String) -> Double? = { Double($0) }
private let integer: @Sendable (String) -> Int? = { Int($0) }
private let seconds: @Sendable (String) -> Double? = { DurationText.seconds($0) }

extension Setting where Value == String {
    public static let model = with("model", .line, default: defaultModel, "Gemini model for chat and ask", text)
    public static let endpoint = with("endpoint", .endpoint, default: defaultEndpoint, "API base URL (https, or http on loopback)", text)
    public static let apiVersion = with("api_version", .choice(["v1beta", "v1", "v1alpha"]), default: "v1beta", "API version path segment", text)
    public static let key = with("key", .keyName, default: "default", "name of the vault key to use", text)
    public static let color = with("color", .choice(["auto", "always", "never"]), default: "auto", "colour output", text)
    public static let secretmanagerEndpoint = with("secretmanager_endpoint", .endpoint, default: defaultSecretManagerEndpoint,
                                                   "Secret Manager base URL for key_secret (https, or http on loopback)", text)
    public static let credentialName = with("credential_name", .keyName, default: "gemini-api-key",
                                            "the systemd credential in $CREDENTIALS_DIRECTORY that holds the key (LoadCredential= of a service)",
                                            environment: "GEMVAULT_CREDENTIAL", text)
    public static let auth = with("auth", .choice(["key", "google"]), default: "key",
                                  "how chat, ask and models prove who they are: an API key, or a Google identity's access token (Docs/keyless.md)", text)
    public static let stsEndpoint = with("sts_endpoint", .endpoint, default: defaultSTSEndpoint,
                                         "Google's Security Token Service, where a federated identity's token is exchanged (https, or http on loopback)", text)
    public static let iamcredentialsEndpoint = with("iamcredentials_endpoint", .endpoint, default: defaultIAMCredentialsEndpoint,
                                                    "Google's IAM Credentials service, where a service account's token is minted (https, or http on loopback)", text)
    public static let apikeysEndpoint = with("apikeys_endpoint", .endpoint, default: defaultAPIKeysEndpoint,
                                             "API Keys service base URL for key rotate --create (https, or http on loopback)", text)
}

/// Whether conversations are kept (the `history` setting).
public enum HistoryMode: String, Sendable, CaseIterable {
    case on, off
}

/// How chat draws messages (the `chat_style` setting).
public enum ChatStyle: String, Sendable, CaseIterable {
    case plain, bubbles
}

extension Setting where Value == HistoryMode {
    public static let history = with("history", .choice(HistoryMode.allCases.map(\.rawValue)), default: HistoryMode.on.rawValue,
                                     "keep encrypted conversation history", { HistoryMode(rawValue: $0) })
}

extension Setting where Value == ChatStyle {
    public static let chatStyle = with("chat_style", .choice(ChatStyle.allCases.map(\.rawValue)), default: ChatStyle.plain.rawValue,
                                       "how chat draws messages: plain lines, or bubbles (as --bubbles; /bubbles switches in a chat)",
                                       { ChatStyle(rawValue: $0) })
}

extension Setting where Value == String? {
    public static let systemPrompt = optional("system_prompt", .text, "system instruction sent with every conversation", text)
    public static let keyCommand = optional("key_command", .line, "command whose stdout is the API key (run without a shell)", mayHoldSecret: true, text)
    public static let tokenCommand = optional("token_command", .line, "command whose stdout is a Google access token, first in the credential chain (rotation, Secret Manager, auth = google; run without a shell)",
                                              mayHoldSecret: true, text)
    public static let workloadIdentityProvider = optional("workload_identity_provider", .line,
                                                          "a CI job's Workload Identity Federation provider (projects/N/locations/global/workloadIdentityPools/P/providers/R), for auth = google, rotation and Secret Manager (Docs/keyless.md)",
                                                          environment: "GEMVAULT_WIF_PROVIDER", text)
    public static let serviceAccount = optional("service_account", .line, "the service account a CI job's federated identity acts as (with workload_identity_provider)",
                                                environment: "GEMVAULT_SERVICE_ACCOUNT", text)
    public static let oidcTokenEnv = optional("oidc_token_env", .line, "the CI variable holding the job's OIDC token (GitLab's id_tokens), instead of asking GitHub for one", text)
    public static let ageIdentity = optional("age_identity", .line,
                                             "an age identity file (private) that opens the vault's age slot before any prompt; read before the vault opens, so kept in config.json", text)
    public static let keySecret = optional("key_secret", .line, "a Secret Manager secret whose value is the key (gsm://projects/P/secrets/S[/versions/N]), fetched on every use and held in memory only", text)
    public static let quotaProject = optional("quota_project", .line, "Google project billed for calls made with a user's credentials (API Keys; Gemini with auth = google)", text)
    public static let prices = optional("prices", .line,
                                        "prices per million tokens: MODEL=INPUT/OUTPUT[/CACHED[/SEARCH]][@FROM..TO] entries separated by commas (currency=EUR for another currency), or the path of a JSON prices file; the built-in table otherwise (gemvault prices shows it)", text)
    public static let thinking = optional("thinking", .choice(["minimal", "low", "medium", "high", "xhigh"]),
                                          "how much the model thinks before it answers (Gemini 3's and 4's thinkingLevel; the model's default when unset; a level the model does not take is sent as the nearest one)", text)
}

extension Setting where Value == Double {
    public static let timeout = with("timeout", .number(1...3600), default: "60", "seconds to wait for the first byte or between stream events", number)
    public static let keyCommandTimeout = with("key_command_timeout", .number(1...600), default: "10", "seconds before key_command or token_command is stopped", number)
    /// Durations, in seconds.
    public static let sessionIdle = with("session_idle", .duration(10...(7 * 86400)), default: "15m", "an unlocked session locks after this long unused", seconds)
    public static let secretCacheTTL = with("secret_cache_ttl", .duration(0...(30 * 86400)), default: "5m",
                                            "a key linked to Secret Manager is fetched again when its copy is older than this (0: every time)", seconds)
    public static let secretMaxStale = with("secret_max_stale", .duration(60...(365 * 86400)), default: "24h",
                                            "how long a linked key's copy is used while Secret Manager cannot be reached", seconds)
    public static let sessionMax = with("session_max", .duration(10...(30 * 86400)), default: "8h", "an unlocked session locks after this long, used or not", seconds)
}

extension Setting where Value == Bool {
    public static let showThoughts = with("show_thoughts", .choice(["on", "off"]), default: "off",
                                          "ask for the model's thought summaries and show them above the answer (as --thoughts on ask and chat)", { $0 == "on" })
    public static let search = with("search", .choice(["on", "off"]), default: "off",
                                    "let chat and ask ground answers in Google Search, with citations and sources (as --search; /search in a chat)", { $0 == "on" })
    public static let store = with("store", .choice(["false", "true", "off", "on"]), default: "false",
                                   "let Google keep requests and replies in its logs (\"store\": true; as --store, /store in a chat); gemvault sends \"store\": false otherwise",
                                   { $0 == "true" || $0 == "on" })
}

extension Setting where Value == Double? {
    public static let temperature = optional("temperature", .number(0...2), "sampling temperature (model default when unset)", number)
    public static let topP = optional("top_p", .number(0...1), "nucleus sampling probability", number)
    /// Budgets, in the price table's currency; a key's own (`key budget`) wins.
    public static let budgetDaily = optional("budget_daily", .number(0...1_000_000),
                                             "what a key may spend in a day (UTC), in the price table's currency; a request that would pass it is refused (exit 6) unless --over-budget", number)
    public static let budgetMonthly = optional("budget_monthly", .number(0...1_000_000),
                                               "what a key may spend in a calendar month (UTC), as budget_daily", number)
}

extension Setting where Value == Int {
    public static let retries = with("retries", .integer(0...10), default: "4", "retries after 429, 5xx and connection failures", integer)
    public static let rotationDays = with("rotation_days", .integer(0...3650), default: "90", "age in days after which a key should be rotated (0: never)", integer)
    public static let searchFreeQueries = with("search_free_queries", .integer(0...1_000_000_000), default: "5000",
                                               "Google Search queries a month that cost nothing (Google's 5,000 are per project: lower it when others use the project)", integer)
    public static let budgetReplyEstimate = with("budget_reply_estimate", .integer(1...1_000_000), default: "8192",
                                                 "under a budget, the reply tokens a request is estimated at when max_output_tokens is unset (at most the model's output limit)",
                                                 integer)
    public static let pinTries = with("pin_tries", .integer(1...10), default: "3",
                                      "wrong PINs after which the agent wipes the PIN, so the passphrase is needed (unlock --pin, pin set)", integer)
}

extension Setting where Value == Int? {
    public static let topK = optional("top_k", .integer(1...1000), "top-k sampling", integer)
    public static let maxOutputTokens = optional("max_output_tokens", .integer(1...1_000_000), "upper bound on reply tokens", integer)
}

/// Every setting, in the order `config explain` lists them.
public enum SettingsSchema {
    public static let all: [SettingSpec] = [
        Setting.model.spec, Setting.temperature.spec, Setting.topP.spec, Setting.topK.spec, Setting.maxOutputTokens.spec, Setting.thinking.spec, Setting.showThoughts.spec, Setting.search.spec,
        Setting.store.spec, Setting.systemPrompt.spec, Setting.endpoint.spec, Setting.apiVersion.spec, Setting.timeout.spec, Setting.retries.spec,
        Setting.key.spec, Setting.credentialName.spec, Setting.keyCommand.spec, Setting.keyCommandTimeout.spec, Setting.rotationDays.spec,
        Setting.apikeysEndpoint.spec, Setting.tokenCommand.spec, Setting.quotaProject.spec, Setting.auth.spec, Setting.workloadIdentityProvider.spec, Setting.serviceAccount.spec, Setting.oidcTokenEnv.spec, Setting.stsEndpoint.spec, Setting.iamcredentialsEndpoint.spec, Setting.keySecret.spec, Setting.secretmanagerEndpoint.spec,
        Setting.secretCacheTTL.spec, Setting.secretMaxStale.spec,
        Setting.sessionIdle.spec, Setting.sessionMax.spec, Setting.pinTries.spec, Setting.ageIdentity.spec, Setting.history.spec, Setting.color.spec, Setting.chatStyle.spec,
        Setting.prices.spec, Setting.searchFreeQueries.spec, Setting.budgetDaily.spec, Setting.budgetMonthly.spec, Setting.budgetReplyEstimate.spec,
    ]

    /// Read before the vault opens (what opens it), so never kept in the vault: config.json,
    /// the environment or a flag only.
    public static let outsideTheVault: Set<String> = [Setting.ageIdentity.name]

    public static func spec(named name: String) -> SettingSpec? { all.first { $0.name == name } }
    public static var names: [String] { all.map(\.name) }
}

extension Setting {
    /// The value when no layer sets it (nil for a setting without a default).
    public var defaultValue: Value { read(nil) }
}
