import Testing
import VaultCore

@Suite struct PassphrasePolicyTests {
    @Test func aPassphraseUnderTwelveCharactersIsWarnedAboutCountingCharactersNotBytes() {
        #expect(PassphrasePolicy.weakness(SecretBytes(utf8: "elevenchars")) != nil)
        #expect(PassphrasePolicy.weakness(SecretBytes(utf8: "twelve chars")) == nil)
        // Eleven characters, 22 bytes: still short.
        #expect(PassphrasePolicy.weakness(SecretBytes(utf8: String(repeating: "é", count: 11))) != nil)
    }
}
