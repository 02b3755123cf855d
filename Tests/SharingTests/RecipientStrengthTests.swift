import AgeFormat
import Sharing
import Testing
import VaultCore

/// age's rule for a share's recipients: a mix of post-quantum and classic ones names the classic
/// ones as the weak link; `--pq-only` refuses them.
@Suite struct RecipientStrengthTests {
    private let hybrid = NamedRecipient(recipient: HybridIdentity.generate().recipient, label: "dave")
    private let classic = NamedRecipient(recipient: X25519Identity.generate().recipient, label: "carol")
    private let unnamed = NamedRecipient(recipient: X25519Identity.generate().recipient, label: "")

    @Test func aMixNamesOnlyItsClassicRecipients() throws {
        #expect(RecipientStrength.weakLinks([hybrid, classic, unnamed]).map(\.text) == [classic.text, unnamed.text])
        let warning = try #require(RecipientStrength.mixWarning([hybrid, classic, unnamed]))
        #expect(warning.contains("carol (\(classic.text))") && warning.contains(unnamed.text) && warning.contains("weak link"))
        #expect(!warning.contains(hybrid.text.prefix(40)))
    }

    @Test func oneKindAloneIsNoMix() {
        #expect(RecipientStrength.mixWarning([classic, unnamed]) == nil)
        #expect(RecipientStrength.mixWarning([hybrid]) == nil)
        #expect(RecipientStrength.mixWarning([]) == nil)
    }

    @Test func postQuantumOnlyRefusesEachClassicRecipientNamed() throws {
        #expect(throws: SharingError.notPostQuantum(["carol (\(classic.text))", unnamed.text])) {
            try RecipientStrength.requirePostQuantum([hybrid, classic, unnamed])
        }
        try RecipientStrength.requirePostQuantum([hybrid])
    }
}
