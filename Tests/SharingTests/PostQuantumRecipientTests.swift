import AgeFormat
import Sharing
import Testing
import VaultCore

@Suite struct PostQuantumRecipientTests {
    static let tag = "age1tag1qt8lw0ual6avlwmwatk888yqnmdamm7xfd0wak53ut6elz5c4swx2yqdj4e"

    @Test func hybridAndTaggedRecipientsParseWithLabelsAndSayWhetherTheyArePostQuantum() throws {
        let hybrid = HybridIdentity.generate().recipient.text
        let parsed = try RecipientList.parse(hybrid + "=carol", origin: "--to")
        #expect(parsed.text == hybrid && parsed.label == "carol" && parsed.recipient.isPostQuantum)
        let tag = try RecipientList.parse(Self.tag, origin: "--to")
        #expect(tag.text == Self.tag && !tag.recipient.isPostQuantum)
        let list = try RecipientList.parseFile("# carol\n\(hybrid)\n# yubikey\n\(Self.tag)\n", path: "team.txt")
        #expect(list.map(\.label) == ["carol", "yubikey"])
        let broken = try #require(throws: SharingError.self) { try RecipientList.parse(String(hybrid.dropLast()), origin: "--to") }
        #expect(broken == .badRecipient("--to: not a valid age recipient (a character is wrong or missing)"))
    }

    @Test func anIdentityLineIsClassicOrHybrid() throws {
        let hybrid = HybridIdentity.generate()
        let classic = X25519Identity.generate()
        #expect(IdentityLine.parse(hybrid.encoded)?.recipientText == hybrid.recipient.text)
        #expect(IdentityLine.parse(classic.encoded)?.recipientText == classic.recipient.text)
        #expect(IdentityLine.parse(SecretBytes(utf8: "AGE-SECRET-KEY-PQ-1QQQQ")) == nil)
    }
}
