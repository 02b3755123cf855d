public import VaultCore

/// Which files a share goes to, and who each is for: `-o FILE` is one file for everyone named;
/// `-o FOLDER/` or a pattern with `{label}` is one file per recipient, so nobody's file opens
/// for another. Each file's share names (and signs) only its own recipients.
public enum ShareFiles {
    public struct Target {
        public let path: String
        public let recipients: [NamedRecipient]
    }

    public static let labelPlaceholder = "{label}"

    /// The files `-o output` means for `recipients`. `isFolder`: output names a folder, where each
    /// recipient gets `NAME-LABEL.age`.
    public static func targets(_ output: String, isFolder: Bool, name: String, recipients: [NamedRecipient]) throws(SharingError) -> [Target] {
        let pattern: String
        if isFolder {
            pattern = (output.hasSuffix("/") ? output : output + "/") + name + "-" + labelPlaceholder + ".age"
        } else if output.contains(labelPlaceholder) {
            pattern = output
        } else {
            return [Target(path: output, recipients: recipients)]
        }
        var seen: [String: String] = [:]
        var targets: [Target] = []
        for recipient in recipients {
            let path = pattern.replacing(labelPlaceholder, with: fileLabel(recipient))
            if let other = seen[path] {
                throw .badRecipient("\(other) and \(recipient.text) would both be written to \(path): give them labels that differ (--to age1…=NAME)")
            }
            seen[path] = recipient.text
            targets.append(Target(path: path, recipients: [recipient]))
        }
        return targets
    }

    /// A recipient's part of a file name: its label with anything but letters, digits, `.`, `_`,
    /// `@` and `-` made `_`; without a usable label, the start of its key.
    public static func fileLabel(_ recipient: NamedRecipient) -> String {
        let safe = String(recipient.label.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "._@-".unicodeScalars.contains(scalar)) ? Character(scalar) : "_"
        })
        if !safe.isEmpty, !safe.allSatisfy({ $0 == "." }), !safe.hasPrefix("-") { return safe }
        if recipient.text.hasPrefix("age1") { return String(recipient.text.prefix(16)) }
        return "ssh-" + Sodium.fingerprint(recipient.text, bytes: 4)
    }
}

extension KeySharing {
    /// The recorded files and the recipients each was written for, by path.
    public var files: [(path: String, recipients: [String])] {
        var byPath: [String: [String]] = [:]
        for entry in recipients where !entry.path.isEmpty {
            if !(byPath[entry.path]?.contains(entry.recipient) ?? false) { byPath[entry.path, default: []].append(entry.recipient) }
        }
        return byPath.keys.sorted().map { ($0, byPath[$0]!) }
    }
}
