import Testing
@testable import VaultCore

/// The keys derived once and reused (passwd, recover), the private seal of the history index,
/// and key insertion in byte order.
@Suite struct FastPathTests {
    private let passphrase = SecretBytes(utf8: "unit passphrase")

    private func makeFile() throws -> (file: VaultFile, code: SecretBytes) {
        let code = RecoveryCode.generate()
        let document = try VaultDocument.create(path: "test", passphrase: passphrase, recoveryCode: code,
                                                kdf: .testingMinimum, recoveryKDF: .testingMinimum)
        try document.contents.setKey("default", secret: SecretBytes(utf8: "AIzaSyUnitTest-0123456789abcdefghijklmn"), now: 1)
        return (try VaultFile.parse(try document.sealed(), path: "test", policy: .testing), code)
    }

    /// Compacted contents are the same contents, with every value in one secret buffer (the
    /// agent's memory after many changes, each of which brought its value in a buffer of its own).
    @Test func compactedContentsAreTheSameInOneBuffer() throws {
        let document = try VaultDocument.create(path: "test", passphrase: passphrase, recoveryCode: RecoveryCode.generate(),
                                                kdf: .testingMinimum, recoveryKDF: .testingMinimum)
        for index in 0..<20 {
            try document.contents.setKey("key\(index)", secret: SecretBytes(utf8: "AQ.Compact-\(index)-0123456789abcdefghijklmnopqrstu"), now: Int64(index))
        }
        try document.contents.setSetting("model", value: "echo")
        let owners = Set(document.contents.keys.map { ObjectIdentifier($0.secret.memoryOwner) })
        #expect(owners.count == 20)
        let compacted = try document.contents.compacted(path: "test")
        #expect(Set(compacted.keys.map { ObjectIdentifier($0.secret.memoryOwner) }).count == 1)
        #expect(compacted.keys.map(\.name) == document.contents.keys.map(\.name))
        for (before, after) in zip(document.contents.keys, compacted.keys) { #expect(before.secret.isEqual(to: after.secret)) }
        #expect(compacted.settings == document.contents.settings)
        #expect(compacted.conversationKey.isEqual(to: document.contents.conversationKey))
    }

    @Test func aPassphraseKeyOpensItsFileOnlyWhileTheSlotIsUnchanged() throws {
        let (file, _) = try makeFile()
        #expect(try PassphraseKey.derive(SecretBytes(utf8: "not it"), opening: file) == nil)
        let key = try #require(try PassphraseKey.derive(passphrase, opening: file))
        #expect(key.fits(file))
        let document = try VaultDocument.open(file, path: "test", key: VaultDocument.SessionKey.keyEncryptionKey(key.kek))
        #expect(document.contents.key(named: "default") != nil)

        // A rekey without a new passphrase keeps the slot's salt: the key still fits and opens.
        _ = try document.rekey()
        let rekeyed = try VaultFile.parse(try document.sealed(), path: "test", policy: .testing)
        #expect(key.fits(rekeyed))
        #expect(try VaultDocument.open(rekeyed, path: "test", key: VaultDocument.SessionKey.keyEncryptionKey(key.kek)).contents.key(named: "default") != nil)

        // Another passphrase means another salt: the old key no longer fits.
        let newKey = try PassphraseKey.derive(SecretBytes(utf8: "second passphrase"), kdf: .testingMinimum)
        _ = try document.rekey(newPassphraseKey: newKey)
        let changed = try VaultFile.parse(try document.sealed(), path: "test", policy: .testing)
        #expect(!key.fits(changed))
        #expect(newKey.fits(changed))
        #expect(throws: VaultError.wrongPassphrase) { try VaultDocument.open(changed, path: "test", key: PassphraseKey.unlocking(changed, with: passphrase)) }
        #expect(try VaultDocument.open(changed, path: "test", key: PassphraseKey.unlocking(changed, with: SecretBytes(utf8: "second passphrase"))).contents.keys.count == 1)
    }

    @Test func aRecoveryKeyOpensItsFileAndAWrongCodeGivesNone() throws {
        let (file, code) = try makeFile()
        #expect(try RecoveryKey.derive(SecretBytes(utf8: "0000-0000-0000-0000-0000-0000-0000-0000"), opening: file) == nil)
        let key = try #require(try RecoveryKey.derive(code, opening: file))
        #expect(key.fits(file))
        let document = try VaultDocument.open(file, path: "test", key: key)
        #expect(document.contents.key(named: "default") != nil)
        // The code travels on, so a rekey keeps the recovery slot working.
        _ = try document.rekey(newPassphraseKey: try PassphraseKey.derive(SecretBytes(utf8: "after recovery"), kdf: .testingMinimum))
        let rekeyed = try VaultFile.parse(try document.sealed(), path: "test", policy: .testing)
        #expect(try VaultDocument.open(rekeyed, path: "test", key: RecoveryKey.unlocking(rekeyed, with: code)).contents.key(named: "default") != nil)
    }

    @Test func privateSealsOpenOnlyWithTheSamePairAndPurpose() throws {
        let pair = try SealedBox.keyPair(seed: .random(count: 32))
        let other = try SealedBox.keyPair(seed: .random(count: 32))
        let message = Array("titles and models".utf8)
        let sealed = try pair.sealPrivately(message, purpose: "index")
        #expect(!sealed.isEmpty && sealed != message)
        let opened = try #require(pair.openPrivately(sealed, purpose: "index"))
        #expect(opened.withUnsafeBytes { Array($0) } == message)
        #expect(pair.openPrivately(sealed, purpose: "something else") == nil)
        #expect(other.openPrivately(sealed, purpose: "index") == nil)
        var altered = sealed
        altered[altered.count - 1] ^= 1
        #expect(pair.openPrivately(altered, purpose: "index") == nil)
        #expect(pair.openPrivately(Array(sealed.prefix(10)), purpose: "index") == nil)
    }

    @Test func keysStayInByteOrderWhateverOrderTheyAreSetIn() throws {
        let contents = VaultContents()
        let names = ["m", "B", "a", "Z", "key.2", "key-1", "key_3", "0", "zz", "a0"]
        for name in names { try contents.setKey(name, secret: SecretBytes(utf8: "AIzaSyUnitTest-\(name)-0123456789abcdef"), now: 1) }
        #expect(contents.keys.map(\.name) == names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        // And the payload decodes, which checks the order again.
        let decoded = try VaultContents.decode(try contents.encoded(), path: "test")
        #expect(decoded.keys.map(\.name) == contents.keys.map(\.name))
    }
}
