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

    /// A plugin recipient is judged after the wrap, by its labels: never refused before.
    @Test func aPluginRecipientWaitsForItsLabels() throws {
        let plugin = try RecipientList.parse("age1gvtest10v82n0exuux3pv6jcha3699eueptnfsn89tphuj05rz0s6cwwvtsl4cj3k", origin: "--to").recipient
        let named = NamedRecipient(recipient: plugin, label: "bob's yubikey")
        try RecipientStrength.requirePostQuantum([hybrid, named])
        let strength = ShareStrength(postQuantumOnly: true, recipients: [hybrid, named])
        // Wrapped without the `postquantum` label (this one never ran): classic, named with its label.
        #expect(throws: SharingError.notPostQuantum(["bob's yubikey (\(plugin.text))"])) {
            try strength.check(wrapped: [hybrid.recipient, plugin, plugin])
        }
        #expect(try strength.check(wrapped: [hybrid.recipient]) == nil)
        let warning = try ShareStrength(postQuantumOnly: false, recipients: [hybrid, named]).check(wrapped: [hybrid.recipient, plugin])
        #expect(warning?.contains("bob's yubikey") == true)
    }
}
