import FoundationEssentials
import GoogleKeys
import Testing
@testable import GemvaultConfig
import SystemIO
import VaultAccess
import VaultCore

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
        #expect(throws: ConfigError.self) { try insecure.checkEveryEndpoint() }
        #expect(try insecure.endpoint(.apikeysEndpoint) == "https://apikeys.googleapis.com")
        let overridden = try Settings.resolve(SettingLayers(environment: ["GEMVAULT_ENDPOINT": "http://example.com"],
                                                            flags: ["endpoint": (flag: "--endpoint", value: "https://example.com")]))
        #expect(try overridden.endpoint(.endpoint) == "https://example.com")
        #expect(try Settings.resolve(SettingLayers(environment: ["GEMVAULT_ENDPOINT": "http://[::1]:8080/"]))[.endpoint] == "http://[::1]:8080")
        #expect(try Settings.resolve(SettingLayers(environment: ["GEMVAULT_ENDPOINT": "http://example.com"], allowInsecureEndpoint: true))[.endpoint] == "http://example.com")
        #expect(EndpointURL("https://user:pw@host") == nil && EndpointURL("ftp://x") == nil && EndpointURL("https://h/?key=1") == nil)
        #expect(EndpointURL("http://127.0.0.5:1")?.isLoopback == true && EndpointURL("http://localhost")?.isLoopback == true)
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
}

@Suite struct KeyResolverTests {
    /// No vault file, no session, no passphrase: the sources around the vault.
    struct NoPassphrase: PassphraseSource {
        var canProvide: Bool { false }
        func withSecret<T>(for kind: UnlockKind, _ attempt: (Unlock) throws -> T) throws -> T { throw VaultError.wrongPassphrase }
    }

    func resolver(_ environment: [String: String], warnings: Box) -> KeyResolver {
        let store = VaultStore(path: "/nonexistent/vault")
        let vault = VaultAccess(file: VaultFileAccess(store: store, rollback: RollbackGuard(record: GenerationRecord(stateDirectory: "/nonexistent"),
                                                                                         vaultPath: store.path, acceptsRollback: false), warn: { _ in }),
                                agent: nil, passphrase: NoPassphrase(), observe: { _ in }, warn: { _ in })
        return KeyResolver(keyFileFlag: nil, environment: environment, paths: Paths(environment: ["HOME": "/nonexistent"]),
                           explicitKeyName: nil, layers: SettingLayers(environment: environment), vault: vault, warn: { warnings.messages.append($0) })
    }

    final class Box: @unchecked Sendable { var messages: [String] = [] }

    @Test func googleWinsOverGeminiWithOneWarning() throws {
        let box = Box()
        let (key, _) = try resolver(["GOOGLE_API_KEY": "g-key-value-long", "GEMINI_API_KEY": "m-key-value-long"], warnings: box).resolve()
        #expect(key.source == .environment(variable: "GOOGLE_API_KEY"))
        #expect(box.messages == ["both GOOGLE_API_KEY and GEMINI_API_KEY are set; using GOOGLE_API_KEY"])
    }

    @Test func nothingAnywhereListsEveryReason() {
        #expect {
            try resolver([:], warnings: Box()).resolve()
        } throws: { error in
            guard case ConfigError.noKey(let reasons) = error else { return false }
            return reasons.count == 4
        }
    }
}

@Suite struct DoctorTests {
    @Test func hidepidIsReadFromMountOptions() {
        let paths = Paths(environment: ["HOME": "/nonexistent"])
        func findings(_ mounts: String) -> [Finding] {
            Doctor(paths: paths, vaultPath: "/nonexistent/v", environment: [:], settings: nil, procMounts: mounts, coreDumpsDisabled: true).hidepidFindings()
        }
        #expect(findings("proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n").count == 1)
        #expect(findings("proc /proc proc rw,relatime,hidepid=invisible 0 0\n").isEmpty)
        #expect(findings("proc /proc proc rw,hidepid=2 0 0\n").isEmpty)
    }

    static let authKey = "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"
    static let standardKey = "AIzaSyUnitTest-0123456789abcdefghijklmn"

    @Test func keysInTheEnvironmentAreFoundByNameAndByShape() {
        let doctor = Doctor(paths: Paths(environment: ["HOME": "/nonexistent"]), vaultPath: "/nonexistent/v",
                            environment: ["MY_LLM_TOKEN": Self.authKey, "GEMINI_API_KEY": Self.standardKey, "PATH": "/usr/bin", "GOOGLE_API_KEY": ""],
                            settings: nil, coreDumpsDisabled: true)
        let found = doctor.environmentFindings()
        #expect(found.map { $0.message.split(separator: " ").first.map(String.init) } == ["GEMINI_API_KEY", "MY_LLM_TOKEN"])
        #expect(found[0].message.contains("standard API key") && found[0].fix.contains("September 2026") && found[0].fix.contains("aistudio.google.com"))
        #expect(found[1].message.contains("an auth key") && !found[1].message.contains(Self.authKey))
    }

    @Test func linesGiveAwayKeysByShapeOrByVariable() {
        #expect(Doctor.plainTextKey("alias g='curl -H \"x-goog-api-key: \(Self.authKey)\"'")?.kind == .auth)
        #expect(Doctor.plainTextKey("export OLD=\(Self.standardKey)")?.kind == .standard)
        #expect(Doctor.plainTextKey("export GEMINI_API_KEY=literal-value")?.what == "sets GEMINI_API_KEY to a literal value")
        #expect(Doctor.plainTextKey("GOOGLE_API_KEY=\(Self.authKey)")?.what == "sets GOOGLE_API_KEY to an auth key")
        #expect(Doctor.plainTextKey("export GEMINI_API_KEY=\"$(gemvault key get)\"") == nil)
        #expect(Doctor.plainTextKey("# AQ.short and AIza are words") == nil)
    }

    @Test func standardKeysInTheVaultAreReported() {
        let doctor = Doctor(paths: Paths(environment: ["HOME": "/nonexistent"]), vaultPath: "/nonexistent/v", environment: [:],
                            settings: nil, coreDumpsDisabled: true, vaultKeys: [("new", .auth), ("old", .standard), ("proxy", .other)])
        #expect(doctor.vaultKeyFindings().map(\.message) == ["the vault's key 'old' is a standard API key, which Google rejects for the Gemini API since September 2026"])
    }
}

@Suite struct KeyShapeTests {
    @Test func secretBytesKnowTheirKind() {
        #expect(SecretBytes(utf8: "AIzaSyUnitTest-0123456789abcdefghijklmn").googleKeyKind == .standard)
        #expect(SecretBytes(utf8: "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp").googleKeyKind == .auth)
        #expect(SecretBytes(utf8: "BIzaSyUnitTest-0123456789abcdefghijklmn").googleKeyKind == .other)
    }

    @Test func modelNamesWithControlCharactersAreRefused() {
        let model = SettingsSchema.spec(named: "model")!
        guard case .failure = model.validate("gemini\u{1b}]0;pwned\u{07}") else { Issue.record("accepted an escape"); return }
        guard case .success = SettingsSchema.spec(named: "system_prompt")!.validate("line one\nline two") else { Issue.record("refused a newline"); return }
    }
}
