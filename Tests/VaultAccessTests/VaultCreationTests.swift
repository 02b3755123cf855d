import Foundation
import GemvaultTesting
import SystemIO
import Testing
import VaultCore
@testable import VaultAccess

/// Making a vault and putting its backup back (moved out of the CLI's init and restore-backup):
/// nothing a flag does loses a vault, and what is kept aside is named.
@Suite struct VaultCreationTests {
    /// The passphrase once, as a descriptor gives it.
    struct TypedOnce: UnlockUI {
        let passphrase: String
        var canAsk: Bool { true }
        func ask(_ request: SecretRequest) throws -> SecretBytes? { request.attempt == 1 ? SecretBytes(utf8: passphrase) : nil }
    }

    let scratch = TemporaryFolder("creation")
    let kdf = KDFParameters.Preset.interactive.parameters

    func access(_ path: String) -> VaultAccess {
        let rollback = RollbackGuard(record: GenerationRecord(stateDirectory: scratch.appending("state")), vaultPath: path, acceptsRollback: false)
        return VaultAccess(file: VaultFileAccess(store: VaultStore(path: path), rollback: rollback, warn: { _ in }), agent: nil,
                           ui: TypedOnce(passphrase: "a long enough passphrase"), observe: { _ in }, warn: { _ in })
    }

    @Test func aNewVaultIsRefusedOverAnOldOneUnlessReplacingKeepsItAside() throws {
        let path = scratch.newFolder() + "/vault"
        let first = try access(path).create(passphrase: SecretBytes(utf8: "a long enough passphrase"), kdf: kdf, identityLabel: "me",
                                            replacing: false, dateStamp: "20261207T220000Z", moveConversations: { _ in Issue.record("nothing to move") })
        #expect(first.keptAside == nil && first.recoveryCode.count > 0)
        #expect(first.vault.document.contents.identity?.label == "me")
        #expect(throws: VaultError.alreadyExists(path: path)) {
            try access(path).create(passphrase: SecretBytes(utf8: "another passphrase"), kdf: kdf, identityLabel: "me", replacing: false,
                                    dateStamp: "20261207T220100Z", moveConversations: { _ in })
        }
        var moved: [String] = []
        let second = try access(path).create(passphrase: SecretBytes(utf8: "another passphrase"), kdf: kdf, identityLabel: "me", replacing: true,
                                             dateStamp: "20261207T220200Z", moveConversations: { moved.append($0) })
        #expect(second.keptAside == path + ".replaced-20261207T220200Z" && moved == [path + ".replaced-20261207T220200Z"])
        #expect(FileManager.default.fileExists(atPath: path + ".replaced-20261207T220200Z"))
    }

    @Test func theBackupComesBackUnderANewGenerationAndTheDamagedVaultIsKept() throws {
        let path = scratch.newFolder() + "/vault"
        let vault = access(path)
        _ = try vault.create(passphrase: SecretBytes(utf8: "a long enough passphrase"), kdf: kdf, identityLabel: "me", replacing: false,
                             dateStamp: "x", moveConversations: { _ in })
        try vault.apply(.setKey(name: "work", secret: SecretBytes(utf8: "AQ.a-key-written-after-the-backup-0000000000"), now: 10))
        let written = try VaultFile.parse(try VaultStore(path: path).read(), path: path).generation
        try Data("damaged".utf8).write(to: URL(fileURLWithPath: path))
        let restored = try access(path).restoreBackup(dateStamp: "20261207T221500Z", onWait: { _ in })
        #expect(restored.keptAside == path + ".damaged-20261207T221500Z")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + ".damaged-20261207T221500Z")) == Data("damaged".utf8))
        #expect(restored.generation > written)
        #expect(try access(path).key("work", markUsed: false) == nil)
    }

    /// `rekey` without a session (moved out of the CLI): the passphrase opens it, the data key
    /// changes, a format 2 vault's recovery code is kept, and the keys are still there.
    @Test func aRekeyWithoutASessionUsesThePassphraseAndKeepsTheKeys() throws {
        let path = scratch.newFolder() + "/vault"
        _ = try access(path).create(passphrase: SecretBytes(utf8: "a long enough passphrase"), kdf: kdf, identityLabel: "me", replacing: false,
                                    dateStamp: "x", moveConversations: { _ in })
        try access(path).apply(.setKey(name: "work", secret: SecretBytes(utf8: "AQ.kept-through-the-rekey-000000000000000000"), now: 10))
        let before = try VaultFile.parse(try VaultStore(path: path).read(), path: path)
        let (result, throughSession) = try access(path).rekey(legacyRecoveryCode: { _ in nil })
        let after = try VaultFile.parse(try VaultStore(path: path).read(), path: path)
        #expect(!throughSession && result.newRecoveryCode == nil)
        #expect(after.generation > before.generation && after.encoded() != before.encoded())
        #expect(try access(path).key("work", markUsed: false)?.name == "work")
    }
}
