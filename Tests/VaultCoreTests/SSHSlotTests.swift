import Testing
@testable import VaultCore

/// ssh-agent slots (kind 4): a signature opens the vault, survives rekeys, and changes the format.
@Suite struct SSHSlotTests {
    private let passphrase = SecretBytes(utf8: "unit passphrase")

    private func vaultWithSSHSlot() throws -> (document: VaultDocument, signature: SecretBytes, key: SSHSlotKey, challenge: [UInt8]) {
        let document = try VaultDocument.create(path: "test", passphrase: passphrase, recoveryCode: RecoveryCode.generate(),
                                                kdf: .testingMinimum, recoveryKDF: .testingMinimum)
        try document.contents.setKey("default", secret: SecretBytes(utf8: "AQ.unit-test-key"), now: 1_700_000_000)
        let challenge = SSHAgentSlot.newChallenge()
        let signature = SecretBytes.random(count: 64)
        let key = SSHSlotKey(algorithm: .ed25519, fingerprint: Sodium.sha256(Array("a key blob".utf8)), added: 1_700_000_000)
        try document.addSlot { try SSHAgentSlot.make(dataKey: $0, key: key, challenge: challenge, signature: signature) }
        return (document, signature, key, challenge)
    }

    @Test func theSignatureOpensTheVaultAndTheFileBecomesFormat3() throws {
        let (document, signature, key, _) = try vaultWithSSHSlot()
        let file = try VaultFile.parse(try document.sealed(), path: "test", policy: .testing)
        #expect(file.formatVersion == 3)
        let slot = try #require(file.sshSlots.first)
        #expect(slot.sshKey == key)
        #expect(KeySlot(slot).encoded.count == SSHAgentSlot.encodedBytes)
        let opener = try #require(try slot.opener(signature: signature))
        let opened = try VaultDocument.open(file, path: "test", key: opener)
        #expect(opened.contents.key(named: "default") != nil)
        #expect(opened.keyEncryptionKey == nil)
    }

    @Test func anotherSignatureOpensNothing() throws {
        let (document, _, _, _) = try vaultWithSSHSlot()
        let file = try VaultFile.parse(try document.sealed(), path: "test", policy: .testing)
        #expect(try file.sshSlots[0].opener(signature: SecretBytes.random(count: 64)) == nil)
    }

    @Test func aRekeyKeepsTheSlotWorkingWithoutTheAgent() throws {
        let (document, signature, _, _) = try vaultWithSSHSlot()
        _ = try document.rekey(newPassphrase: SecretBytes(utf8: "another passphrase"), kdf: .testingMinimum)
        let file = try VaultFile.parse(try document.sealed(), path: "test", policy: .testing)
        let opener = try #require(try file.sshSlots[0].opener(signature: signature))
        #expect(try VaultDocument.open(file, path: "test", key: opener).contents.key(named: "default") != nil)
    }

    @Test func removingTheLastSSHSlotWritesFormat2AgainAndTheRulesHold() throws {
        let (document, _, key, challenge) = try vaultWithSSHSlot()
        #expect(throws: VaultError.self) { try document.addSlot { try SSHAgentSlot.make(dataKey: $0, key: key, challenge: challenge, signature: SecretBytes.random(count: 64)) } }
        #expect(throws: VaultError.self) { try document.removeSlot(at: 0, allowRecovery: true) }
        #expect(throws: VaultError.self) { try document.removeSlot(at: 1, allowRecovery: false) }
        try document.removeSlot(at: 2, allowRecovery: false)
        let file = try VaultFile.parse(try document.sealed(), path: "test", policy: .testing)
        #expect(file.formatVersion == 2)
        #expect(file.sshSlots.isEmpty)
    }

    @Test func aFormat2FileWithAnSSHSlotIsRefused() throws {
        let (document, _, _, _) = try vaultWithSSHSlot()
        var bytes = try document.sealed()
        bytes[8] = 2  // format version, little-endian
        let body = Array(bytes.dropLast(32))
        bytes = body + Sodium.blake2b256(body[...])
        #expect(throws: VaultError.self) { try VaultFile.parse(bytes, path: "test", policy: .testing) }
    }

    /// Rewrites bytes of a sealed file and its checksum, as someone editing the file would.
    private func edited(_ bytes: [UInt8], _ edit: (inout [UInt8]) -> Void) -> [UInt8] {
        var body = Array(bytes.dropLast(32))
        edit(&body)
        return body + Sodium.blake2b256(body[...])
    }

    @Test func aRepeatedKeyAndAnImpossibleDateAreRefusedAsDamagedSlots() throws {
        let (document, _, _, _) = try vaultWithSSHSlot()
        let other = SSHSlotKey(algorithm: .rsa, fingerprint: Sodium.sha256(Array("another blob".utf8)), added: 1_700_000_000)
        try document.addSlot { try SSHAgentSlot.make(dataKey: $0, key: other, challenge: SSHAgentSlot.newChallenge(), signature: SecretBytes.random(count: 256)) }
        let bytes = try document.sealed()
        // Slots start at 35: passphrase 102, recovery 142, then the two ssh slots of 186 bytes.
        let first = 35 + 102 + 142, second = first + SSHAgentSlot.encodedBytes
        let repeated = edited(bytes) { body in body.replaceSubrange(second + 2..<second + 34, with: body[first + 2..<first + 34]) }
        #expect(throws: VaultError.self) { try VaultFile.parse(repeated, path: "test", policy: .testing) }
        let farFuture = edited(bytes) { body in body.replaceSubrange(second + 34..<second + 42, with: [UInt8](repeating: 0x7f, count: 8)) }
        #expect(throws: VaultError.self) { try VaultFile.parse(farFuture, path: "test", policy: .testing) }
        #expect(try VaultFile.parse(bytes, path: "test", policy: .testing).sshSlots.count == 2)
    }

    @Test func aVaultTakesEightSSHSlotsAndRefusesANinth() throws {
        let (document, _, _, _) = try vaultWithSSHSlot()
        for index in 1..<SSHAgentSlot.most {
            let key = SSHSlotKey(algorithm: .ed25519, fingerprint: Sodium.sha256([UInt8(index)]), added: 1_700_000_000)
            try document.addSlot { try SSHAgentSlot.make(dataKey: $0, key: key, challenge: SSHAgentSlot.newChallenge(), signature: SecretBytes.random(count: 64)) }
        }
        #expect(document.file.sshSlots.count == 8)
        let ninth = SSHSlotKey(algorithm: .ed25519, fingerprint: Sodium.sha256([99]), added: 1_700_000_000)
        #expect(throws: VaultError.self) { try document.addSlot { try SSHAgentSlot.make(dataKey: $0, key: ninth, challenge: SSHAgentSlot.newChallenge(), signature: SecretBytes.random(count: 64)) } }
        #expect(try VaultFile.parse(try document.sealed(), path: "test", policy: .testing).sshSlots.count == 8)
    }
}
