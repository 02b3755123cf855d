import Foundation
import GemvaultTesting
import Glibc
import SystemIO
import Testing
import VaultCore
@testable import VaultAccess

/// The passphrase as a script gives it (a file or a descriptor): one try, counted.
private final class GivenPassphrase: UnlockUI, @unchecked Sendable {
    let text: String
    var asked = 0

    init(_ text: String) { self.text = text }

    var canAsk: Bool { true }

    func ask(_ request: SecretRequest) throws -> SecretBytes? {
        guard request.attempt == 1, request.source != .terminalOnly else { return nil }
        asked += 1
        return SecretBytes(utf8: text)
    }
}

@Suite struct VaultAccessTests {
    let passphrase = "correct horse battery staple"
    /// Removed when the test ends.
    let scratch = TemporaryFolder("access")

    private func newVault() throws -> (VaultAccess, GivenPassphrase, String) {
        let folder = scratch.newFolder()
        let store = VaultStore(path: folder + "/vault/vault")
        let document = try VaultDocument.create(path: store.path, passphrase: SecretBytes(utf8: passphrase), recoveryCode: RecoveryCode.generate(),
                                                kdf: KDFParameters.Preset.interactive.parameters)
        try store.withExclusiveLock { session in try store.write(try document.sealed(), in: session) }
        let given = GivenPassphrase(passphrase)
        let rollback = RollbackGuard(record: GenerationRecord(stateDirectory: folder + "/state"), vaultPath: store.path, acceptsRollback: false)
        let access = VaultAccess(file: VaultFileAccess(store: store, rollback: rollback, warn: { _ in }), agent: nil, ui: given,
                                 observe: { _ in }, warn: { _ in })
        return (access, given, folder)
    }

    @Test func changesAndNarrowQuestionsWithoutASession() throws {
        let (access, given, _) = try newVault()
        let key = "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"
        #expect(try access.apply(.setKey(name: "work", secret: SecretBytes(utf8: key), now: 10)) == VaultChange.Outcome(masked: nil, replaced: false))
        #expect(try access.apply(.setting(name: "history", value: "off")).replaced == false)
        let replaced = try access.apply(.replaceKey(name: "work", secret: SecretBytes(utf8: key + "x"), now: 20))
        #expect(replaced == VaultChange.Outcome(masked: "AQ.A…MhKp", replaced: true))
        #expect(throws: VaultError.keyNotFound(name: "other")) { try access.apply(.replaceKey(name: "other", secret: SecretBytes(utf8: key), now: 30)) }
        let stored = try #require(try access.key("work", markUsed: false))
        #expect(stored.secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } == key + "x" && stored.updated == 20)
        #expect(try access.settings() == ["history": "off"])
        #expect(try access.keySummaries().map(\.earlier.count) == [1])
        // One passphrase entry (one Argon2 run) serves every change and question of a command:
        // what a change wrote is what the next one reads.
        #expect(given.asked == 1)
    }

    /// `key get` without a session: the file is read and parsed once, the passphrase asked once
    /// (the check that one can be had runs before the prompt, on the file already read).
    @Test func aKeyWithoutASessionParsesTheVaultOnceAndAsksOnce() throws {
        let (setUp, _, _) = try newVault()
        try setUp.apply(.setKey(name: "work", secret: SecretBytes(utf8: "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"), now: 10))
        let given = GivenPassphrase(passphrase)
        let access = VaultAccess(file: setUp.file, agent: nil, ui: given, observe: { _ in }, warn: { _ in })
        var checked = 0
        let stored = try access.key("work", markUsed: true, beforePrompt: { checked += 1 })
        #expect(stored?.name == "work")
        #expect(access.parses == 1 && given.asked == 1 && checked == 1)
    }

    /// A lock guarding the vault (a key's rotation lock) is taken through the vault: whatever
    /// its holder wrote meanwhile is what the command reads next, without a call to remember.
    /// and the passphrase is not asked again: a descriptor's passphrase cannot be read twice.
    @Test func takingAGuardingLockReadsTheVaultAgain() throws {
        let (access, given, folder) = try newVault()
        try access.apply(.setKey(name: "work", secret: SecretBytes(utf8: "AQ.first-value-000000000000000000000000000"), now: 10))
        #expect(try access.key("work", markUsed: false)?.updated == 10)
        let other = VaultAccess(file: access.file, agent: nil, ui: GivenPassphrase(passphrase), observe: { _ in }, warn: { _ in })
        _ = try other.apply(.replaceKey(name: "work", secret: SecretBytes(utf8: "AQ.second-value-00000000000000000000000000"), now: 20))
        #expect(try access.key("work", markUsed: false)?.updated == 10)  // still what this command read
        let parsed = access.parses
        let lock = try access.acquireGuardingLock("work.lock", in: try TrustedFolder.create(folder + "/locks"), timeout: 1, onWait: { _ in })
        withExtendedLifetime(lock) {}
        #expect(try access.key("work", markUsed: false)?.updated == 20)
        #expect(access.parses == parsed + 1)
        _ = try access.apply(.setting(name: "model", value: "gemini-x"))
        #expect(given.asked == 1)
    }

    @Test func aWrongPassphraseChangesNothing() throws {
        let (access, _, _) = try newVault()
        let before = try access.store.read()
        let wrong = VaultAccess(file: access.file, agent: nil, ui: GivenPassphrase("not it"), observe: { _ in }, warn: { _ in })
        #expect(throws: VaultError.wrongPassphrase) { try wrong.apply(.setting(name: "model", value: "x")) }
        #expect(try access.store.read() == before)
    }

    @Test func narrowAnswersTravelIntactOverTheWire() throws {
        let (access, _, _) = try newVault()
        try access.apply(.setKey(name: "a", secret: SecretBytes(utf8: "AIzaSyUnitTest-0123456789abcdefghijklmn"), now: 1))
        try access.apply(.setKey(name: "a", secret: SecretBytes(utf8: "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"), now: 2))
        try access.apply(.setting(name: "system_prompt", value: "two\nlines"))
        let summaries = try access.keySummaries()
        #expect(summaries.first?.kind == .auth && summaries.first?.earlier.first?.kind == .standard)
        #expect(try access.settings()["system_prompt"] == "two\nlines")
    }
}
