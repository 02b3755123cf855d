@testable import Agent
import Testing
import VaultCore

/// The key summaries and the rotation change carry each value's Google key over the socket.
@Suite struct NarrowGoogleTests {
    let record = GoogleKeyRecord(resource: "projects/1/locations/global/keys/new", serviceAccount: "bot@p.iam.gserviceaccount.com")
    let old = GoogleKeyRecord(resource: "projects/1/locations/global/keys/old", serviceAccount: "")

    @Test func summariesKeepTheirGoogleKeys() throws {
        let summaries = [KeySummary(name: "default", masked: "AQ.A…wxyz", kind: .auth, created: 1, updated: 2, lastUsed: 0,
                                    earlier: [KeySummary.Earlier(masked: "AQ.B…abcd", kind: .auth, retired: 2, google: old),
                                              KeySummary.Earlier(masked: "AIza…0000", kind: .standard, retired: 1)],
                                    google: record),
                         KeySummary(name: "plain", masked: "x", kind: .other, created: 1, updated: 1, lastUsed: 0, earlier: [])]
        #expect(NarrowCoding.decodeSummaries(NarrowCoding.encode(summaries)) == summaries)
    }

    @Test func summariesKeepALinksRotation() throws {
        var linked = KeySummary(name: "lab", masked: "AQ.A…wxyz", kind: .auth, created: 1, updated: 2, lastUsed: 0, earlier: [], google: record)
        linked.link = SecretLink(reference: "gsm://projects/p/secrets/s", version: 8, fetched: 3,
                                 rotation: LinkedRotation(previousVersion: 7, retireKey: old.resource, finishAfter: 900))
        var plain = linked
        plain.link = SecretLink(reference: "gsm://projects/p/secrets/s", version: 8, fetched: 3)
        #expect(NarrowCoding.decodeSummaries(NarrowCoding.encode([linked, plain])) == [linked, plain])
    }

    @Test func aMalformedGoogleNameIsRefused() {
        var out = ByteWriter()
        out.u32(1); out.text("k"); out.text("m"); out.kind(.auth); out.i64(1); out.i64(1); out.i64(0)
        out.text("not/a/resource"); out.text(""); out.u8(0)
        #expect(NarrowCoding.decodeSummaries(out.bytes) == nil)
    }

    @Test func aRotationTravelsWithBothRecords() throws {
        var message = AgentMessage(code: AgentProtocol.Operation.change.rawValue)
        NarrowCoding.add(.rotateKey(name: "default", secret: SecretBytes(utf8: "AQ.value"), now: 5, google: record, replacedGoogle: old), to: &message)
        guard case .rotateKey(let name, let secret, let now, let google, let replaced) = try #require(NarrowCoding.change(in: message)) else {
            Issue.record("not a rotation")
            return
        }
        #expect(name == "default" && now == 5 && google == record && replaced == old)
        #expect(secret.withUnsafeBytes { Array($0) } == Array("AQ.value".utf8))
    }

    /// A linked key's rotation, finish and undo carry the link with its rotation record.
    @Test func aLinkedRotationTravelsWithItsLink() throws {
        let link = SecretLink(reference: "gsm://projects/p/secrets/s", version: 8, fetched: 50,
                              rotation: LinkedRotation(previousVersion: 7, retireKey: old.resource, finishAfter: 950))
        var message = AgentMessage(code: AgentProtocol.Operation.change.rawValue)
        NarrowCoding.add(.rotateLinkedKey(name: "lab", secret: SecretBytes(utf8: "AQ.value"), now: 50, google: record, replacedGoogle: nil, link: link), to: &message)
        guard case .rotateLinkedKey(let name, _, let now, let google, let replaced, let carried) = try #require(NarrowCoding.change(in: message)) else {
            Issue.record("not a linked rotation")
            return
        }
        #expect(name == "lab" && now == 50 && google == record && replaced == nil && carried == link)
        var finish = AgentMessage(code: AgentProtocol.Operation.change.rawValue)
        NarrowCoding.add(.finishLinkedRotation(name: "lab", version: 7), to: &finish)
        guard case .finishLinkedRotation("lab", 7) = try #require(NarrowCoding.change(in: finish)) else {
            Issue.record("not a finish")
            return
        }
        var undo = AgentMessage(code: AgentProtocol.Operation.change.rawValue)
        let back = SecretLink(reference: link.reference, version: 9, fetched: 60)
        NarrowCoding.add(.rollBackLinked(name: "lab", now: 60, link: back), to: &undo)
        guard case .rollBackLinked("lab", 60, let undone) = try #require(NarrowCoding.change(in: undo)) else {
            Issue.record("not an undo")
            return
        }
        #expect(undone == back && undone.rotation == nil)
        // A key to retire that is no API Keys name (it would go into a URL at Google) is not taken.
        var hostile = AgentMessage(code: AgentProtocol.Operation.change.rawValue)
        NarrowCoding.add(.rotateLinkedKey(name: "lab", secret: SecretBytes(utf8: "AQ.value"), now: 50, google: record, replacedGoogle: nil,
                                          link: SecretLink(reference: link.reference, version: 8, fetched: 50,
                                                           rotation: LinkedRotation(previousVersion: 7, retireKey: "../../v1/evil", finishAfter: 1))), to: &hostile)
        #expect(NarrowCoding.change(in: hostile) == nil)
    }
}
