import GemvaultTesting
import Settings
import SystemIO
import Testing
import VaultAccess
import VaultCore
@testable import KeyResolution

/// doctor's view of the vault (moved out of the CLI): never a prompt; the keys and the vault's
/// settings only from a session or a passphrase given on purpose.
@Suite struct DoctorVaultTests {
    struct Given: UnlockUI {
        var canAsk: Bool { true }
        func ask(_ request: SecretRequest) throws -> SecretBytes? { request.attempt == 1 ? SecretBytes(utf8: TestVault.passphrase) : nil }
    }

    func access(_ store: VaultStore, _ generations: GenerationRecord) -> VaultAccess {
        VaultAccess(file: VaultFileAccess(store: store, rollback: RollbackGuard(record: generations, vaultPath: store.path, acceptsRollback: false), warn: { _ in }),
                    agent: nil, ui: Given(), observe: { _ in }, warn: { _ in })
    }

    @Test func withoutASessionOrAGivenPassphraseTheKeysAreNotChecked() throws {
        let vault = try TestVault(in: TemporaryFolder("doctor-vault"), keys: ["work": "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"],
                                  settings: ["model": "gemini-from-vault"])
        let paths = Paths(environment: ["HOME": vault.folder.appending("home")])
        var notes: [String] = []
        let blind = try Doctor.forVault(access(vault.store, vault.generations), paths: paths, environment: [:], passphraseGiven: false, note: { notes.append($0) })
        #expect(blind.vaultKeys == nil && blind.settings?[.model] != "gemini-from-vault")
        #expect(notes == ["the vault's keys were not checked: no unlocked session (run 'gemvault unlock', or pass --passphrase-file)"])
        let opened = try Doctor.forVault(access(vault.store, vault.generations), paths: paths, environment: [:], passphraseGiven: true, note: { notes.append($0) })
        #expect(opened.vaultKeys?.map(\.name) == ["work"] && opened.settings?[.model] == "gemini-from-vault")
        #expect(notes.count == 1)
    }
}
