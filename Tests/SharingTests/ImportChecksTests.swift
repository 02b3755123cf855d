import Sharing
import Testing
import VaultCore

/// The import rules as Sharing states them: a name pinned to its sender refuses another signer
/// or an unsigned file unless accepted, and a newcomer whose label looks like a trusted one is named.
@Suite struct ImportChecksTests {
    let alice = ShareSender(signingKey: Array(repeating: 1, count: 32), label: "alice@lab")
    let mallory = ShareSender(signingKey: Array(repeating: 2, count: 32), label: "Alice@lab ")

    @Test func aPinnedNameRefusesAnotherSignerOrAnUnsignedFileUnlessAccepted() throws {
        let pinned = KeySharing(serial: 4, origin: .signed(alice))
        let fingerprint = SharingIdentity.fingerprint(of: alice.signingKey)
        #expect(throws: ShareRefusal("'work' came signed by \(fingerprint) (alice@lab), but this file is unsigned; nothing was stored",
                                     hint: "if the sender really changed their vault, run the import again with --accept-new-sender")) {
            try ImportChecks.checkSender(.unsigned, document: nil, existing: pinned, name: "work", accept: false)
        }
        #expect(throws: ShareRefusal.self) { try ImportChecks.checkSender(.signed(mallory), document: nil, existing: pinned, name: "work", accept: false) }
        #expect(try ImportChecks.checkSender(.signed(mallory), document: nil, existing: pinned, name: "work", accept: true) == false)
        // Nothing pinned yet: the first signed import pins its sender.
        #expect(try ImportChecks.checkSender(.signed(mallory), document: nil, existing: nil, name: "work", accept: false) == false)
        #expect(ImportChecks.pinnedSender(pinned) == alice && ImportChecks.pinnedSender(KeySharing(origin: .unsigned)) == nil)
    }

    @Test func aNewcomerWhoseLabelLooksLikeATrustedSendersIsNamed() {
        let records = ["work": KeySharing(origin: .signed(alice))]
        #expect(ImportChecks.lookAlikeSender(mallory, records: records) == alice)
        #expect(ImportChecks.lookAlikeSender(alice, records: records) == nil)
        #expect(ImportChecks.lookAlikeSender(ShareSender(signingKey: mallory.signingKey, label: "bob@lab"), records: records) == nil)
    }
}
