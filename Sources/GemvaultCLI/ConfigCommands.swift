import GoogleAuth
import GoogleKeys
import KeyResolution
import Rotation
import Settings
import Spending
import SystemIO
import TerminalIO
import ToolSecrets
import VaultCore

let configCommands: [CommandSpec] = [
    CommandSpec(path: ["config", "set"], arguments: "KEY VALUE", argumentRange: 2...2,
                summary: "store a setting in the vault (--file: in config.json)",
                options: [.file], details: settingsList, run: ConfigCommand.set),
    CommandSpec(path: ["config", "get"], arguments: "KEY", argumentRange: 1...1,
                summary: "print a setting stored in the vault (--file: in config.json)",
                options: [.file], details: "", run: ConfigCommand.get),
    CommandSpec(path: ["config", "unset"], arguments: "KEY", argumentRange: 1...1,
                summary: "remove a setting from the vault (--file: from config.json)",
                options: [.file], details: "", run: ConfigCommand.unset),
    CommandSpec(path: ["config", "list"], arguments: "", argumentRange: 0...0,
                summary: "list the settings stored in the vault (--file: in config.json)",
                options: [.file, .json], details: "", run: ConfigCommand.list),
    CommandSpec(path: ["config", "explain"], arguments: "", argumentRange: 0...0,
                summary: "every effective setting, its value and the layer it came from",
                options: [.json, .noVault, .allowInsecureEndpoint] + generationOptions,
                details: "Layers, lowest first: default, config file, vault, environment (GEMVAULT_<NAME>), flags.",
                run: ConfigCommand.explain),
    CommandSpec(path: ["key", "which"], arguments: "", argumentRange: 0...0,
                summary: "which source the API key would come from now, and what it shadows",
                options: [.json] + keySourceOptions + [.google, .showToken],
                details: keyOrder, run: ConfigCommand.which),
    CommandSpec(path: ["doctor"], arguments: "", argumentRange: 0...0,
                summary: "check this machine for the risks of a shared machine",
                options: [.json], details: "Exits 0 when nothing was found, 1 otherwise. Each finding comes with its fix. It also reads the MCP config files 'gemvault mcp scan' knows, for plaintext secrets (fixed by 'gemvault mcp wrap') and for being readable by others, and the .env files under the current folder for secrets of any known shape. When a session or a passphrase option lets it read the vault, it lists the keys linked to Secret Manager and finds a copy older than secret_max_stale.",
                run: ConfigCommand.doctor),
]

let settingsList = "Settings: " + SettingsSchema.names.joined(separator: ", ") + "."
let keyOrder = """
The key comes from the first of: --key-file PATH; a service's systemd credential
($CREDENTIALS_DIRECTORY/credential_name); GOOGLE_API_KEY, then GEMINI_API_KEY; the vault
(--key NAME, else the 'key' setting, else 'default'; a key linked with 'key set --from' is
fetched again once its copy is older than secret_cache_ttl); the key file
$XDG_CONFIG_HOME/gemvault/api-key; the key_command setting; the key_secret setting (a
Secret Manager secret).
"""

extension Invocation {
    /// The values of the flags that set a setting (`--model`, `--temperature`, `--timeout`,
    /// `--key`, `--system`) and of the passphrase options, checked alone, before any prompt
    /// or request: a usage error (exit 64) costs nobody a typed passphrase.
    func checkFlagValues() throws {
        var flags: [String: (flag: String, value: String)] = [:]
        for option in command.settingOptions { if let value = value(option) { flags[option.setting!.name] = (option.name, value) } }
        do {
            if !flags.isEmpty { _ = try Settings.resolve(SettingLayers(flags: flags, allowInsecureEndpoint: true)) }
        } catch {
            // A usage error, so that `ask --json` still gives its one object.
            throw UsageError(ErrorReport.describe(error).1, command: command)
        }
        if command.offers(.model), let model = value(.model), !ProviderChoice.isModelName(model) {
            throw UsageError("--model: '\(EscapeNeutralizer.neutralize(model))' is not a valid model name", command: command)
        }
        _ = try context.passphraseSource()
        _ = try context.secretSource(fdOption: .newPassphraseFd, fileOption: .newPassphraseFile)
    }
}

extension Context {
    /// The config file, with a warning for each unknown key.
    func loadConfigFile() throws -> ConfigFile {
        let file = try configFiles.file()
        for key in file.unknownKeys { Console.warning("\(paths.configFile): unknown setting '\(key)' is ignored") }
        return file
    }

    /// Every layer except the vault's, from the config file, the environment and the flags.
    func settingLayers(_ call: Invocation) throws -> SettingLayers {
        var flags: [String: (flag: String, value: String)] = [:]
        for option in call.command.settingOptions { if let value = call.value(option) { flags[option.setting!.name] = (option.name, value) } }
        return SettingLayers(configFile: try loadConfigFile(), vaultPath: vaultPath, environment: environment,
                             flags: flags, allowInsecureEndpoint: call.command.offers(.allowInsecureEndpoint) && call.flag(.allowInsecureEndpoint))
    }

    /// The resolver for the key; the vault is opened only when its turn comes. A command that
    /// saves conversations (ask, chat: they offer --no-save) has the session's answer bring the
    /// conversation keys too, for its history and its usage ledger.
    func keyResolver(_ call: Invocation) throws -> KeyResolver {
        var resolver = KeyResolver(keyFileFlag: call.command.offers(.keyFile) ? call.value(.keyFile) : nil, environment: environment, paths: paths,
                                   explicitKeyName: call.command.offers(.key) ? call.value(.key) : nil, layers: try settingLayers(call), vault: vault,
                                   warn: { Console.warning($0) }, note: { Console.note($0) })
        resolver.conversationKeysFromSession = call.command.offers(.noSave)
        return resolver
    }
}

enum ConfigCommand {
    static func checkedSetting(_ name: String) throws -> SettingSpec {
        guard let spec = SettingsSchema.spec(named: name) else { throw ConfigError.unknownSetting(name) }
        return spec
    }

    static func set(_ call: Invocation) throws {
        let (name, raw) = (call.positionals[0], call.positionals[1])
        let spec = try checkedSetting(name)
        let layer = call.flag(.file) ? "config.json" : "vault"
        if !call.flag(.file), SettingsSchema.outsideTheVault.contains(name) {
            throw UsageError("\(name) is read before the vault opens, so the vault cannot keep it", command: call.command, fix: "gemvault config set --file \(name) VALUE")
        }
        let value: String
        switch spec.validate(raw) {
        case .success(let valid): value = valid
        case .failure(let problem): throw ConfigError.invalidValue(layer: layer, setting: name, message: problem.message, fromFlag: true)
        }
        if spec.isEndpoint, let url = EndpointURL(value), !url.isSecure {
            Console.warning("\(value) is plain http on a non-loopback host; commands will refuse it without --allow-insecure-endpoint")
        }
        let context = call.context
        if call.flag(.file) {
            var file = try context.loadConfigFile()
            file.set(name, value)
            try file.save()
        } else {
            try context.vault.apply(.setting(name: name, value: value))
            try SpendGuard.vaultSettingChanged(name, BudgetMarks(history: context.history), vaultSettings: context.vault.settings)
        }
        Console.note("\(name) set in the \(layer)")
    }

    static func stored(_ call: Invocation) throws -> [String: String] {
        if call.flag(.file) { return try call.context.loadConfigFile().values }
        return try call.context.vault.settings()
    }

    static func get(_ call: Invocation) throws {
        let name = call.positionals[0]
        _ = try checkedSetting(name)
        guard let value = try stored(call)[name] else {
            throw CommandFailure(.failure, "\(name) is not set in the \(call.flag(.file) ? "config file" : "vault")",
                                 hint: "'gemvault config explain' shows the effective value and where it comes from")
        }
        try Console.out(display(name, value) + "\n")
    }

    static func unset(_ call: Invocation) throws {
        let name = call.positionals[0]
        _ = try checkedSetting(name)
        let context = call.context
        var removed = false
        if call.flag(.file) {
            var file = try context.loadConfigFile()
            removed = file.unset(name)
            if removed { try file.save() }
        } else {
            removed = try context.vault.apply(.setting(name: name, value: nil)).replaced
            try SpendGuard.vaultSettingChanged(name, BudgetMarks(history: context.history), vaultSettings: context.vault.settings)
        }
        Console.note(removed ? "\(name) unset" : "\(name) was not set")
    }

    static func list(_ call: Invocation) throws {
        let values = try stored(call)
        if call.flag(.json) { try Output.json(["settings": values], schema: .configList); return }
        for name in values.keys.sorted() { try Console.out("\(name)=\(display(name, values[name]!))\n") }
    }

    /// What a setting shows: masked when it may hold a secret, and with escape sequences
    /// neutralised, since a value may come from a file someone else wrote.
    static func display(_ name: String, _ value: String) -> String {
        SettingsSchema.spec(named: name)?.mayHoldSecret == true ? SecretBytes(utf8: value).masked : EscapeNeutralizer.neutralize(value)
    }

    struct ExplainedSetting: Encodable {
        let name: String
        @Nullable var value: String?
        let origin: String
        let layer: String
    }

    struct Explanation: Encodable {
        let settings: [ExplainedSetting]
        let vault: String
    }

    static func explain(_ call: Invocation) throws {
        let context = call.context
        var layers = try context.settingLayers(call)
        var vaultState: String
        if call.flag(.noVault) {
            vaultState = "skipped (--no-vault)"
        } else if !context.vault.exists {
            vaultState = "absent"
        } else if let (settings, fromSession) = try context.vault.settingsIfOpenable() {
            layers.vaultSettings = settings
            vaultState = fromSession ? "from the unlocked session" : "opened"
        } else {
            vaultState = "not opened (no terminal and no unlocked session; pass --passphrase-fd or --passphrase-file, or run 'gemvault unlock')"
            Console.warning("the vault was not opened, so its settings are not shown")
        }
        let settings = try Settings.resolve(layers)
        // Shown, not refused: only the commands that use an endpoint refuse it.
        for setting in settings.all where settings.isInsecure(setting.name) {
            Console.warning("\(setting.name) is \(setting.value ?? "") (from \(setting.origin.label)), plain http off loopback: the commands that use it refuse it")
        }
        let explained = settings.all.map { setting in
            ExplainedSetting(name: setting.name, value: setting.value.map { display(setting.name, $0) },
                             origin: setting.origin.label, layer: setting.origin.kind)
        }
        if call.flag(.json) { try Output.json(Explanation(settings: explained, vault: vaultState), schema: .configExplain); return }
        try Console.out(Output.table([["SETTING", "VALUE", "ORIGIN"]] + explained.map { [$0.name, $0.value ?? "(unset)", $0.origin] }))
        Console.note("vault layer: \(vaultState)")
    }

    struct WhichResult: Encodable {
        let source: String
        let detail: String
        @Nullable var name: String?
        let masked: String
        let kind: GoogleKeyKind
        @Nullable var updated: String?
        @Nullable var age_days: Int64?
        let shadowed: [Shadow]
        /// A vault key's sharing: who it went to, who sent it (key share, key import).
        @Nullable var sharing: String?
        /// A vault key linked to Secret Manager (key set --from).
        @Nullable var secret_manager: Linked?

        struct Shadow: Encodable {
            let source: String
            let detail: String
        }

        struct Linked: Encodable {
            let reference: String
            let version: UInt64
            let fetched: String
            let from_cache: Bool
        }
    }

    /// `key which --google`: the Google credential rotations would use, and where they go.
    private static func whichGoogle(_ call: Invocation) throws {
        var layers = try call.context.settingLayers(call)
        // The vault's settings count (token_command, quota_project): through the session, or
        // opened when a passphrase can be had.
        if call.context.vault.exists, let vaultSettings = try call.context.vault.settingsIfOpenable()?.settings {
            layers.vaultSettings = vaultSettings
            layers.vaultPath = call.context.vaultPath
        }
        let settings = try Settings.resolve(layers)
        let source = try GoogleRotation.credentials(call.rotationRequest(), settings).source()
        var text = "google credential: \(source.label)\nkind:              \(source.kind)\napi keys endpoint: \(settings[.apikeysEndpoint])\n"
        if source.isUserCredential {
            text += "quota project:     \(settings[.quotaProject] ?? "the credential's quota_project_id, else the key's project")\n"
        }
        text += "key age:           Google's createTime (a key whose Google name the vault lacks is looked up first); the date set in the vault only when Google cannot find the key\n"
        try Console.out(text)
    }

    static func which(_ call: Invocation) throws {
        if call.flag(.google) {
            if call.flag(.json) { throw UsageError("--google has no --json form", command: call.command) }
            return try whichGoogle(call)
        }
        let resolver = try call.context.keyResolver(call)
        let (key, settings): (ResolvedKey, Settings)
        do { (key, settings) = try resolver.resolve() } catch let wanted as GoogleIdentityWanted { return try KeylessCommand.which(resolver, wanted, call) }
        let shadowed = resolver.shadowed(by: key.source, settings: settings)
        var name: String?
        if case .vault(_, let keyName) = key.source { name = keyName }
        let result = WhichResult(
            source: key.source.kind, detail: key.source.label, name: name, masked: key.secret.masked, kind: key.secret.googleKeyKind,
            updated: key.updated.map(Output.isoDate), age_days: key.updated.map { (Output.now() - $0) / 86400 },
            shadowed: shadowed.map { WhichResult.Shadow(source: $0.source.kind, detail: $0.note) },
            sharing: try name.flatMap { ShareCommand.summary(try call.context.vault.sharingRecords()[$0]) },
            secret_manager: key.linked.map { WhichResult.Linked(reference: $0.link.reference, version: $0.link.version, fetched: Output.isoDate($0.link.fetched),
                                                                 from_cache: $0.fromCache) })
        for shadow in shadowed { Console.warning("\(shadow.note), but it is shadowed by \(key.source.label)") }
        if call.flag(.json) {
            try Output.json(result, schema: .keyWhich)
        } else {
            var text = "source: \(key.source.label)\nkey:    \(key.secret.masked)\nkind:   \(result.kind.label)\n"
            if let updated = key.updated { text += "age:    \(Output.age(since: updated)) (set \(Output.localDate(updated)))\n" }
            if let sharing = result.sharing { text += "shared: \(EscapeNeutralizer.neutralize(sharing))\n" }
            if let (link, fromCache) = key.linked {
                let secret = SecretLinking.secret(of: link.reference)
                text += "secret: Secret Manager \(secret), version \(link.version), fetched \(Output.age(since: link.fetched)) ago\(fromCache ? " (cache)" : "")\n"
            }
            try Console.out(text)
        }
        // Both forms warn alike: a script reading --json sees stderr too.
        if result.kind.isRetired {
            Console.warning("the key from \(key.source.label) is a standard key, which Google rejects for the Gemini API since September 2026")
            // A linked key changes in Secret Manager; rotating it here is refused.
            let replace = key.linked.map { "add it as a new version of \($0.link.reference)" } ?? key.source.replaceHint
            Console.hint("create an auth key at https://aistudio.google.com/apikey, then \(replace)")
        }
        if let days = result.age_days, case let limit = settings[.rotationDays], limit > 0, days >= Int64(limit) {
            Console.warning("the key is \(days) days old; rotation_days is \(limit)")
        }
    }

    struct DoctorReport: Encodable {
        let clean: Bool
        let checks: [String]
        let findings: [Finding]
        /// The vault's keys linked to Secret Manager, when the vault could be read.
        let linked: [LinkedKey]
    }

    struct LinkedKey: Encodable {
        let name: String
        let reference: String
        let version: UInt64
        let fetched: String
    }

    static func doctor(_ call: Invocation) throws {
        let context = call.context
        // Doctor never asks for a passphrase (KeyResolution's Doctor.forVault).
        let doctor = try Doctor.forVault(context.vault, paths: context.paths, environment: context.environment,
                                         passphraseGiven: CommandUnlockUI.givesPassphrase(context.options), note: { Console.note($0) })
        var findings = doctor.run()
        findings += McpCommand.doctorFindings(call, besides: findings)
        let linked = (doctor.vaultKeys ?? []).compactMap { key in
            key.link.map { LinkedKey(name: key.name, reference: $0.reference, version: $0.version, fetched: Output.isoDate($0.fetched)) }
        }
        if call.flag(.json) {
            try Output.json(DoctorReport(clean: findings.isEmpty, checks: Doctor.checks + ToolSecretsDoctor.checks, findings: findings, linked: linked), schema: .doctor)
        } else {
            try Console.out(linked.map(linkedLine).joined())
            if findings.isEmpty { try Console.out("ok: no findings (checked \((Doctor.checks + ToolSecretsDoctor.checks).joined(separator: ", ")))\n") }
            // Findings quote file names, which anyone who can create a folder chooses.
            for finding in findings {
                try Console.out("[\(finding.check)] \(EscapeNeutralizer.neutralize(finding.message))\n    fix: \(EscapeNeutralizer.neutralize(finding.fix))\n")
            }
        }
        if !findings.isEmpty { throw CommandFailure(.failure, "", hint: nil) }
    }

    static func linkedLine(_ key: LinkedKey) -> String {
        "linked: '\(key.name)' comes from Secret Manager \(key.reference), version \(key.version), fetched \(key.fetched)\n"
    }
}
