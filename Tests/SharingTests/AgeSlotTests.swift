import AgeFormat
import Testing
import VaultCore
@testable import Sharing

/// The age slot kind (kind 5) on its own: made, parsed back, opened by its identity only,
/// resealed without it, and its damage found.
@Suite struct AgeSlotTests {
    private let passphrase = SecretBytes(utf8: "unit passphrase")

    private func vault(sealedTo recipient: X25519Recipient) throws -> VaultDocument {
        AgeSlot.register()
        let document = try VaultDocument.create(path: "test", passphrase: passphrase, recoveryCode: RecoveryCode.generate(),
                                                kdf: .testingMinimum, recoveryKDF: .testingMinimum)
        try document.contents.setKey("default", secret: SecretBytes(utf8: "AQ.unit-test-key"), now: 1_700_000_000)
        try document.addSlot { try AgeSlot.make(dataKey: $0, recipient: recipient, added: 1_700_000_000) }
        return document
    }

    @Test func itsIdentityOpensTheVaultAndAnotherOpensNothing() throws {
        let identity = X25519Identity.generate()
        let file = try VaultFile.parse(try vault(sealedTo: identity.recipient).sealed(), path: "test", policy: .testing)
        #expect(file.formatVersion == 3)
        let slot = try #require(file.slots(AgeSlot.self).first)
        #expect(slot.recipient == identity.recipient.text && slot.added == 1_700_000_000)
        #expect(slot.listing == SlotListing(keyType: "X25519", fingerprint: identity.recipient.text, added: 1_700_000_000))
        let key = try #require(try AgeSlotKey.trying(file, path: "test") { _ in [identity] }.key)
        #expect(try VaultDocument.open(file, path: "test", key: key).contents.key(named: "default") != nil)
        #expect(try AgeSlotKey.trying(file, path: "test") { _ in [X25519Identity.generate()] }.key == nil)
    }

    @Test func aRekeySealsTheNewDataKeyWithoutTheIdentity() throws {
        let identity = X25519Identity.generate()
        let document = try vault(sealedTo: identity.recipient)
        let before = try VaultFile.parse(try document.sealed(), path: "test", policy: .testing)
        _ = try document.rekey(newPassphrase: SecretBytes(utf8: "another passphrase"), kdf: .testingMinimum)
        let after = try VaultFile.parse(try document.sealed(), path: "test", policy: .testing)
        #expect(after.slots(AgeSlot.self).first?.sealed != before.slots(AgeSlot.self).first?.sealed)
        // The key taken before the rekey no longer fits; the identity opens the new slot.
        let old = try #require(try AgeSlotKey.trying(before, path: "test") { _ in [identity] }.key)
        #expect(!old.fits(after))
        let key = try #require(try AgeSlotKey.trying(after, path: "test") { _ in [identity] }.key)
        #expect(try VaultDocument.open(after, path: "test", key: key).contents.key(named: "default") != nil)
    }

    @Test func aSlotThatDoesNotVerifyIsPassedOverAndOneThatDoesNotParseIsDamaged() throws {
        let identity = X25519Identity.generate()
        let original = Array(try vault(sealedTo: identity.recipient).sealed().dropLast(32))
        let payloadSize = try VaultFile.parse(original + Sodium.blake2b256(original[...]), path: "test", policy: .testing).payloadSize
        // The age file ends the third slot, before the payload's nonce and length; its last byte is its payload's tag.
        let slotEnd = original.count - 24 - 4 - payloadSize
        var bytes = original
        bytes[slotEnd - 1] ^= 1
        let changed = try VaultFile.parse(bytes + Sodium.blake2b256(bytes[...]), path: "test", policy: .testing)
        let tried = try AgeSlotKey.trying(changed, path: "test") { _ in [identity] }
        #expect(tried.key == nil && tried.passedOver.count == 1 && tried.passedOver[0].hasPrefix("key slot 3 (age, X25519 age1"))
        #expect(tried.passedOver[0].contains("is passed over: payload failure"))
        // Another identity does not reach the payload: no match, nothing to say.
        #expect(try AgeSlotKey.trying(changed, path: "test") { _ in [X25519Identity.generate()] }.passedOver.isEmpty)
        // A header line that is not base64 does not parse: damaged key slots.
        let slot = try #require(changed.slots(AgeSlot.self).first)
        let stanzaArgument = slotEnd - slot.sealed.count + Array("age-encryption.org/v1\n-> X25519 ".utf8).count
        bytes = original
        bytes[stanzaArgument + 5] = UInt8(ascii: "!")
        let damaged = try VaultFile.parse(bytes + Sodium.blake2b256(bytes[...]), path: "test", policy: .testing)
        let error = try #require(throws: VaultError.self) { _ = try AgeSlotKey.trying(damaged, path: "test") { _ in [identity] }.key }
        guard case .slotsDamaged(_, let detail) = error else { Issue.record("not a damaged slot: \(error)"); return }
        #expect(detail.contains("does not parse"), "\(detail)")
    }

    @Test func recipientTypesAndShortForms() {
        #expect(AgeSlot.recipientType("age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p") == "X25519")
        #expect(AgeSlot.recipientType("age1pq1abc") == "mlkem768x25519")
        #expect(AgeSlot.recipientType("age1tag1abc") == "p256tag")
        #expect(AgeSlot.recipientType("age1tagpq1abc") == "mlkem768p256tag")
        #expect(AgeSlot.recipientType("age1yubikey1qabc") == "plugin yubikey")
        #expect(AgeSlot.recipientType("ssh-ed25519 AAAA") == "ssh-ed25519")
        let long = "age1pq1" + String(repeating: "q", count: 1950)
        #expect(AgeSlot.short(long).count == 24 + 1 + 12 && AgeSlot.short(long).hasPrefix("age1pq1"))
    }
}
