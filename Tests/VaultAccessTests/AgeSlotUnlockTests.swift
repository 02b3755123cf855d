import AgeFormat
import GemvaultTesting
import Sharing
import SystemIO
import Testing
import VaultCore
@testable import VaultAccess

/// An age slot through VaultAccess: added with the passphrase, opened first by its identity
/// with no prompt, passed over (with a note) for another identity, kept by a rekey.
@Suite struct AgeSlotUnlockTests {
    private func access(_ vault: TestVault, _ ui: Typed, identities: [any AgeIdentity]? = nil, load: (() throws -> AgeIdentitySource?)? = nil) -> VaultAccess {
        let rollback = RollbackGuard(record: vault.generations, vaultPath: vault.store.path, acceptsRollback: false)
        let age = AgeIdentityUnlock(load: load ?? { identities.map { AgeIdentitySource(path: "identity.txt", identities: $0) } })
        return VaultAccess(file: VaultFileAccess(store: vault.store, rollback: rollback, warn: { _ in }), agent: nil, ui: ui,
                           methods: UnlockMethods.standard(sshAgent: nil, ageIdentity: age), observe: { _ in }, warn: { _ in })
    }

    @Test func theIdentityOpensTheVaultBeforeAnyPromptAndARekeyKeepsIt() throws {
        AgeSlot.register()
        let vault = try TestVault(in: TemporaryFolder("age-slot"), keys: ["default": "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"])
        let identity = X25519Identity.generate()
        let adding = Typed()
        try access(vault, adding).addAgeSlot(identity.recipient, now: 1_700_000_000)
        #expect(adding.asked == 1)
        #expect(try access(vault, Typed()).header().slots.map(\.kind) == ["passphrase", "recovery", "age"])

        let byIdentity = Typed()
        #expect(try access(vault, byIdentity, identities: [identity]).key("default", markUsed: false) != nil)
        #expect(byIdentity.asked == 0 && byIdentity.notes.isEmpty)

        let other = Typed()
        #expect(try access(vault, other, identities: [X25519Identity.generate()]).key("default", markUsed: false) != nil)
        #expect(other.asked == 1 && other.notes == ["the age identity in identity.txt opens none of the vault's age slots; asking for the passphrase"])

        let rekeying = Typed()
        let result = try access(vault, rekeying).withUnlocked(.secret(.passphrase)) { try $0.rekey(newPassphrase: nil) }
        #expect(result.slotsKept == ["age"])
        let after = Typed()
        #expect(try access(vault, after, identities: [identity]).key("default", markUsed: false) != nil)
        #expect(after.asked == 0)
    }

    @Test func anIdentityFileThatFailsIsReportedAndThrownAgain() throws {
        AgeSlot.register()
        let vault = try TestVault(in: TemporaryFolder("age-slot-bad"), keys: ["default": "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"])
        try access(vault, Typed()).addAgeSlot(X25519Identity.generate().recipient, now: 1_700_000_000)
        struct Refused: Error {}
        let failing = Typed()
        var loads = 0
        let opening = access(vault, failing, load: { loads += 1; throw Refused() })
        #expect(throws: Refused.self) { _ = try opening.key("default", markUsed: false) }
        // Asked again in the same command: the same failure, the file not read a second time.
        #expect(throws: Refused.self) { _ = try opening.key("default", markUsed: false) }
        #expect(loads == 1 && failing.asked == 0)
        // A vault without an age slot never reads the identity file.
        let plain = try TestVault(in: TemporaryFolder("age-slot-none"), keys: ["default": "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"])
        #expect(try access(plain, Typed(), load: { throw Refused() }).key("default", markUsed: false) != nil)
    }

    @Test func aFileIdentityGoesOverEverySlotBeforeAnyPluginRuns() throws {
        AgeSlot.register()
        let vault = try TestVault(in: TemporaryFolder("age-slot-passes"), keys: ["default": "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"])
        let first = X25519Identity.generate(), second = X25519Identity.generate()
        try access(vault, Typed()).addAgeSlot(first.recipient, now: 1_700_000_000)
        try access(vault, Typed()).addAgeSlot(second.recipient, now: 1_700_000_001)
        var hardwareAsked: [String] = []
        func opening(_ ui: Typed, _ identities: [any AgeIdentity]?) -> VaultAccess {
            let rollback = RollbackGuard(record: vault.generations, vaultPath: vault.store.path, acceptsRollback: false)
            let age = AgeIdentityUnlock(load: { identities.map { AgeIdentitySource(path: "identity.txt", identities: $0) } },
                                        hardwareIdentities: { hardwareAsked += $0; return [Failing()] })
            return VaultAccess(file: VaultFileAccess(store: vault.store, rollback: rollback, warn: { _ in }), agent: nil, ui: ui,
                               methods: UnlockMethods.standard(sshAgent: nil, ageIdentity: age), observe: { _ in }, warn: { _ in })
        }
        let bySecond = Typed()
        #expect(try opening(bySecond, [second]).key("default", markUsed: false) != nil)
        #expect(bySecond.asked == 0 && bySecond.notes.isEmpty && hardwareAsked.isEmpty)
        // None opens: every slot's hardware identity is tried, and each failure is a note before the passphrase.
        let byNone = Typed()
        #expect(try opening(byNone, nil).key("default", markUsed: false) != nil)
        #expect(byNone.asked == 1 && hardwareAsked == [first.recipient.text, second.recipient.text])
        #expect(byNone.notes.count == 3 && byNone.notes[0].hasPrefix("key slot 3 (age, X25519 ") && byNone.notes[0].hasSuffix("plugin failure: the token is gone"))
    }
}

/// A plugin identity whose plugin fails.
private struct Failing: AgeIdentity {
    var recipientText: String { "" }
    func unwrap(_ stanzas: [AgeStanza]) throws(AgeError) -> SecretBytes? { throw AgeError(.plugin, "the token is gone") }
}
