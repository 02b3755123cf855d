import AgeFormat
@testable import GemvaultCLI
import Sharing
import Testing
import VaultCore

/// How `key share` records who a key went to, and where.
@Suite struct ShareRecordTests {
    let bob = X25519Identity.generate().recipient.text
    let carol = X25519Identity.generate().recipient.text

    func named(_ text: String, _ label: String = "") throws -> NamedRecipient {
        try RecipientList.parse(label.isEmpty ? text : "\(text) \(label)", origin: "test")
    }

    @Test func aSecondFileForOneRecipientIsKeptBesideTheFirst() throws {
        var record = KeySharing()
        record.add(try named(bob), path: "/shared/lab.age", now: 1)
        record.add(try named(bob), path: "/shared/lab-copy.age", now: 2)
        record.add(try named(bob), path: "/shared/lab.age", now: 3)
        #expect(record.recipients.map(\.path) == ["/shared/lab.age", "/shared/lab-copy.age"])
        #expect(record.recipientCount == 1)
        record.add(try named(carol), path: nil, now: 4)
        #expect(record.recipientCount == 2)
    }

    @Test func aShareToStdoutGainsItsFileLaterAndAddsNoEntry() throws {
        var record = KeySharing()
        record.add(try named(bob), path: nil, now: 1)
        record.add(try named(bob), path: nil, now: 2)
        #expect(record.recipients.map(\.path) == [""])
        record.add(try named(bob), path: "/shared/lab.age", now: 3)
        #expect(record.recipients.map(\.path) == ["/shared/lab.age"])
        #expect(record.recipients[0].added == 1)
    }
}
