import GoogleKeys
import Testing
@testable import KeyResolution
import Settings
import SystemIO
import VaultAccess
import VaultCore

@Suite struct KeyResolverTests {
    /// No vault file, no session, no passphrase: the sources around the vault.
    struct NoPassphrase: UnlockUI {
        var canAsk: Bool { false }
        func ask(_ request: SecretRequest) throws -> SecretBytes? { throw VaultError.wrongPassphrase }
    }

    func resolver(_ environment: [String: String], warnings: Box) -> KeyResolver {
        let store = VaultStore(path: "/nonexistent/vault")
        let vault = VaultAccess(file: VaultFileAccess(store: store, rollback: RollbackGuard(record: GenerationRecord(stateDirectory: "/nonexistent"),
                                                                                         vaultPath: store.path, acceptsRollback: false), warn: { _ in }),
                                agent: nil, ui: NoPassphrase(), observe: { _ in }, warn: { _ in })
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
            guard case KeySourceError.noKey(let reasons, _) = error else { return false }
            return reasons.count == 5 && reasons.last == "key_secret is not set"
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
                            settings: nil, coreDumpsDisabled: true, vaultKeys: [("new", .auth, nil), ("old", .standard, nil), ("proxy", .other, nil)])
        #expect(doctor.vaultKeyFindings().map(\.message) == ["the vault's key 'old' is a standard API key, which Google rejects for the Gemini API since September 2026"])
    }

    @Test func aLinkedKeysCopyPastSecretMaxStaleIsReported() {
        let fresh = SecretLink(reference: "gsm://projects/p/secrets/s", version: 1, fetched: Clock.now() - 60)
        let stale = SecretLink(reference: "gsm://projects/p/secrets/s", version: 1, fetched: Clock.now() - 2 * 86400)
        let doctor = Doctor(paths: Paths(environment: ["HOME": "/nonexistent"]), vaultPath: "/nonexistent/v", environment: [:],
                            settings: nil, coreDumpsDisabled: true, vaultKeys: [("fresh", .auth, fresh), ("stale", .auth, stale)])
        #expect(doctor.vaultKeyFindings().map(\.message).map { $0.hasPrefix("the vault's key 'stale' comes from Secret Manager") } == [true])
    }
}

@Suite struct KeyShapeTests {
    @Test func secretBytesKnowTheirKind() {
        #expect(SecretBytes(utf8: "AIzaSyUnitTest-0123456789abcdefghijklmn").googleKeyKind == .standard)
        #expect(SecretBytes(utf8: "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp").googleKeyKind == .auth)
        #expect(SecretBytes(utf8: "BIzaSyUnitTest-0123456789abcdefghijklmn").googleKeyKind == .other)
    }
}
