public import AgeFormat
public import VaultCore

extension RecipientList {
    /// age's hybrid post-quantum recipient (`age1pq1…`) and the tagged hardware recipients
    /// (`age1tag1…`, `age1tagpq1…`); nil for any other text.
    static func postQuantumOrTagged(_ text: String) -> (any AgeRecipient)? {
        if text.hasPrefix("age1pq1") { return HybridRecipient(parsing: text) }
        if text.hasPrefix("age1tagpq1") { return MLKEM768P256TagRecipient(parsing: text) }
        if text.hasPrefix("age1tag1") { return P256TagRecipient(parsing: text) }
        return nil
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
