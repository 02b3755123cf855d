import Foundation
import Testing
@testable import VaultCore

/// Vaults made with the cheapest KDF parameters; the CLI's floor is tested end to end.
private func makeVault(keys: [(String, String)] = [("default", "AIzaSyUnitTest-0123456789abcdefghijklmn")]) throws -> (bytes: [UInt8], code: SecretBytes) {
    let code = RecoveryCode.generate()
    let document = try VaultDocument.create(path: "test", passphrase: SecretBytes(utf8: "unit passphrase"), recoveryCode: code,
                                            kdf: .testingMinimum, recoveryKDF: .testingMinimum)
    for (name, value) in keys { try document.contents.setKey(name, secret: SecretBytes(utf8: value), now: 1_700_000_000) }
    try document.contents.setSetting("model", value: "gemini-test")
    return (try document.sealed(), code)
}

private func open(_ bytes: [UInt8], passphrase: String = "unit passphrase") throws -> VaultDocument {
    let file = try VaultFile.parse(bytes, path: "test", policy: .testing)
    return try VaultDocument.open(file, path: "test", key: PassphraseKey.unlocking(file, with: SecretBytes(utf8: passphrase)))
}

private func text(_ secret: SecretBytes) -> String { secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

@Suite struct VaultFormatTests {
    @Test func roundTripKeepsKeysSettingsAndDates() throws {
        let (bytes, _) = try makeVault()
        let document = try open(bytes)
        let key = try #require(document.contents.key(named: "default"))
        #expect(text(key.secret) == "AIzaSyUnitTest-0123456789abcdefghijklmn")
        #expect(key.created == 1_700_000_000)
        #expect(document.contents.settings == ["model": "gemini-test"])
        #expect(document.file.generation == 1)
        #expect(Array(bytes.prefix(8)) == Array("GEMVAULT".utf8))
    }

    @Test func wrongPassphraseIsItsOwnError() throws {
        let (bytes, _) = try makeVault()
        #expect(throws: VaultError.wrongPassphrase) { try open(bytes, passphrase: "not it") }
    }

    @Test func recoveryCodeOpensAndWrongCodeIsRefused() throws {
        let (bytes, code) = try makeVault()
        let file = try VaultFile.parse(bytes, path: "test", policy: .testing)
        let typed = SecretBytes(utf8: text(code).lowercased().replacingOccurrences(of: "-", with: " "))
        let document = try VaultDocument.open(file, path: "test", key: RecoveryKey.unlocking(file, with: typed))
        #expect(document.contents.key(named: "default") != nil)
        #expect(throws: VaultError.wrongRecoveryCode) {
            try VaultDocument.open(file, path: "test", key: RecoveryKey.unlocking(file, with: SecretBytes(utf8: "0000-0000-0000-0000-0000-0000-0000-0000")))
        }
        #expect(throws: VaultError.wrongRecoveryCode) {
            try VaultDocument.open(file, path: "test", key: RecoveryKey.unlocking(file, with: SecretBytes(utf8: "too short")))
        }
    }

    @Test func passwdPutsTheVaultUnderANewDataKeyAndTheCodeKeepsWorking() throws {
        let (bytes, code) = try makeVault(keys: [("a", "AIzaSyFirst-0123456789abcdefghijklmnopq"), ("b", "AIzaSySecond-0123456789abcdefghijklmnop")])
        let document = try open(bytes)
        #expect(try document.rekey(newPassphrase: SecretBytes(utf8: "new passphrase")) == nil)
        let rewritten = try document.sealed()
        #expect(throws: VaultError.wrongPassphrase) { try open(rewritten) }
        let reopened = try open(rewritten, passphrase: "new passphrase")
        #expect(reopened.contents.keys.map(\.name) == ["a", "b"])
        #expect(reopened.contents.conversationKey.isEqual(to: document.contents.conversationKey))
        let file = try VaultFile.parse(rewritten, path: "t", policy: .testing)
        #expect(try VaultDocument.open(file, path: "t", key: RecoveryKey.unlocking(file, with: code)).contents.keys.count == 2)
    }

    /// The attack passwd used to allow: the old passphrase slot, copied out of an old copy of the
    /// vault into a newer file, unwrapped the data key that still encrypted every later version.
    @Test func anOldSlotSplicedIntoANewerFileOpensNothing() throws {
        let (old, _) = try makeVault()
        let document = try open(old)
        _ = try document.rekey(newPassphrase: SecretBytes(utf8: "new passphrase"))
        try document.contents.setKey("later", secret: SecretBytes(utf8: "AIzaSyLater-0123456789abcdefghijklmnopq"), now: 1)
        var newer = try VaultFile.parse(try document.sealed(), path: "t", policy: .testing)
        newer.slots[0] = try VaultFile.parse(old, path: "t", policy: .testing).slots[0]
        #expect(throws: VaultError.tampered(path: "t")) {
            try VaultDocument.open(newer, path: "t", key: PassphraseKey.unlocking(newer, with: SecretBytes(utf8: "unit passphrase")))
        }
    }

    @Test func rekeyKeepsThePassphraseAndChangesTheCiphertextKey() throws {
        let (bytes, code) = try makeVault()
        let document = try open(bytes)
        let before = try VaultFile.parse(bytes, path: "t", policy: .testing)
        _ = try document.rekey()
        let rekeyed = try document.sealed()
        let after = try VaultFile.parse(rekeyed, path: "t", policy: .testing)
        #expect(after.passphraseSlot?.key.wrapped != before.passphraseSlot?.key.wrapped)
        #expect(after.passphraseSlot?.salt == before.passphraseSlot?.salt && after.passphraseSlot?.salt != nil)
        #expect(after.vaultID == before.vaultID)
        #expect(try open(rekeyed).contents.keys.count == 1)
        #expect(try VaultDocument.open(after, path: "t", key: RecoveryKey.unlocking(after, with: code)).contents.keys.count == 1)
    }

    @Test func generationsOnlyGrowAndHonourTheFloor() throws {
        let (bytes, _) = try makeVault()
        let document = try open(bytes)
        _ = try document.sealed(minimumGeneration: 41)
        #expect(document.file.generation == 42)
        _ = try document.sealed(minimumGeneration: 3)
        #expect(document.file.generation == 43)
    }

    @Test func slotRulesAreEnforcedBeforeAnySecret() throws {
        let (bytes, _) = try makeVault()
        var file = try VaultFile.parse(bytes, path: "t", policy: .testing)
        file.slots = [file.slots[0], file.slots[0]]
        #expect(throws: VaultError.slotsDamaged(path: "t", detail: "key slot 2 is a passphrase slot where a vault never has one")) {
            try VaultFile.parse(file.encoded(), path: "t", policy: .testing)
        }
        file.slots = [file.slots[0], file.slots[0], file.slots[0]]
        #expect(throws: VaultError.slotsDamaged(path: "t", detail: "the file declares 3 key slots; a vault has one passphrase slot and at most one recovery slot")) {
            try VaultFile.parse(file.encoded(), path: "t", policy: .testing)
        }
    }

    @Test func theCeilingBoundsTheWorkOfAnUnlock() {
        #expect(KDFPolicy.standard.check(KDFParameters.Preset.sensitive.parameters) == nil)
        #expect(KDFPolicy.standard.check(KDFParameters(opsLimit: 16, memLimit: 4 << 30)) != nil)
        #expect(KDFPolicy.standard.check(KDFParameters(opsLimit: 5, memLimit: 64 << 20)) != nil)
    }

    @Test func everySingleByteChangeIsDetected() throws {
        let (bytes, _) = try makeVault()
        for index in bytes.indices {
            var damaged = bytes
            damaged[index] ^= 0x20
            #expect(throws: VaultError.self) { try VaultFile.parse(damaged, path: "t", policy: .testing) }
            do {
                _ = try VaultFile.parse(damaged, path: "t", policy: .testing)
            } catch let error {
                guard case .damaged = error else { Issue.record("byte \(index): \(error)"); continue }
            }
        }
    }

    @Test func everyTruncationIsDetected() throws {
        let (bytes, _) = try makeVault()
        for length in 0..<bytes.count {
            do {
                _ = try VaultFile.parse(Array(bytes.prefix(length)), path: "t", policy: .testing)
                Issue.record("truncation to \(length) bytes was accepted")
            } catch let error {
                guard case .damaged = error else { Issue.record("length \(length): \(error)"); continue }
            }
        }
    }

    @Test func forgedChecksumIsCaughtByAuthentication() throws {
        let (bytes, _) = try makeVault()
        var forged = Array(bytes.dropLast(32))
        forged[10] ^= 1  // generation counter
        forged += Sodium.blake2b256(forged[...])
        #expect(throws: VaultError.tampered(path: "test")) { try open(forged) }
    }

    @Test func kdfParametersOutsideThePolicyAreRefused() throws {
        let (bytes, _) = try makeVault()
        #expect {
            try VaultFile.parse(bytes, path: "t", policy: .standard)
        } throws: { error in
            guard case VaultError.kdfParametersRejected(_, let detail) = error else { return false }
            return detail.contains("below the accepted minimum")
        }
    }

    @Test func paddingHidesKeyLength() throws {
        let short = try makeVault(keys: [("default", "AIza-short")]).bytes
        let long = try makeVault(keys: [("default", String(repeating: "k", count: 300))]).bytes
        #expect(short.count == long.count)
    }

    @Test func replacedKeysMoveToHistoryUpToTheLimit() throws {
        let contents = VaultContents()
        for round in 0..<8 { try contents.setKey("k", secret: SecretBytes(utf8: "value\(round)"), now: Int64(round)) }
        let key = try #require(contents.key(named: "k"))
        #expect(text(key.secret) == "value7")
        #expect(key.previous.count == VaultContents.retiredLimit)
        #expect(text(key.previous[0].secret) == "value6" && key.created == 0 && key.updated == 7)
    }

    @Test func rollbackRestoresTheValueWithTheDateItWasSet() throws {
        let contents = VaultContents()
        try contents.setKey("k", secret: SecretBytes(utf8: "old"), now: 100)
        try contents.setKey("k", secret: SecretBytes(utf8: "new"), now: 500)
        let restored = try contents.rollBack("k", now: 900)
        #expect(text(restored.secret) == "old" && restored.updated == 100)
        #expect(restored.previous[0].set == 500 && restored.previous[0].retired == 900)
        // The dates survive the payload (version 4), and a second rollback brings "new" back with its own date.
        let decoded = try VaultContents.decode(try contents.encoded(), path: "test")
        #expect(try decoded.rollBack("k", now: 1000).updated == 500)
    }

    @Test func payloadsBeforeVersionFourGetSetDatesFromTheValuesAround() throws {
        let contents = VaultContents()
        for (value, time) in [("a", Int64(10)), ("b", 20), ("c", 30)] { try contents.setKey("k", secret: SecretBytes(utf8: value), now: time) }
        // A version 3 payload: the same bytes without each earlier value's set date (version 4)
        // and without the values' Google keys (version 5; 4 bytes each when there is none).
        let current = try contents.encoded()
        var bytes = current.withUnsafeBytes { Array($0) }
        while bytes.last == 0 { bytes.removeLast() }
        #expect(bytes.removeLast() == 0x80)
        // Version 6's sharing section, empty: no identity (one byte) and no records (two); then
        // version 7's Secret Manager links, none (two); then version 9's secrets, none (two).
        #expect(Array(bytes.suffix(7)) == [0, 0, 0, 0, 0, 0, 0])
        bytes.removeLast(7)
        bytes[0] = 3
        let name = 2 + 1, secret = 2 + 1, dates = 8 * 3, record = 2 + 2
        let currentRecord = 1 + 32 + 2 + name + secret + dates
        let earlierStart = currentRecord + record + 1
        // Each earlier value is 2 + 1 + 8 + 8 + 4 bytes; drop its last 12 (the set date and the
        // Google key), later ones first, then the current value's Google key.
        for index in (0..<2).reversed() {
            let setDate = earlierStart + index * 23 + 11
            bytes.removeSubrange(setDate..<setDate + 12)
        }
        bytes.removeSubrange(currentRecord..<currentRecord + record)
        let padded = SecretBytes(count: (bytes.count / 512 + 1) * 512)
        padded.withUnsafeMutableBytes { raw in
            for index in raw.indices { raw[index] = 0 }
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0x80
        }
        let old = try VaultContents.decode(padded, path: "test")
        let key = try #require(old.key(named: "k"))
        #expect(key.previous.map(\.retired) == [30, 20] && key.previous.map(\.set) == [20, 10])
    }

    @Test(arguments: ["", "-dash", "has space", "ü", String(repeating: "a", count: 129)])
    func invalidNamesAreRefused(name: String) {
        #expect(throws: VaultError.invalidName(name)) { try VaultContents.validateName(name) }
    }

    @Test func committedVectorDecrypts() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        let bytes = [UInt8](try Data(contentsOf: fixtures.appendingPathComponent("vector-v1.vault")))
        let expected = try JSONSerialization.jsonObject(with: Data(contentsOf: fixtures.appendingPathComponent("vector-v1.json"))) as! [String: Any]
        let file = try VaultFile.parse(bytes, path: "vector", policy: .standard)
        let document = try VaultDocument.open(file, path: "vector", key: PassphraseKey.unlocking(file, with: SecretBytes(utf8: expected["passphrase"] as! String)))
        let keys = expected["keys"] as! [String: String]
        #expect(text(try #require(document.contents.key(named: "default")).secret) == keys["default"])
        #expect(document.contents.settings == expected["settings"] as! [String: String])
        let byCode = try VaultDocument.open(file, path: "vector", key: RecoveryKey.unlocking(file, with: SecretBytes(utf8: expected["recovery_code"] as! String)))
        #expect(byCode.contents.keys.count == 1)
        #expect(file.formatVersion == 1 && file.recoverySlot?.isKind(LegacyRecoverySlot.self) == true)
    }

    /// The payload version 8 vector (Docs/vault-format.md): every section as its JSON says.
    @Test func payloadVersion8VectorOpensWithEverySection() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        let bytes = [UInt8](try Data(contentsOf: fixtures.appendingPathComponent("vector-p8.vault")))
        let file = try VaultFile.parse(bytes, path: "vector", policy: .standard)
        let contents = try VaultDocument.open(file, path: "vector", key: PassphraseKey.unlocking(file, with: SecretBytes(utf8: "gemvault test vector"))).contents
        #expect(file.formatVersion == 2 && file.generation == 5)
        #expect(contents.keys.map(\.name) == ["default", "fleet", "shared"])
        #expect(contents.key(named: "default")?.lastUsed == 1_780_090_000 && contents.key(named: "default")?.previous.count == 1)
        #expect(contents.identity?.label == "vector@gemvault" && contents.sharing["shared"]?.serial == 7)
        #expect(contents.links["fleet"]?.rotation == LinkedRotation(previousVersion: 3, retireKey: "projects/123456789012/locations/global/keys/9e8d7c6b-retire",
                                                                    finishAfter: 1_780_160_000))
    }

    /// A format 1 vault is written as format 2 with a vault id; its legacy recovery slot keeps
    /// working until the data key changes, and is then converted with the code at hand.
    @Test func formatOneVaultsUpgradeOnTheNextWrite() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        let bytes = [UInt8](try Data(contentsOf: fixtures.appendingPathComponent("vector-v1.vault")))
        let expected = try JSONSerialization.jsonObject(with: Data(contentsOf: fixtures.appendingPathComponent("vector-v1.json"))) as! [String: Any]
        let passphrase = SecretBytes(utf8: expected["passphrase"] as! String)
        let code = SecretBytes(utf8: expected["recovery_code"] as! String)
        let document = try VaultDocument.open(try VaultFile.parse(bytes, path: "v"), path: "v", key: PassphraseKey.unlocking(try VaultFile.parse(bytes, path: "v"), with: passphrase))
        let upgraded = try VaultFile.parse(try document.sealed(), path: "v")
        #expect(upgraded.formatVersion == 2 && upgraded.vaultID?.count == 16)
        #expect(try VaultDocument.open(upgraded, path: "v", key: RecoveryKey.unlocking(upgraded, with: code)).contents.keys.count == 1)
        // passwd without the code: the legacy slot cannot follow, so a new code replaces it.
        let newCode = try #require(try document.rekey(newPassphrase: SecretBytes(utf8: "another passphrase")))
        let rekeyed = try VaultFile.parse(try document.sealed(), path: "v")
        #expect(rekeyed.recoverySlot?.isKind(RecoverySlot.self) == true)
        #expect(throws: VaultError.wrongRecoveryCode) { try VaultDocument.open(rekeyed, path: "v", key: RecoveryKey.unlocking(rekeyed, with: code)) }
        #expect(try VaultDocument.open(rekeyed, path: "v", key: RecoveryKey.unlocking(rekeyed, with: newCode)).contents.keys.count == 1)
        // recover with the old code: the slot is converted and the same code keeps working.
        let byCode = try VaultDocument.open(try VaultFile.parse(bytes, path: "v"), path: "v", key: RecoveryKey.unlocking(try VaultFile.parse(bytes, path: "v"), with: code))
        #expect(try byCode.rekey(newPassphrase: SecretBytes(utf8: "third passphrase")) == nil)
        let recovered = try VaultFile.parse(try byCode.sealed(), path: "v")
        #expect(recovered.recoverySlot?.isKind(RecoverySlot.self) == true)
        #expect(try VaultDocument.open(recovered, path: "v", key: RecoveryKey.unlocking(recovered, with: code)).contents.keys.count == 1)
    }
}

@Suite struct SecretBytesTests {
    @Test func maskingShowsFirstAndLastFour() {
        #expect(SecretBytes(utf8: "AIzaSyUnitTest-0123456789abcdefghijklmn").masked == "AIza…klmn")
        #expect(SecretBytes(utf8: "short").masked == "****")
        #expect(SecretBytes(utf8: "\u{1}\u{2}binary-looking-value").masked == "****")
    }

    @Test func redactionCutsOutRunsOfARegisteredSecretWhateverItsShape() {
        let secret = SecretBytes(utf8: "sk-not-a-google-key-0123456789")
        Redaction.register(secret)
        #expect(Redaction.redact("server said: bad key sk-not-a-google-key-0123456789.") == "server said: bad key [redacted].")
        #expect(Redaction.redact("prefix only: sk-not-a-google…") == "prefix only: [redacted]…")
        #expect(Redaction.redact("nothing here") == "nothing here")
        // A passphrase is cut out only whole, and only when long enough not to be an ordinary word.
        Redaction.registerPassphrase(SecretBytes(utf8: "the vault is mine!"))
        #expect(Redaction.redact("the vault is under a new data key") == "the vault is under a new data key")
        #expect(Redaction.redact("typed: the vault is mine!") == "typed: [redacted]")
        Redaction.registerPassphrase(SecretBytes(utf8: "gemvault"))
        #expect(Redaction.redact("gemvault: error") == "gemvault: error")
    }

    @Test func allocationThatCannotBeMadeIsNilNotTheEndOfTheProcess() throws {
        #expect(SecretBytes.allocate(count: 1 << 62) == nil)
        #expect(SecretBytes.allocate(count: -1) == nil)
        let small = try #require(SecretBytes.allocate(count: 16))
        #expect(small.count == 16 && small.withUnsafeBytes { $0.allSatisfy { $0 == 0 } })
    }

    @Test func viewsShareTheirParentsBytes() {
        let parent = SecretBytes(utf8: "abcdefgh")
        let view = parent.view(2..<5)
        parent.withUnsafeMutableBytes { $0[3] = UInt8(ascii: "X") }
        #expect(text(view) == "cXe")
    }

    @Test func trimmingAndTruncation() {
        #expect(text(SecretBytes(utf8: " \t key \r\n").trimmingWhitespace()) == "key")
        let secret = SecretBytes(utf8: "abcdef")
        secret.truncate(to: 3)
        #expect(text(secret) == "abc")
        #expect(secret.withCString(prefix: "h: ") { String(cString: $0) } == "h: abc")
    }
}

@Suite struct RecoveryCodeTests {
    @Test func generatedCodesAreGroupedBase32AndDistinct() {
        let first = text(RecoveryCode.generate())
        let second = text(RecoveryCode.generate())
        #expect(first != second)
        #expect(first.count == 39 && first.split(separator: "-").count == 8)
        #expect(first.replacingOccurrences(of: "-", with: "").allSatisfy { "0123456789ABCDEFGHJKMNPQRSTVWXYZ".contains($0) })
    }

    @Test func normalisationForgivesCaseSeparatorsAndLookalikes() throws {
        let canonical = try #require(RecoveryCode.normalize(SecretBytes(utf8: "oiLa-bcde fghj-kmnp qrst-vwxy z012-3456\n")))
        #expect(text(canonical) == "011ABCDEFGHJKMNPQRSTVWXYZ0123456")
        #expect(RecoveryCode.normalize(SecretBytes(utf8: "oiLa-bcde fghj-kmnp qrst-vwxy z012-3456-7")) == nil)
        #expect(RecoveryCode.normalize(SecretBytes(utf8: "UUUU-0000-0000-0000-0000-0000-0000-0000")) == nil)
    }
}

@Suite struct SecretLinkTests {
    @Test func aLinkSurvivesThePayloadAndGoesWithItsKey() throws {
        let contents = VaultContents()
        let link = SecretLink(reference: "gsm://projects/p/secrets/s", version: 3, fetched: 20)
        try VaultChange.linkKey(name: "lab", secret: SecretBytes(utf8: "AQ.first-value-of-the-linked-key-0123456789"), now: 20, link: link).apply(to: contents)
        let decoded = try VaultContents.decode(try contents.encoded(), path: "test")
        #expect(decoded.links["lab"] == link && decoded.key(named: "lab")?.link == link && decoded.summaries.first?.link == link)
        // Rotating or rolling back here is refused: the next fetch would undo it.
        #expect(throws: VaultError.linkedKey(name: "lab", reference: link.reference)) {
            try VaultChange.replaceKey(name: "lab", secret: SecretBytes(utf8: "AQ.other"), now: 30).apply(to: decoded)
        }
        // A value set by hand unlinks the key; removing the key drops its link.
        try VaultChange.setKey(name: "lab", secret: SecretBytes(utf8: "AQ.by-hand"), now: 40).apply(to: decoded)
        #expect(decoded.links.isEmpty)
        try VaultChange.linkKey(name: "lab", secret: SecretBytes(utf8: "AQ.again"), now: 50, link: link).apply(to: decoded)
        try decoded.removeKey("lab")
        #expect(decoded.links.isEmpty)
    }

    @Test func aRefreshWithTheSameValueKeepsTheHistory() throws {
        let contents = VaultContents()
        let value = SecretBytes(utf8: "AQ.linked-value-0123456789abcdefghij")
        let link = SecretLink(reference: "gsm://projects/p/secrets/s", version: 1, fetched: 1)
        try VaultChange.linkKey(name: "k", secret: value, now: 1, link: link).apply(to: contents)
        let same = try VaultChange.refreshLink(name: "k", secret: value, now: 2, link: SecretLink(reference: link.reference, version: 1, fetched: 2), since: 1).apply(to: contents)
        #expect(!same.replaced && contents.key(named: "k")?.previous.isEmpty == true && contents.links["k"]?.fetched == 2)
        let changed = try VaultChange.refreshLink(name: "k", secret: SecretBytes(utf8: "AQ.next-value-0123456789abcdefghijkl"), now: 3,
                                                  link: SecretLink(reference: link.reference, version: 2, fetched: 3), since: 2).apply(to: contents)
        #expect(changed.replaced && contents.key(named: "k")?.previous.count == 1 && contents.links["k"]?.version == 2)
    }

    /// A refresh that began before the key was set by hand (or linked elsewhere) changes nothing.
    @Test func aRefreshStartedBeforeAChangeDoesNotUndoIt() throws {
        let contents = VaultContents()
        let link = SecretLink(reference: "gsm://projects/p/secrets/s", version: 1, fetched: 1)
        try VaultChange.linkKey(name: "k", secret: SecretBytes(utf8: "AQ.linked-value-0123456789abcdefghij"), now: 1, link: link).apply(to: contents)
        let fetched = SecretBytes(utf8: "AQ.fetched-meanwhile-0123456789abcdefg")
        try VaultChange.setKey(name: "k", secret: SecretBytes(utf8: "AQ.set-by-hand-0123456789abcdefghijkl"), now: 2).apply(to: contents)
        let late = try VaultChange.refreshLink(name: "k", secret: fetched, now: 3, link: SecretLink(reference: link.reference, version: 2, fetched: 3), since: 1)
            .apply(to: contents)
        #expect(!late.replaced && contents.links.isEmpty)
        #expect(contents.key(named: "k")?.secret.isEqual(to: SecretBytes(utf8: "AQ.set-by-hand-0123456789abcdefghijkl")) == true)
        // Linked again meanwhile (fetched at 4): a refresh that began from the fetch at 1 is stale.
        try VaultChange.linkKey(name: "k", secret: SecretBytes(utf8: "AQ.relinked-0123456789abcdefghijklmnop"), now: 4,
                                link: SecretLink(reference: link.reference, version: 2, fetched: 4)).apply(to: contents)
        #expect(try !VaultChange.refreshLink(name: "k", secret: fetched, now: 5, link: SecretLink(reference: link.reference, version: 3, fetched: 5), since: 1)
            .apply(to: contents).replaced)
        #expect(contents.links["k"]?.fetched == 4)
    }

    /// Payload version 8: a rotation through the secret is written with its value, survives
    /// refreshes, is finished once, and an undo drops it with the previous value current.
    @Test func aLinkedRotationIsKeptUntilItsFinishAndUndone() throws {
        let contents = VaultContents()
        let first = SecretBytes(utf8: "AQ.first-linked-value-0123456789abcdefg")
        let second = SecretBytes(utf8: "AQ.second-linked-value-0123456789abcdef")
        let reference = "gsm://projects/p/secrets/s"
        try VaultChange.linkKey(name: "lab", secret: first, now: 10, link: SecretLink(reference: reference, version: 7, fetched: 10)).apply(to: contents)
        let made = GoogleKeyRecord(resource: "projects/1/locations/global/keys/new", serviceAccount: "bot@p.iam.gserviceaccount.com")
        let rotated = SecretLink(reference: reference, version: 8, fetched: 20,
                                 rotation: LinkedRotation(previousVersion: 7, retireKey: "projects/1/locations/global/keys/old", finishAfter: 920))
        // A key to retire that is not an API Keys resource name is not written.
        #expect(!LinkedRotation(previousVersion: 7, retireKey: "https://evil.test/x", finishAfter: 1).isWellFormed)
        try VaultChange.rotateLinkedKey(name: "lab", secret: second, now: 20, google: made, replacedGoogle: nil, link: rotated).apply(to: contents)
        var decoded = try VaultContents.decode(try contents.encoded(), path: "test")
        #expect(decoded.links["lab"] == rotated && decoded.key(named: "lab")?.google == made && decoded.key(named: "lab")?.previous.count == 1)
        // A refresh (the same version fetched again) keeps the rotation's record.
        try VaultChange.refreshLink(name: "lab", secret: second, now: 30, link: SecretLink(reference: reference, version: 8, fetched: 30), since: 20).apply(to: decoded)
        #expect(decoded.links["lab"]?.rotation == rotated.rotation)
        // A finish for another version changes nothing; the right one keeps what --undo needs.
        #expect(try !VaultChange.finishLinkedRotation(name: "lab", version: 6).apply(to: decoded).replaced)
        #expect(try VaultChange.finishLinkedRotation(name: "lab", version: 7).apply(to: decoded).replaced)
        decoded = try VaultContents.decode(try decoded.encoded(), path: "test")
        #expect(decoded.links["lab"]?.rotation == LinkedRotation(previousVersion: 7, retireKey: "projects/1/locations/global/keys/old", finishAfter: 0))
        try VaultChange.rollBackLinked(name: "lab", now: 40, link: SecretLink(reference: reference, version: 9, fetched: 40)).apply(to: decoded)
        #expect(decoded.key(named: "lab")?.secret.isEqual(to: first) == true && decoded.links["lab"]?.rotation == nil && decoded.links["lab"]?.version == 9)
        // Neither is taken for a key that is not linked to that secret.
        #expect(throws: VaultError.notLinked(name: "lab")) {
            try VaultChange.rotateLinkedKey(name: "lab", secret: second, now: 50, google: made, replacedGoogle: nil,
                                            link: SecretLink(reference: "gsm://projects/p/secrets/other", version: 2, fetched: 50)).apply(to: decoded)
        }
    }

    /// A version 7 payload (no rotation marker) still reads.
    @Test func aVersionSevenLinkStillReads() throws {
        let contents = VaultContents()
        let link = SecretLink(reference: "gsm://projects/p/secrets/s", version: 3, fetched: 20)
        try VaultChange.linkKey(name: "lab", secret: SecretBytes(utf8: "AQ.first-value-of-the-linked-key-0123456789"), now: 20, link: link).apply(to: contents)
        let encoded = try contents.encoded()
        let length = try encoded.withUnsafeBytes { try Sodium.unpad($0, blockSize: VaultContents.paddingBlock) }
        // Version 8 writes one 0 marker after the link, and versions 9 to 11 a secret count of 0
        // after it; version 7 has neither.
        var bytes = encoded.withUnsafeBytes { Array($0.prefix(length)) }
        #expect(bytes[0] == 11 && bytes.suffix(3) == [0, 0, 0])
        bytes[0] = 7
        bytes.removeLast(3)
        let buffer = SecretBytes(count: bytes.count + VaultContents.paddingBlock)
        let total = try buffer.withUnsafeMutableBytes { raw in
            raw.copyBytes(from: bytes)
            return try Sodium.pad(raw, unpaddedLength: bytes.count, blockSize: VaultContents.paddingBlock)
        }
        let padded = SecretBytes(copying: buffer.withUnsafeBytes { Array($0.prefix(total)) })
        #expect(try VaultContents.decode(padded, path: "test").links["lab"] == link)
    }
}
