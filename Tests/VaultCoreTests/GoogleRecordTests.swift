import Testing
@testable import VaultCore

private func text(_ secret: SecretBytes) -> String { secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

/// Payload version 5: each value's key at Google travels with it through rotation, rollback and saves.
@Suite struct GoogleRecordTests {
    let old = GoogleKeyRecord(resource: "projects/123/locations/global/keys/old-key", serviceAccount: "bot@p.iam.gserviceaccount.com")
    let new = GoogleKeyRecord(resource: "projects/123/locations/global/keys/gemvault-default-20261202050000", serviceAccount: "bot@p.iam.gserviceaccount.com")

    @Test func aRotationRecordsBothKeysAndARollbackSwapsThem() throws {
        let contents = VaultContents()
        try contents.setKey("default", secret: SecretBytes(utf8: "AQ.old-value-0000000000000000000000000000000"), now: 10)
        try VaultChange.rotateKey(name: "default", secret: SecretBytes(utf8: "AQ.new-value-0000000000000000000000000000000"), now: 20,
                                  google: new, replacedGoogle: old).apply(to: contents)
        var key = try #require(contents.key(named: "default"))
        #expect(key.google == new && key.previous.first?.google == old)
        #expect(key.summary.google == new && key.summary.earlier.first?.google == old)
        try contents.rollBack("default", now: 30)
        key = try #require(contents.key(named: "default"))
        #expect(text(key.secret).hasPrefix("AQ.old") && key.google == old && key.previous.first?.google == new)
        // A plain replacement keeps the replaced value's record in the history; the new value has none.
        try contents.setKey("default", secret: SecretBytes(utf8: "AQ.pasted-00000000000000000000000000000000000"), now: 40)
        key = try #require(contents.key(named: "default"))
        #expect(key.google == nil && key.previous.first?.google == old)
    }

    @Test func theRecordsSurviveASaveAndAnOpen() throws {
        let contents = VaultContents()
        try contents.setKey("default", secret: SecretBytes(utf8: "AQ.first-000000000000000000000000000000000000"), now: 1, google: old)
        try contents.setKey("default", secret: SecretBytes(utf8: "AQ.second-00000000000000000000000000000000000"), now: 2, google: new)
        try contents.setKey("plain", secret: SecretBytes(utf8: "AIza-no-google"), now: 3)
        let reread = try VaultContents.decode(try contents.encoded(), path: "t")
        #expect(reread.key(named: "default")?.google == new && reread.key(named: "default")?.previous.first?.google == old)
        #expect(reread.key(named: "plain")?.google == nil)
        try reread.encoded().withUnsafeBytes { #expect($0.first == VaultContents.payloadVersion) }
    }

    @Test func aMalformedResourceNameIsRefusedAndNeverWritten() {
        let contents = VaultContents()
        let bad = GoogleKeyRecord(resource: "projects/1/keys/x", serviceAccount: "")
        #expect(throws: VaultError.self) { try contents.setKey("k", secret: SecretBytes(utf8: "v"), now: 1, google: bad) }
        #expect(contents.key(named: "k") == nil)
        #expect(GoogleKeyRecord(resource: "projects/1/locations/global/keys/x y", serviceAccount: "").isWellFormed == false)
        #expect(new.project == "123" && new.keyId == "gemvault-default-20261202050000")
        // One parser: a name of another shape has no project, however it starts.
        #expect(bad.project == nil && bad.keyId == "projects/1/keys/x")
    }
}

@Suite struct SharingRecordTests {
    @Test func theIdentityAndSharingStateSurviveASaveAndAnOpen() throws {
        let contents = VaultContents()
        try contents.setKey("lab", secret: SecretBytes(utf8: "AQ.lab-key-0000000000000000000000000000000"), now: 1)
        try contents.setKey("nightly", secret: SecretBytes(utf8: "AQ.nightly-00000000000000000000000000000000"), now: 2)
        let identity = VaultIdentity.generate(label: "alice@lab")
        try contents.setIdentity(identity)
        var sent = KeySharing(recipients: [ShareRecipient(recipient: "age1xyz", label: "bob", added: 5, path: "/srv/share/lab.age")])
        try contents.setSharing("lab", sent)
        // The sent serial moves only by taking the next one: a record that claims another is not believed.
        #expect(try (1...3).map { _ in try contents.takeNextShareSerial("lab") } == [1, 2, 3])
        try contents.setSharing("lab", KeySharing(sentSerial: KeySharing.serialLimit - 1, recipients: sent.recipients))
        sent.sentSerial = 3
        var received = KeySharing(serial: 7, origin: .signed(ShareSender(signingKey: [UInt8](repeating: 9, count: 32), label: "carol@ci")),
                                  follow: FollowedFile(path: "/srv/share/nightly.age", device: 1, inode: 2, size: 3, modified: 4))
        received.serialReset = 1_764_900_000
        try contents.setSharing("nightly", received)
        let reread = try VaultContents.decode(try contents.encoded(), path: "t")
        #expect(reread.identity?.label == "alice@lab")
        #expect(reread.identity?.agreementSecret.isEqual(to: identity.agreementSecret) == true)
        #expect(reread.identity?.signingSeed.isEqual(to: identity.signingSeed) == true)
        #expect(reread.sharing == ["lab": sent, "nightly": received])
        // Removing a key removes its sharing state; an empty state is no record at all.
        try reread.removeKey("lab")
        try reread.setSharing("nightly", KeySharing())
        #expect(try VaultContents.decode(try reread.encoded(), path: "t").sharing.isEmpty)
    }

    @Test func sharingStateForAnUnknownKeyOrABadLabelIsRefused() throws {
        let contents = VaultContents()
        #expect(throws: VaultError.keyNotFound(name: "ghost")) { try contents.setSharing("ghost", KeySharing(serial: 1)) }
        #expect(throws: VaultError.self) { try contents.setIdentity(VaultIdentity.generate(label: "two\nlines")) }
        #expect(throws: VaultError.self) { try contents.setIdentity(VaultIdentity.generate(label: "")) }
    }
}
