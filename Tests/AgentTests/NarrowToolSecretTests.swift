@testable import Agent
import Testing
import VaultCore

/// The secrets' summaries and changes over the socket.
@Suite struct NarrowToolSecretTests {
    @Test func summariesRoundTripWithoutValues() {
        let summaries = [ToolSecretSummary(name: "github", masked: "ghp_…abcd", bytes: 40, created: 1, updated: 2, lastUsed: 3, usedBy: "mcp github",
                                           earlier: [.init(masked: "ghp_…0000", retired: 2, set: 1)]),
                         ToolSecretSummary(name: "pem", masked: "****", bytes: 900, created: 1, updated: 1, lastUsed: 0, usedBy: "", earlier: [])]
        #expect(NarrowCoding.decodeToolSecretSummaries(NarrowCoding.encode(summaries)) == summaries)
        #expect(NarrowCoding.decodeToolSecretSummaries(NarrowCoding.encode(summaries) + [0]) == nil)
    }

    @Test func everySecretChangeTravels() throws {
        let changes: [ToolSecretChange] = [.set(name: "a", value: SecretBytes(utf8: "value"), now: 5, usedBy: "tool"), .remove(name: "a"),
                                           .rollBack(name: "a", now: 6), .rename(from: "a", to: "b")]
        for change in changes {
            var message = AgentMessage(code: AgentProtocol.Operation.change.rawValue)
            NarrowCoding.add(.secret(change), to: &message)
            guard case .secret(let decoded) = try #require(NarrowCoding.change(in: message)) else {
                Issue.record("not a secret change")
                return
            }
            switch (change, decoded) {
            case (.set(let n1, let v1, let t1, let u1), .set(let n2, let v2, let t2, let u2)): #expect(n1 == n2 && v1.isEqual(to: v2) && t1 == t2 && u1 == u2)
            case (.remove(let n1), .remove(let n2)): #expect(n1 == n2)
            case (.rollBack(let n1, let t1), .rollBack(let n2, let t2)): #expect(n1 == n2 && t1 == t2)
            case (.rename(let f1, let t1), .rename(let f2, let t2)): #expect(f1 == f2 && t1 == t2)
            default: Issue.record("another change came out")
            }
        }
    }

    @Test func refusalsComeBackAsTheyWere() {
        for error in [VaultError.secretNotFound(name: "a"), .secretExists(name: "b"), .noEarlierSecretValue(name: "c"),
                      .invalidSecret(name: "d", reason: "it holds a control character")] {
            var response = AgentMessage(code: 1)
            NarrowCoding.add(refusal: error, to: &response)
            #expect(NarrowCoding.refusal(in: response) == error)
        }
    }
}
