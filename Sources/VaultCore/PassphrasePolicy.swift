/// How long a new vault passphrase should be.
public enum PassphrasePolicy {
    /// What to say of a new passphrase too short to resist guessing well (characters are
    /// counted, not bytes); nil when it is long enough. A warning, never a refusal.
    public static func weakness(_ passphrase: SecretBytes) -> String? {
        let characters = passphrase.withUnsafeBytes { $0.filter { $0 & 0xC0 != 0x80 }.count }
        return characters < 12 ? "the passphrase is shorter than 12 characters; a longer one resists guessing far better" : nil
    }
}
