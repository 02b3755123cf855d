import AgeFormat
@testable import Agent
import Testing
import VaultCore

/// The hybrid post-quantum identity over the socket: the identity change's classic flag and the
/// upgrade travel, and operation 32's answer opens a file's stanza with the seed kept in the agent.
@Suite struct HybridIdentityOperationTests {
    private func roundTrip(_ change: VaultChange) throws -> VaultChange {
        var message = AgentMessage(code: AgentProtocol.Operation.change.rawValue)
        NarrowCoding.add(change, to: &message)
        return try #require(NarrowCoding.change(in: message))
    }

    @Test func identityChangesTravelWithTheirKind() throws {
        guard case .identity(let label, let relabel, let classic) = try roundTrip(.identity(label: "alice@lab", relabel: false, classic: true)) else {
            Issue.record("not an identity change")
            return
        }
        #expect(label == "alice@lab" && !relabel && classic)
        guard case .identity(_, _, let hybrid) = try roundTrip(.identity(label: "alice@lab", relabel: true)) else {
            Issue.record("not an identity change")
            return
        }
        #expect(!hybrid)
        guard case .upgradeIdentity = try roundTrip(.upgradeIdentity) else {
            Issue.record("not an upgrade")
            return
        }
        // A classic flag that is neither absent nor 1 is not a client's.
        var odd = AgentMessage(code: AgentProtocol.Operation.change.rawValue)
        NarrowCoding.add(.identity(label: "a", relabel: false), to: &odd)
        odd.add(.classicIdentity, number: 2)
        #expect(NarrowCoding.change(in: odd) == nil)
    }

    /// The agent's decapsulations, used as a delegated identity's, open what was wrapped to the
    /// identity's recipient: the same file key as the identity holding its seed.
    @Test func decapsulationsOpenTheFileKeyWithoutTheSeed() throws {
        let contents = VaultContents()
        try VaultChange.identity(label: "bob@lab", relabel: false).apply(to: contents)
        let vaultIdentity = try #require(contents.identity)
        let seed = try #require(vaultIdentity.hybridSeed)
        let held = try HybridIdentity(seed: seed)
        let fileKey = SecretBytes.random(count: 16)
        let stanzas = [try held.recipient.wrap(fileKey), try HybridIdentity.generate().recipient.wrap(SecretBytes.random(count: 16))]
        let delegated = DelegatedHybridIdentity(recipient: held.recipient) { encs throws(AgeError) in
            var request = AgentMessage(code: AgentProtocol.Operation.decapsulate.rawValue)
            var joined = Array(encs.joined())
            request.add(.encapsulatedKey, secret: SecretBytes(taking: &joined))
            // The agent holds the identity expanded from the seed.
            guard let answer = try? AgentServer.decapsulations(try HybridIdentity(seed: seed), request), answer.code == 0,
                  let shared = answer.secret(.hybridSharedSecret), shared.count == 32 * encs.count else { throw AgeError(.holderUnavailable, "the agent did not answer") }
            return (0..<encs.count).map { shared.view($0 * 32..<($0 + 1) * 32) }
        }
        let opened = try #require(try delegated.unwrap(stanzas.reversed()))
        #expect(opened.isEqual(to: fileKey))
    }

    private static func expanded(_ contents: VaultContents) throws -> HybridIdentity? {
        try #require(contents.identity).hybridSeed.map { seed throws(AgeError) in try HybridIdentity(seed: seed) }
    }

    @Test func decapsulateRefusesAClassicIdentityAndMalformedRequests() throws {
        let contents = VaultContents()
        try VaultChange.identity(label: "carol@lab", relabel: false, classic: true).apply(to: contents)
        var request = AgentMessage(code: AgentProtocol.Operation.decapsulate.rawValue)
        request.add(.encapsulatedKey, secret: SecretBytes(count: HybridIdentity.encapsulatedKeyBytes))
        #expect(try AgentServer.decapsulations(try Self.expanded(contents), request).code == 1)
        try VaultChange.upgradeIdentity.apply(to: contents)
        var short = AgentMessage(code: AgentProtocol.Operation.decapsulate.rawValue)
        short.add(.encapsulatedKey, secret: SecretBytes(count: HybridIdentity.encapsulatedKeyBytes - 1))
        #expect(try AgentServer.decapsulations(try Self.expanded(contents), short).code == 1)
        // A batch fits a stanza request's bound, which every connection may hold at once.
        #expect(AgentProtocol.decapsulateBatch * HybridIdentity.encapsulatedKeyBytes + 64 <= AgentProtocol.maxStanzaRequest)
        var tooMany = AgentMessage(code: AgentProtocol.Operation.decapsulate.rawValue)
        tooMany.add(.encapsulatedKey, secret: SecretBytes(count: HybridIdentity.encapsulatedKeyBytes * (AgentProtocol.decapsulateBatch + 1)))
        #expect(try AgentServer.decapsulations(try Self.expanded(contents), tooMany).code == 1)
    }
}
