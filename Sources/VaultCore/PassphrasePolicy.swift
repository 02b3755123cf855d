/// How long a new vault passphrase should be.
public enum PassphrasePolicy {
    /// What to say of a new passphrase too short to resist guessing well (characters are
    /// counted, not bytes); nil when it is long enough. A warning, never a refusal.
    public static func weakness(_ passphrase: SecretBytes) -> String? {
        // Counted in place: filtering would copy the passphrase into an ordinary array.
        let characters = passphrase.withUnsafeBytes { bytes in
            bytes.reduce(0) { count, byte in byte & 0xC0 != 0x80 ? count + 1 : count }
        }
        return characters < 12 ? "the passphrase is shorter than 12 characters; a longer one resists guessing far better" : nil
    }
}
