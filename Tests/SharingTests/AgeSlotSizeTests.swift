import Testing
@testable import VaultCore
@testable import Sharing

/// The largest file a vault may be (`VaultFile.maximumSize`, a constant) holds the most age
/// slots there may be, each of the longest recipient and age file, beside the largest payload.
@Suite struct AgeSlotSizeTests {
    @Test func theMostAgeSlotsOfTheLargestSizeStillParse() throws {
        AgeSlot.register()
        #expect(AgeSlot.maximumBytes <= KeySlot.maxAdditionalSlotBytes)
        let document = try VaultDocument.create(path: "test", passphrase: SecretBytes(utf8: "unit passphrase"), recoveryCode: RecoveryCode.generate(),
                                                kdf: .testingMinimum, recoveryKDF: .testingMinimum)
        var file = document.file
        file.formatVersion = VaultFile.currentVersion
        let sealed = AgeSlot.fileStart + [UInt8](repeating: 0x61, count: AgeSlot.maxFileBytes - AgeSlot.fileStart.count)
        for index in 0..<KeySlot.maxAdditionalSlots {
            // Each to its own recipient: a vault holds none twice.
            let recipient = "age1\(index)" + String(repeating: "q", count: AgeSlot.maxRecipientBytes - 5)
            let slot = AgeSlot(recipient: recipient, added: 1_700_000_000 + Int64(index), sealed: sealed)
            #expect(KeySlot(slot).encoded.count == AgeSlot.maximumBytes)
            file.slots.append(KeySlot(slot))
        }
        // Parsed, not decrypted: a nonce and ciphertext of the largest size do.
        file.payloadNonce = [UInt8](repeating: 0, count: Sodium.xchachaNonceBytes)
        file.payloadCiphertext = [UInt8](repeating: 0, count: VaultFile.maxPayload)
        let bytes = file.encoded()
        #expect(bytes.count <= VaultFile.maximumSize)
        let parsed = try VaultFile.parse(bytes, path: "test", policy: .testing)
        #expect(parsed.slots(AgeSlot.self).count == KeySlot.maxAdditionalSlots)
    }
}
