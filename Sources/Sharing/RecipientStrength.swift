public import AgeFormat
import AgePlugins

/// age's rule for post-quantum recipients (age.md): a file encrypted to a post-quantum recipient
/// and to a classic one is only as strong as the classic one, since a quantum computer could open
/// it through that stanza. age itself refuses such a mix; gemvault warns, and `--pq-only` refuses.
/// A plugin recipient is post-quantum only once its plugin labels its stanzas so, which it does
/// when it wraps: it is judged then (`ShareStrength`), never before.
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

    /// `--pq-only` before the wrap: every native recipient post-quantum, or the classic ones
    /// named. Plugin recipients wait for their labels (`ShareStrength.check`).
    public static func requirePostQuantum(_ recipients: [NamedRecipient]) throws(SharingError) {
        let classic = recipients.filter { !$0.recipient.isPostQuantum && !($0.recipient is AgePluginRecipient) }
        guard classic.isEmpty else { throw .notPostQuantum(names(classic)) }
    }

    /// Each recipient as a person reads it: its label and its key (a long one shortened as an
    /// age slot's is, `AgeSlot.short`: one rule for every message).
    static func names(_ recipients: [NamedRecipient]) -> [String] {
        recipients.map { recipient in
            let key = AgeSlot.short(recipient.text)
            return recipient.label.isEmpty ? key : "\(recipient.label) (\(key))"
        }
    }
}

/// age's rule applied to a share once every file of it is wrapped, before any is written: a
/// plugin recipient then counts by the labels its plugin gave.
public struct ShareStrength: Sendable {
    public let postQuantumOnly: Bool
    /// Each recipient's label, by its text, for the messages.
    let labels: [String: String]

    public init(postQuantumOnly: Bool, recipients: [NamedRecipient]) {
        self.postQuantumOnly = postQuantumOnly
        labels = Dictionary(recipients.map { ($0.text, $0.label) }, uniquingKeysWith: { first, _ in first })
    }

    /// With `--pq-only`, refuses the share when any recipient (a plugin whose stanzas lack
    /// `postquantum`) is classic; otherwise the mixed-recipient warning, if it is mixed.
    public func check(wrapped recipients: [any AgeRecipient]) throws(SharingError) -> String? {
        var seen = Set<String>()
        let named = recipients.filter { seen.insert($0.text).inserted }.map { NamedRecipient(recipient: $0, label: labels[$0.text] ?? "") }
        guard postQuantumOnly else { return RecipientStrength.mixWarning(named) }
        let classic = named.filter { !$0.recipient.isPostQuantum }
        guard classic.isEmpty else { throw .notPostQuantum(RecipientStrength.names(classic)) }
        return nil
    }
}
