import AgeFormat
import Synchronization
import Testing
import VaultCore

/// An identity held by the session agent: one request per file, whatever its stanzas, and a
/// bound on how many are tried at all.
@Suite struct DelegatedIdentityTests {
    final class Counter: Sendable {
        let calls = Mutex(0)
        let shares = Mutex(0)
    }

    static func delegated(_ held: X25519Identity, _ counter: Counter) -> DelegatedX25519Identity {
        DelegatedX25519Identity(recipient: held.recipient) { shares in
            counter.calls.withLock { $0 += 1 }
            counter.shares.withLock { $0 += shares.count }
            return shares.map { try? X25519.sharedSecret(held.secret, $0) }
        }
    }

    /// The holder (the session's agent) failing is said as such, for X25519 and hybrid alike:
    /// neither a damaged header nor a low-order point.
    @Test func aHolderThatCannotBeAskedIsNotADamagedFile() throws {
        let gone = AgeError(.holderUnavailable, "the session's agent could not open the share: no unlocked session")
        let x25519 = X25519Identity.generate()
        let hybrid = HybridIdentity.generate()
        let file = try AgeFile.encrypt(SecretBytes(utf8: "a key"), to: [x25519.recipient, hybrid.recipient])
        let identities: [any AgeIdentity] = [DelegatedX25519Identity(recipient: x25519.recipient) { _ throws(AgeError) in throw gone },
                                             DelegatedHybridIdentity(recipient: hybrid.recipient) { _ throws(AgeError) in throw gone }]
        for identity in identities {
            #expect(throws: gone) { try AgeFile.decrypt(file, with: [identity]) }
        }
        // Exit 1 with the agent's words, not exit 4's "the share file is damaged".
        #expect(gone.report.outcome == .failure && gone.report.message.hasPrefix("the session's agent could not open the share"))
    }

    @Test func aFileForManyRecipientsCostsOneAgreementRequest() throws {
        let held = X25519Identity.generate()
        let others = (0..<20).map { _ in X25519Identity.generate().recipient }
        let file = try AgeFile.encrypt(SecretBytes(utf8: "a key"), to: others + [held.recipient])
        let counter = Counter()
        #expect(try AgeFile.decrypt(file, with: [Self.delegated(held, counter)]).isEqual(to: SecretBytes(utf8: "a key")))
        #expect(counter.calls.withLock { $0 } == 1 && counter.shares.withLock { $0 } == 21)
    }

    @Test func moreStanzasThanTheBoundAreRefusedBeforeAnyAgreement() throws {
        let held = X25519Identity.generate()
        let many = (0..<(X25519Identity.stanzaLimit + 1)).map { _ in X25519Identity.generate().recipient }
        let file = try AgeFile.encrypt(SecretBytes(utf8: "a key"), to: many)
        let counter = Counter()
        let error = try #require(throws: AgeError.self) { try AgeFile.decrypt(file, with: [Self.delegated(held, counter)]) }
        #expect(error.kind == .unsupported && counter.calls.withLock { $0 } == 0)
    }
}
