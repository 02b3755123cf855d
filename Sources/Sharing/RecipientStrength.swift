/// age's rule for post-quantum recipients (age.md): a file encrypted to a post-quantum recipient
/// and to a classic one is only as strong as the classic one, since a quantum computer could open
/// it through that stanza. age itself refuses such a mix; gemvault warns, and `--pq-only` refuses.
public enum RecipientStrength {
    /// The classic (X25519, ssh-ed25519) recipients among `recipients`, when at least one other
    /// is post-quantum; empty when the share is all one kind.
    public static func weakLinks(_ recipients: [NamedRecipient]) -> [NamedRecipient] {
        guard recipients.contains(where: \.recipient.isPostQuantum) else { return [] }
        return recipients.filter { !$0.recipient.isPostQuantum }
    }

    /// The one warning line for a mixed share, naming its classic recipients; nil when none is mixed.
    public static func mixWarning(_ recipients: [NamedRecipient]) -> String? {
        let weak = weakLinks(recipients)
        guard !weak.isEmpty else { return nil }
        return "post-quantum and classic recipients mixed: the share is vulnerable to quantum computers through the classic ones, the weak link: "
            + names(weak).joined(separator: ", ") + " (--pq-only refuses them)"
    }

    /// `--pq-only`: every recipient post-quantum, or the classic ones named.
    public static func requirePostQuantum(_ recipients: [NamedRecipient]) throws(SharingError) {
        let classic = recipients.filter { !$0.recipient.isPostQuantum }
        guard classic.isEmpty else { throw .notPostQuantum(names(classic)) }
    }

    /// Each recipient as a person reads it: its label and its key (the start of a long one).
    static func names(_ recipients: [NamedRecipient]) -> [String] {
        recipients.map { recipient in
            let key = recipient.text.count > 100 ? String(recipient.text.prefix(40)) + "…" : recipient.text
            return recipient.label.isEmpty ? key : "\(recipient.label) (\(key))"
        }
    }
}
