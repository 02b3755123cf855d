import FoundationEssentials
import Testing
@testable import Settings
import SystemIO

@Suite struct SettingsTests {
    @Test func layersResolveLowestToHighestWithOrigins() throws {
        let file = ConfigFile(path: "/c/config.json", values: ["model": "file", "timeout": "5", "temperature": "0.1"])
        let layers = SettingLayers(configFile: file, vaultPath: "/v", vaultSettings: ["model": "vault", "temperature": "0.2"],
                                   environment: ["GEMVAULT_MODEL": "env"], flags: ["temperature": (flag: "--temperature", value: "0.3")])
        let settings = try Settings.resolve(layers)
        #expect(settings["model"].value == "env" && settings["model"].origin == .environment(variable: "GEMVAULT_MODEL"))
        #expect(settings["temperature"].value == "0.3" && settings["temperature"].origin == .flag("--temperature"))
        #expect(settings["timeout"].origin == .configFile(path: "/c/config.json"))
        #expect(settings["api_version"].origin == .builtIn && settings[.apiVersion] == "v1beta")
        #expect(settings[.model] == "env" && settings[.timeout] == 5)
        #expect(settings["top_p"].value == nil && settings[.topP] == nil)
        #expect(settings[.retries] == 4 && settings[.sessionIdle] == 900 && settings[.keyCommand] == nil)
    }

    @Test func validationErrorsNameTheLayer() {
        #expect(throws: ConfigError.invalidValue(layer: "config.json", setting: "temperature", message: "3.5 is outside 0...2", fromFlag: false)) {
            try Settings.resolve(SettingLayers(configFile: ConfigFile(path: "/c", values: ["temperature": "3.5"])))
        }
        #expect(throws: ConfigError.invalidValue(layer: "--temperature", setting: "temperature", message: "'hot' is not a number", fromFlag: true)) {
            try Settings.resolve(SettingLayers(flags: ["temperature": (flag: "--temperature", value: "hot")]))
        }
        #expect(throws: ConfigError.invalidValue(layer: "GEMVAULT_COLOR", setting: "color", message: "'pink' is not one of auto, always, never", fromFlag: false)) {
            try Settings.resolve(SettingLayers(environment: ["GEMVAULT_COLOR": "pink"]))
        }
    }

    @Test func endpointsMustBeSecureUnlessLoopbackOrAllowed() throws {
        // Resolving succeeds: only a command that sends to the endpoint refuses it.
        let insecure = try Settings.resolve(SettingLayers(environment: ["GEMVAULT_ENDPOINT": "http://example.com"]))
        #expect(throws: ConfigError.insecureEndpoint("http://example.com", layer: "GEMVAULT_ENDPOINT", setting: "endpoint")) {
            try insecure.endpoint(.endpoint)
        }
        #expect(insecure.isInsecure("endpoint") && !insecure.isInsecure("apikeys_endpoint"))
        #expect(try insecure.endpoint(.apikeysEndpoint) == "https://apikeys.googleapis.com")
        let overridden = try Settings.resolve(SettingLayers(environment: ["GEMVAULT_ENDPOINT": "http://example.com"],
                                                            flags: ["endpoint": (flag: "--endpoint", value: "https://example.com")]))
        #expect(try overridden.endpoint(.endpoint) == "https://example.com")
        #expect(try Settings.resolve(SettingLayers(environment: ["GEMVAULT_ENDPOINT": "http://[::1]:8080/"]))[.endpoint] == "http://[::1]:8080")
        #expect(try Settings.resolve(SettingLayers(environment: ["GEMVAULT_ENDPOINT": "http://example.com"], allowInsecureEndpoint: true))[.endpoint] == "http://example.com")
        #expect(EndpointURL("https://user:pw@host") == nil && EndpointURL("ftp://x") == nil && EndpointURL("https://h/?key=1") == nil)
        #expect(EndpointURL("http://127.0.0.5:1")?.isLoopback == true && EndpointURL("http://localhost")?.isLoopback == true)
    }

    /// A host that is neither Google's nor loopback receives the access token only when the
    /// vault or the command's flag names it; from the environment or config.json it is refused.
    @Test func aCustomHostForTheAccessTokenComesOnlyFromTheVaultOrAFlag() throws {
        let custom = "https://sm.example.com"
        var warnings: [String] = []
        let fromEnvironment = try Settings.resolve(SettingLayers(environment: ["GEMVAULT_SECRETMANAGER_ENDPOINT": custom]))
        #expect(throws: ConfigError.untrustedEndpoint(custom, layer: "GEMVAULT_SECRETMANAGER_ENDPOINT", setting: "secretmanager_endpoint")) {
            try fromEnvironment.credentialEndpoint(.secretmanagerEndpoint) { warnings.append($0) }
        }
        let fromFile = try Settings.resolve(SettingLayers(configFile: ConfigFile(path: "/c.json", values: ["apikeys_endpoint": custom])))
        #expect(throws: ConfigError.untrustedEndpoint(custom, layer: "config.json", setting: "apikeys_endpoint")) {
            try fromFile.credentialEndpoint(.apikeysEndpoint) { warnings.append($0) }
        }
        let fromVault = try Settings.resolve(SettingLayers(vaultSettings: ["secretmanager_endpoint": custom]))
        #expect(try fromVault.credentialEndpoint(.secretmanagerEndpoint) { warnings.append($0) } == custom)
        let fromFlag = try Settings.resolve(SettingLayers(flags: ["secretmanager_endpoint": (flag: "--secretmanager-endpoint", value: custom)]))
        #expect(try fromFlag.credentialEndpoint(.secretmanagerEndpoint) { warnings.append($0) } == custom)
        #expect(warnings.count == 1 && warnings[0].contains("sm.example.com"))  // once per host
        for trusted in ["https://secretmanager.googleapis.com", "http://127.0.0.1:9"] {
            let settings = try Settings.resolve(SettingLayers(environment: ["GEMVAULT_SECRETMANAGER_ENDPOINT": trusted]))
            #expect(try settings.credentialEndpoint(.secretmanagerEndpoint) { warnings.append($0) } == trusted)
        }
        #expect(EndpointURL("https://evil.googleapis.com.example")?.isCustom == true && EndpointURL("http://apikeys.googleapis.com")?.isCustom == true)
    }

    @Test func configFileParsing() throws {
        let parsed = try ConfigFile.parse(Data(#"{"version": 1, "temperature": 0.5, "history": false, "nope": "x"}"#.utf8), path: "/c")
        #expect(parsed.values == ["temperature": "0.5", "history": "off"] && parsed.unknownKeys == ["nope"])
        #expect(throws: ConfigError.self) { try ConfigFile.parse(Data(#"{"version": 2}"#.utf8), path: "/c") }
        #expect(throws: ConfigError.self) { try ConfigFile.parse(Data("[1,2]".utf8), path: "/c") }
    }

    @Test func everySettingHasAnEnvironmentVariable() {
        #expect(SettingsSchema.all.map(\.environmentVariable).contains("GEMVAULT_KEY_COMMAND_TIMEOUT"))
        #expect(Set(SettingsSchema.names).count == SettingsSchema.all.count)
    }

    @Test func paths() {
        let paths = Paths(environment: ["HOME": "/h", "XDG_CONFIG_HOME": "relative/ignored"])
        #expect(paths.vault(flag: nil) == "/h/.local/share/gemvault/vault")
        #expect(paths.configFile == "/h/.config/gemvault/config.json" && paths.keyFile == "/h/.config/gemvault/api-key")
        #expect(Paths(environment: ["HOME": "/h", "GEMVAULT_VAULT": "/x"]).vault(flag: nil) == "/x")
        #expect(Paths(environment: ["GEMVAULT_VAULT": "/x"]).vault(flag: "/f") == "/f")
    }

    /// The one statement of each default, read typed by the agent and the commands.
    @Test func defaultsReadTypedFromTheSchema() {
        #expect(Setting.sessionIdle.defaultValue == 900 && Setting.sessionMax.defaultValue == 28800)
        #expect(Setting.key.defaultValue == "default" && Setting.retries.defaultValue == 4 && Setting.temperature.defaultValue == nil)
    }

    @Test func modelNamesWithControlCharactersAreRefused() {
        let model = SettingsSchema.spec(named: "model")!
        guard case .failure = model.validate("gemini\u{1b}]0;pwned\u{07}") else { Issue.record("accepted an escape"); return }
        guard case .success = SettingsSchema.spec(named: "system_prompt")!.validate("line one\nline two") else { Issue.record("refused a newline"); return }
    }
}
