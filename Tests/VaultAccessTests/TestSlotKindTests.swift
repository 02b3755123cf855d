import GemvaultTesting
import SystemIO
import Testing
import VaultCore
@testable import VaultAccess

/// The test token's way in: tried before any prompt, like the ssh-agent's.
private struct TokenUnlock: UnlockMethod {
    let token: SecretBytes
    var prompts: Bool { false }
    func serves(_ purpose: UnlockPurpose) -> Bool { purpose == .anyWayIn }
    func key(for file: VaultFile, purpose: UnlockPurpose, access: VaultAccess) throws -> UnlockKey? {
        let key = TestTokenKey(token: token)
        guard key.hasSlot(in: file) else {
            access.ui.note("no test-token slot for this token")
            return nil
        }
        return UnlockKey(key)
    }
}

/// A slot kind that lives in GemvaultTesting alone goes the whole way through the seam: added,
/// listed, opening the vault without a prompt, kept by a rekey, removed.
@Suite struct TestSlotKindTests {
    let token = SecretBytes.random(count: 32)

    private func access(_ vault: TestVault, _ ui: Typed, token: SecretBytes? = nil) -> VaultAccess {
        let rollback = RollbackGuard(record: vault.generations, vaultPath: vault.store.path, acceptsRollback: false)
        let methods: [any UnlockMethod] = (token.map { [TokenUnlock(token: $0)] } ?? []) + UnlockMethods.standard(sshAgent: nil)
        return VaultAccess(file: VaultFileAccess(store: vault.store, rollback: rollback, warn: { _ in }), agent: nil, ui: ui, methods: methods,
                           observe: { _ in }, warn: { _ in })
    }

    @Test func aSlotKindFromOutsideTheVaultModulesTakesTheWholePath() throws {
        TestTokenSlot.register()
        let vault = try TestVault(in: TemporaryFolder("token"), keys: ["default": "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"])

        // Added: the vault is opened with the passphrase (no token slot yet), once.
        let adding = Typed()
        try access(vault, adding, token: token).addSlot { dataKey in try TestTokenSlot.make(dataKey: dataKey, token: token) }
        #expect(adding.asked == 1 && adding.notes == ["no test-token slot for this token"])
        // A second slot for the same token is refused.
        #expect(throws: VaultError.self) { try access(vault, Typed()).addSlot { try TestTokenSlot.make(dataKey: $0, token: token) } }

        // Listed from the clear header, after the passphrase and recovery slots; format 3.
        let header = try access(vault, Typed()).header()
        #expect(header.formatVersion == 3 && header.slots.map(\.kind) == ["passphrase", "recovery", "test-token"])
        let listed = try #require(header.slots.last)
        #expect(listed.listing.keyType == "test-token" && listed.listing.fingerprint?.hasPrefix("TOKEN:") == true && !listed.isRecovery)

        // Unlocked by the token alone; another token opens nothing and the passphrase is asked.
        let byToken = Typed()
        #expect(try access(vault, byToken, token: token).key("default", markUsed: false) != nil)
        #expect(byToken.asked == 0)
        let other = Typed()
        #expect(try access(vault, other, token: .random(count: 32)).key("default", markUsed: false) != nil)
        #expect(other.asked == 1)

        // A rekey (the passphrase itself) keeps it: the new data key is sealed to its public key.
        let rekeying = Typed()
        let result = try access(vault, rekeying, token: token).withUnlocked(.secret(.passphrase)) { try $0.rekey(newPassphrase: nil) }
        #expect(result.slotsKept == ["test-token"] && result.sshSlotsKept == 0 && rekeying.asked == 1)
        let afterRekey = Typed()
        #expect(try access(vault, afterRekey, token: token).key("default", markUsed: false) != nil)
        #expect(afterRekey.asked == 0)

        // Removed (the vault is rekeyed again): format 2, and the token no longer opens it.
        let removing = Typed()
        _ = try access(vault, removing).removeSlot(listed, allowRecovery: false)
        let after = try access(vault, Typed()).header()
        #expect(after.formatVersion == 2 && after.slots.map(\.kind) == ["passphrase", "recovery"] && removing.asked == 1)
        let gone = Typed()
        #expect(try access(vault, gone, token: token).key("default", markUsed: false) != nil)
        #expect(gone.asked == 1)
    }
}
