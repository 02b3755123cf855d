public import AgeFormat
import AgePlugins
import VaultCore

/// A recipient as the user named it, parsed.
public struct NamedRecipient {
    public let recipient: any AgeRecipient
    /// The recipient's canonical text (`age1…`, or `ssh-ed25519 AAAA…` without a comment).
    public var text: String { recipient.text }
    /// An ssh key's comment, or the comment line above it in a recipients file; may be empty.
    public let label: String

    public init(recipient: any AgeRecipient, label: String) {
        self.recipient = recipient
        self.label = label
    }
}

/// The recipient syntaxes `key share` takes: age's own (`age1…`, post-quantum `age1pq1…`, tagged
/// `age1tag1…` and `age1tagpq1…`), an `ssh-ed25519 …` line, and
/// age's recipients file (one per line, `#` comments, blank lines).
public enum RecipientList {
    /// A comment kept as a recipient's label only when it is one a terminal may show.
    static func label(_ text: String) -> String { VaultIdentity.isValidLabel(text) ? text : "" }

    /// One `--to` value that is not a path: `age1…` (`age1…=LABEL` names it) or an `ssh-ed25519 …`
    /// line (its comment names it).
    public static func parse(_ value: String, origin: String) throws(SharingError) -> NamedRecipient {
        let trimmed = value.stripped(of: " \t\r")
        if trimmed.hasPrefix("age1"), let equals = trimmed.firstIndex(of: "=") {
            let given = String(trimmed[trimmed.index(after: equals)...])
            guard VaultIdentity.isValidLabel(given) else { throw .badRecipient("\(origin): the label after '=' is empty or has control characters") }
            let recipient = try parse(String(trimmed[..<equals]), origin: origin)
            guard recipient.text.hasPrefix("age1") else { throw .badRecipient("\(origin): not an age1… recipient") }
            return NamedRecipient(recipient: recipient.recipient, label: given)
        }
        if let recipient = X25519Recipient(parsing: trimmed) { return NamedRecipient(recipient: recipient, label: "") }
        if let recipient = try postQuantumOrTagged(trimmed, origin: origin) { return NamedRecipient(recipient: recipient, label: "") }
        // `age1NAME1…`: the plugin `age-plugin-NAME` wraps to it (found on PATH when a share is written).
        if let plugin = AgePluginRecipient(parsing: trimmed) { return NamedRecipient(recipient: plugin, label: "") }
        if trimmed.hasPrefix("ssh-ed25519 "), let recipient = SSHEd25519Recipient(parsing: trimmed) {
            let words = trimmed.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            return NamedRecipient(recipient: recipient, label: words.count == 3 ? label(String(words[2])) : "")
        }
        if trimmed.hasPrefix("ssh-") { throw .badRecipient("\(origin): only ssh-ed25519 keys can receive a share, not \(trimmed.prefix { $0 != " " })") }
        if trimmed.hasPrefix("age1") { throw .badRecipient("\(origin): not a valid age recipient (a character is wrong or missing)") }
        throw .badRecipient("\(origin): not an age1… recipient or an ssh-ed25519 public key")
    }

    /// Every recipient of a recipients file's text; the first bad line stops it, named by number.
    public static func parseFile(_ text: String, path: String) throws(SharingError) -> [NamedRecipient] {
        var recipients: [NamedRecipient] = []
        var comment = ""
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.stripped(of: " \t\r")
            if trimmed.isEmpty { comment = ""; continue }
            if trimmed.hasPrefix("#") {
                comment = label(trimmed.dropFirst().stripped(of: " \t"))
                continue
            }
            let parsed = try parse(trimmed, origin: "\(path) line \(index + 1)")
            recipients.append(NamedRecipient(recipient: parsed.recipient, label: parsed.label.isEmpty ? comment : parsed.label))
            comment = ""
        }
        return recipients
    }
}

extension StringProtocol {
    func stripped(of set: String) -> String {
        let characters = Set(set)
        let start = firstIndex { !characters.contains($0) } ?? endIndex
        let end = lastIndex { !characters.contains($0) }.map { index(after: $0) } ?? start
        return String(self[start..<Swift.max(start, end)])
    }
}
