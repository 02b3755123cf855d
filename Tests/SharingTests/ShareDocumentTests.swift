import AgeFormat
import Foundation
import GoogleKeys
import Sharing
import Testing
import VaultCore

func text(_ secret: SecretBytes) -> String { secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

@Suite struct ShareDocumentTests {
    static let key = "AQ.Ab8RN6LsharedKeyForTheLab-0123456789abcdefghijk"
    static let google = GoogleKeyRecord(resource: "projects/123/locations/global/keys/gv-lab-1", serviceAccount: "bot@p.iam.gserviceaccount.com")

    static func alice(_ label: String = "alice@lab") throws -> SharingIdentity { try SharingIdentity(.generate(label: label)) }
    static let bob = X25519Identity.generate()
    static let carol = X25519Identity.generate()

    static func share(from identity: SharingIdentity, serial: UInt64 = 1, for recipients: [String] = [bob.recipient.text]) throws -> ShareDocument {
        try ShareDocument.signed(name: "lab", key: SecretBytes(utf8: key), googleKey: google, serial: serial, created: 1_764_900_000, recipients: recipients,
                                 signer: try #require(identity.signer))
    }

    @Test func aSignedShareSurvivesAgeAndVerifies() throws {
        let alice = try Self.alice()
        let bob = Self.bob
        let file = try AgeFile.encrypt(try Self.share(from: alice).encoded(), to: [bob.recipient])
        guard case .share(let read) = try SharePlaintext.read(try AgeFile.decrypt(file, with: [bob])) else {
            Issue.record("a share read as a bare key")
            return
        }
        #expect(read.isSignatureValid)
        #expect(read.name == "lab" && text(read.key) == Self.key && read.kind == .auth)
        #expect(read.googleKey == Self.google && read.serial == 1 && read.created == 1_764_900_000)
        #expect(read.sender == ShareSender(signingKey: alice.signingPublicKey, label: "alice@lab"))
        #expect(SharingIdentity.fingerprint(of: read.sender.signingKey) == alice.fingerprint)
        #expect(alice.fingerprint.hasPrefix("SHA256:") && alice.fingerprint.count == 50)
        #expect(read.recipients == [bob.recipient.text] && read.isWritten(forAnyOf: [bob.recipient.text], pinnedSigner: nil))
        #expect(!read.isWritten(forAnyOf: [Self.carol.recipient.text], pinnedSigner: alice.signingPublicKey))
    }

    /// Format 1 names no recipients: it counts as written for the reader only where its signer
    /// is the one pinned for the name, never for a newcomer (review finding 5).
    @Test func aFormat1ShareIsForTheReaderOnlyFromThePinnedSigner() throws {
        let alice = try Self.alice(), mallory = try Self.alice()
        let json = text(try Self.share(from: alice).encoded())
        let recipients = ",\"recipients\":[\"\(Self.bob.recipient.text)\"]"
        #expect(json.contains(recipients))
        let old = json.replacingOccurrences(of: recipients, with: "").replacingOccurrences(of: "\"gemvault_share\":2", with: "\"gemvault_share\":1")
        let read = try ShareDocument.parse(SecretBytes(utf8: old))
        #expect(read.version == 1 && read.recipients == nil)
        #expect(!read.isWritten(forAnyOf: [Self.bob.recipient.text], pinnedSigner: nil))
        #expect(!read.isWritten(forAnyOf: [Self.bob.recipient.text], pinnedSigner: mallory.signingPublicKey))
        #expect(read.isWritten(forAnyOf: [Self.bob.recipient.text], pinnedSigner: alice.signingPublicKey))
    }

    @Test func theJSONHasTheFieldsOfIssue27InOrder() throws {
        let json = text(try Self.share(from: Self.alice()).encoded())
        #expect(json.hasPrefix("{\"gemvault_share\":2,\"name\":\"lab\",\"key\":\"\(Self.key)\",\"kind\":\"auth\",\"google_key\":{\"resource\":"))
        #expect(json.contains(",\"serial\":1,\"created\":1764900000,\"from\":{\"label\":\"alice@lab\",\"signing_key\":\""))
        #expect(json.contains("},\"recipients\":[\"\(Self.bob.recipient.text)\"],\"signature\":\""))
        #expect(json.hasSuffix("\"}\n"))
    }

    /// Every field is covered: a change to any of them, or another key's claim to have signed, fails.
    @Test(arguments: [
        ("\"name\":\"lab\"", "\"name\":\"lab2\""),
        ("\"serial\":1,", "\"serial\":2,"),
        ("\"created\":1764900000", "\"created\":1764900001"),
        ("\"label\":\"alice@lab\"", "\"label\":\"mallory@lab\""),
        ("keys/gv-lab-1", "keys/gv-lab-2"),
        ("bot@p.iam", "bob@p.iam"),
        ("LsharedKey", "LsharedKex"),
        (bob.recipient.text, carol.recipient.text),
    ]) func aChangedFieldBreaksTheSignature(_ change: (String, String)) throws {
        let json = text(try Self.share(from: Self.alice()).encoded())
        #expect(json.contains(change.0))
        let forged = try ShareDocument.parse(SecretBytes(utf8: json.replacingOccurrences(of: change.0, with: change.1)))
        #expect(!forged.isSignatureValid)
    }

    /// SecretJSON takes the first "key" at any depth, so a share has exactly one, at the top;
    /// and serials stay below 2^53, so adding one can never overflow.
    @Test func aSecondKeyFieldOrAHugeSerialIsNotAWritersShare() throws {
        let json = text(try Self.share(from: Self.alice()).encoded())
        #expect(throws: Never.self) { try ShareDocument.parse(SecretBytes(utf8: json)) }
        let nested = json.replacingOccurrences(of: "\"from\":{", with: "\"from\":{\"key\":\"AQ.nested-value\",")
        #expect(throws: SharingError.malformed("it has more than one key field")) { try ShareDocument.parse(SecretBytes(utf8: nested)) }
        let huge = json.replacingOccurrences(of: "\"serial\":1,", with: "\"serial\":18446744073709551615,")
        #expect(throws: SharingError.malformed("its serial is out of range")) { try ShareDocument.parse(SecretBytes(utf8: huge)) }
    }

    @Test func anotherSignerIsAnotherFingerprint() throws {
        let alice = try Self.alice(), mallory = try Self.alice()
        let forged = try Self.share(from: mallory)
        #expect(forged.isSignatureValid)
        #expect(SharingIdentity.fingerprint(of: forged.sender.signingKey) != alice.fingerprint)
    }

    @Test func labelsWithQuotesAndBackslashesRoundTrip() throws {
        let identity = try Self.alice("a \"quoted\" \\ lab ünïcode")
        let read = try ShareDocument.parse(try Self.share(from: identity).encoded())
        #expect(read.sender.label == "a \"quoted\" \\ lab ünïcode" && read.isSignatureValid)
    }

    @Test func aBareKeyIsAcceptedOnlyAsOneLine() throws {
        guard case .bareKey(let key) = try SharePlaintext.read(SecretBytes(utf8: Self.key + "\n")) else {
            Issue.record("a bare key read as a share")
            return
        }
        #expect(text(key) == Self.key)
        #expect(throws: SharingError.self) { try SharePlaintext.read(SecretBytes(utf8: Self.key + "\nX-Injected: yes\n")) }
        #expect(throws: SharingError.self) { try SharePlaintext.read(SecretBytes(utf8: "\n")) }
    }

    @Test(arguments: [
        "{\"gemvault_share\":1}",
        "{\"gemvault_share\":3,\"name\":\"lab\",\"key\":\"AQ.x\",\"kind\":\"other\",\"google_key\":null,\"serial\":1,\"created\":1,\"from\":{\"label\":\"a\",\"signing_key\":\"\"},\"signature\":\"\"}",
        "{\"gemvault_share\":1,\"name\":\"lab\",\"key\":\"AQ.x\\nX-Injected: 1\",\"kind\":\"other\",\"google_key\":null,\"serial\":1,\"created\":1,\"from\":{\"label\":\"a\",\"signing_key\":\"\"},\"signature\":\"\"}",
        "{\"gemvault_share\":1,\"name\":\"../etc\",\"key\":\"AQ.x\",\"kind\":\"other\",\"google_key\":null,\"serial\":1,\"created\":1,\"from\":{\"label\":\"a\",\"signing_key\":\"\"},\"signature\":\"\"}",
        "{\"gemvault_share\":1,\"name\":\"lab\",\"key\":\"AIzaSyNotAnAuthKey-0000000000000000000\",\"kind\":\"auth\",\"google_key\":null,\"serial\":1,\"created\":1,\"from\":{\"label\":\"a\",\"signing_key\":\"\"},\"signature\":\"\"}",
        "{\"gemvault_share\":1,\"name\":\"lab\",\"key\":\"x",
    ]) func malformedDocumentsAreRefused(_ document: String) {
        #expect(throws: SharingError.self) { try ShareDocument.parse(SecretBytes(utf8: document)) }
    }
}

@Suite struct RecipientListTests {
    @Test func ageAndSSHRecipientsParseWithTheirLabels() throws {
        let age = X25519Identity.generate().recipient.text
        #expect(try RecipientList.parse(age, origin: "--to").text == age)
        let (publicKey, _) = try Ed25519.keyPair(seed: .random(count: 32))
        let length: (Int) -> [UInt8] = { [0, 0, 0, UInt8($0)] }
        let wire = Sodium.base64(length(11) + Array("ssh-ed25519".utf8) + length(32) + publicKey)
        let parsed = try RecipientList.parse("ssh-ed25519 \(wire) bob@laptop", origin: "--to")
        #expect(parsed.label == "bob@laptop" && parsed.text == "ssh-ed25519 \(wire)")
    }

    @Test func aRecipientsFileSkipsCommentsAndNamesTheBadLine() throws {
        let one = X25519Identity.generate().recipient.text, two = X25519Identity.generate().recipient.text
        let list = try RecipientList.parseFile("# Bob, the new student\n\(one)\n\n\(two)\n", path: "team.txt")
        #expect(list.map(\.text) == [one, two] && list.map(\.label) == ["Bob, the new student", ""])
        let error = try #require(throws: SharingError.self) { try RecipientList.parseFile("\(one)\n# c\nage1broken\n", path: "team.txt") }
        #expect(error == .badRecipient("team.txt line 3: not a valid age recipient (a character is wrong or missing)"))
        // A comment that could drive a terminal is no label.
        let escaped = try RecipientList.parseFile("# \u{1b}]0;title\u{07}\u{1b}[31mred\n\(one)\n", path: "evil.txt")
        #expect(escaped.map(\.label) == [""])
        let rsa = try #require(throws: SharingError.self) { try RecipientList.parse("ssh-rsa AAAAB3NzaC1yc2E= x", origin: "--to") }
        #expect(rsa == .badRecipient("--to: only ssh-ed25519 keys can receive a share, not ssh-rsa"))
    }

    @Test func anAgeRecipientTakesALabelAfterAnEqualsSign() throws {
        let age = X25519Identity.generate().recipient.text
        let parsed = try RecipientList.parse("\(age)=carol", origin: "--to")
        #expect(parsed.text == age && parsed.label == "carol")
        #expect(throws: SharingError.self) { try RecipientList.parse("\(age)=", origin: "--to") }
        #expect(throws: SharingError.self) { try RecipientList.parse("age1broken=carol", origin: "--to") }
    }

    /// One file per recipient for a folder or a {label} pattern, named by label (or the key's
    /// start); one file for all otherwise; two recipients never share a name.
    @Test func shareFilesAreOnePerRecipientForAFolderOrAPattern() throws {
        let bob = NamedRecipient(recipient: X25519Identity.generate().recipient, label: "bob")
        let carol = NamedRecipient(recipient: X25519Identity.generate().recipient, label: "carol/../x")
        let anonymous = NamedRecipient(recipient: X25519Identity.generate().recipient, label: "")
        let folder = try ShareFiles.targets("/s", isFolder: true, name: "lab", recipients: [bob, carol, anonymous])
        #expect(folder.map(\.path) == ["/s/lab-bob.age", "/s/lab-carol_.._x.age", "/s/lab-\(anonymous.text.prefix(16)).age"])
        #expect(folder.allSatisfy { $0.recipients.count == 1 })
        let pattern = try ShareFiles.targets("/s/{label}.age", isFolder: false, name: "lab", recipients: [bob])
        #expect(pattern.map(\.path) == ["/s/bob.age"])
        let single = try ShareFiles.targets("/s/lab.age", isFolder: false, name: "lab", recipients: [bob, carol])
        #expect(single.count == 1 && single[0].recipients.count == 2)
        let twin = NamedRecipient(recipient: X25519Identity.generate().recipient, label: "bob")
        #expect(throws: SharingError.self) { try ShareFiles.targets("/s/", isFolder: true, name: "lab", recipients: [bob, twin]) }
    }
}
