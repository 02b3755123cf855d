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
        #expect(broken == .badRecipient("--to: not a valid age1pq1… recipient: a character is wrong or missing, or it holds no valid ML-KEM-768 + X25519 key"))
    }

    /// Valid Bech32 with age's own prefixes but a key of the wrong length: refused as what they
    /// are, never read as the recipient of a plugin called `pq`, `tag` or `tagpq`.
    @Test func aMalformedPostQuantumOrTaggedRecipientIsNeverAPlugins() throws {
        for (text, prefix, key) in [("age1pq1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqy408zz", "age1pq1", "ML-KEM-768 + X25519"),
                                    ("age1tag1qgqqqqqqqqqqqqqqqq0vmlkd", "age1tag1", "P-256"),
                                    ("age1tagpq1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqpn7f23", "age1tagpq1", "ML-KEM-768 + P-256")] {
            #expect(AgePluginName.ofRecipient(text) == nil, "\(prefix) names no plugin")
            let refused = try #require(throws: SharingError.self) { try RecipientList.parse(text, origin: "--to") }
            #expect(refused == .badRecipient("--to: not a valid \(prefix)… recipient: a character is wrong or missing, or it holds no valid \(key) key"))
        }
    }

    @Test func anIdentityLineIsClassicOrHybrid() throws {
        let hybrid = HybridIdentity.generate()
        let classic = X25519Identity.generate()
        #expect(IdentityLine.parse(hybrid.encoded)?.recipientText == hybrid.recipient.text)
        #expect(IdentityLine.parse(classic.encoded)?.recipientText == classic.recipient.text)
        #expect(IdentityLine.parse(SecretBytes(utf8: "AGE-SECRET-KEY-PQ-1QQQQ")) == nil)
    }
}
