public import AgeFormat
public import VaultCore

extension RecipientList {
    /// age's hybrid post-quantum recipient (`age1pq1…`) and the tagged hardware recipients
    /// (`age1tag1…`, `age1tagpq1…`); nil for any other text. A malformed one (a wrong length, an
    /// ML-KEM key failing the modulus check) is refused here: these prefixes are age's own, never
    /// a plugin's, so `age-plugin-pq` and the like are never looked for.
    static func postQuantumOrTagged(_ text: String, origin: String) throws(SharingError) -> (any AgeRecipient)? {
        guard let kind = NativeRecipientKind.of(text) else { return nil }
        if let recipient = kind.parse(text) { return recipient }
        throw .badRecipient("\(origin): not a valid \(kind.hrp)1… recipient: a character is wrong or missing, or it holds no valid \(kind.key) key")
    }
}

/// One line of an age identity file, as `-i FILE` reads it.
public enum IdentityLine {
    /// `AGE-SECRET-KEY-1…` (X25519) or `AGE-SECRET-KEY-PQ-1…` (hybrid post-quantum); nil otherwise.
    public static func parse(_ line: SecretBytes) -> (any AgeIdentity)? {
        if let identity = X25519Identity(parsing: line) { return identity }
        if let identity = HybridIdentity(parsing: line) { return identity }
        return nil
    }
}
