public import VaultCore

/// How age plugins are named (age-plugin.md): `age1NAME1…` recipients, `AGE-PLUGIN-NAME-1…`
/// identities, and the program `age-plugin-NAME` that handles both.
public enum AgePluginName {
    /// age-plugin.md's NAME: one or more of ALPHA, DIGIT, `-`, `_`, `.`, `+`. Never a path.
    public static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && name.utf8.allSatisfy { byte in
            (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || [45, 95, 46, 43].contains(byte)
        }
    }

    /// The program that speaks for plugin `name` (lowercase, as the HRP is).
    public static func program(_ name: String) -> String { "age-plugin-" + name.lowercased() }

    /// The plugin named by a recipient `age1NAME1…` (lowercase), or nil for a native `age1…`
    /// recipient and anything that is not valid Bech32 with a valid NAME.
    public static func ofRecipient(_ text: String) -> String? {
        guard let (hrp, _) = Bech32.decode(Array(text.utf8)), hrp.hasPrefix("age1"), hrp == hrp.lowercased() else { return nil }
        let name = String(hrp.dropFirst(4))
        return isValid(name) && !nativeNames.contains(name) ? name : nil
    }

    /// age's own recipients (`NativeRecipientKind`): a malformed one names no plugin.
    static let nativeNames = Set(NativeRecipientKind.all.map { String($0.hrp.dropFirst(4)) })

    /// The plugin named by an identity `AGE-PLUGIN-NAME-1…` (lowercase), or nil.
    public static func ofIdentity(_ text: SecretBytes) -> String? {
        var characters = text.withUnsafeBytes { Array($0) }
        defer { SecretBytes.wipe(&characters) }
        guard let (hrp, _) = Bech32.decode(characters), hrp == hrp.uppercased(),
              hrp.hasPrefix("AGE-PLUGIN-"), hrp.hasSuffix("-"), hrp.count > "AGE-PLUGIN--".count else { return nil }
        let name = String(hrp.dropFirst("AGE-PLUGIN-".count).dropLast())
        return isValid(name) ? name.lowercased() : nil
    }

    /// The plugin's default identity, `AGE-PLUGIN-NAME-1` with no data (age's `-j NAME`): the
    /// plugin finds its key itself (a YubiKey's slot, the TPM).
    public static func defaultIdentity(_ name: String) -> SecretBytes {
        var text = Bech32.encode(hrp: "AGE-PLUGIN-\(name.uppercased())-", [], uppercase: true)
        return SecretBytes(taking: &text)
    }
}

/// The plugin protocol's framing: a command is an age stanza, `-> COMMAND ARG…` and its body in
/// canonical unpadded base64, 64 columns a line, the last line shorter (maybe empty).
public enum AgePluginWire {
    public static let bodyColumns = 64

    /// One command's bytes; the caller wipes them when the body is secret.
    public static func encode(_ command: String, _ arguments: [String], body: UnsafeRawBufferPointer) -> [UInt8] {
        var encoded = StrictBase64.encodedBytes(body)
        defer { SecretBytes.wipe(&encoded) }
        var text = Array((["->", command] + arguments).joined(separator: " ").utf8) + [10]
        // Room for all of it at once: a growing array would leave copies of a secret body behind.
        text.reserveCapacity(text.count + encoded.count + encoded.count / bodyColumns + 2)
        var start = 0
        while encoded.count - start >= bodyColumns {
            text += encoded[start..<(start + bodyColumns)]
            text.append(10)
            start += bodyColumns
        }
        text += encoded[start...]
        text.append(10)
        return text
    }

    public static func encode(_ command: String, _ arguments: [String], body: [UInt8] = []) -> [UInt8] {
        body.withUnsafeBytes { encode(command, arguments, body: $0) }
    }

    /// A body line's bytes, or nil unless it is canonical base64 of at most 64 columns.
    public static func decodeLine(_ line: some Collection<UInt8>) -> [UInt8]? {
        line.count <= bodyColumns ? StrictBase64.decode(line) : nil
    }

    /// An argument's bytes (confirm's button texts), or nil unless canonical base64.
    public static func decodeArgument(_ argument: String) -> [UInt8]? { StrictBase64.decode(Array(argument.utf8)) }

    /// A stanza argument: 1 or more of the printable ASCII characters but space.
    public static func isArgument(_ word: some Collection<UInt8>) -> Bool {
        !word.isEmpty && word.allSatisfy { $0 >= 33 && $0 <= 126 }
    }
}

/// A recipient whose stanzas are made elsewhere, several recipients at once: `AgeFile.encrypt`
/// wraps all the recipients that share a `batchKey` in one call (one run of their plugin).
public protocol AgeBatchRecipient: AgeRecipient {
    var batchKey: String { get }
    /// The stanzas wrapping `fileKey` to every one of `recipients` (all of this `batchKey`), and
    /// the label set they carry (age-plugin.md's `labels`; empty when none is said).
    func wrap(_ fileKey: SecretBytes, together recipients: [any AgeBatchRecipient]) throws(AgeError) -> (stanzas: [AgeStanza], labels: Set<String>)
}

extension AgeFile {
    /// The label set a native recipient's stanza carries without saying so (age-plugin.md):
    /// X25519's and ssh-ed25519's are empty, a post-quantum one's is `postquantum`. The one
    /// place a native recipient's labels are chosen.
    static func implicitLabels(of recipient: any AgeRecipient) -> Set<String> { recipient.isPostQuantum ? [postQuantumLabel] : [] }

    static let postQuantumLabel = "postquantum"

    /// Every recipient's stanzas: native ones one by one, batch ones one call per batch. A plugin
    /// that labels its stanzas demands that every other stanza carry the same labels
    /// (age-plugin.md): a `postquantum` one goes only with `age1pq1…` and other post-quantum
    /// plugins. Native recipients and unlabelled plugins demand nothing: a classic and
    /// post-quantum mix of them gets the share's warning instead (Docs/sharing.md).
    static func wrapAll(_ fileKey: SecretBytes, to recipients: [any AgeRecipient]) throws(AgeError) -> [AgeStanza] {
        var stanzas: [AgeStanza] = []
        var batches: [(key: String, members: [any AgeBatchRecipient])] = []
        var labelSets: [(who: String, labels: Set<String>, demanded: Bool)] = []
        for recipient in recipients {
            guard let batch = recipient as? any AgeBatchRecipient else {
                stanzas.append(try recipient.wrap(fileKey))
                labelSets.append((recipient.text, implicitLabels(of: recipient), false))
                continue
            }
            if let index = batches.firstIndex(where: { $0.key == batch.batchKey }) { batches[index].members.append(batch) } else { batches.append((batch.batchKey, [batch])) }
        }
        for batch in batches {
            let wrapped = try batch.members[0].wrap(fileKey, together: batch.members)
            stanzas += wrapped.stanzas
            labelSets.append((batch.key, wrapped.labels, !wrapped.labels.isEmpty))
        }
        if let first = labelSets.first(where: \.demanded), let other = labelSets.first(where: { $0.labels != first.labels }) {
            let shown = { (set: Set<String>) in set.isEmpty ? "none" : set.sorted().joined(separator: " ") }
            throw AgeError(.plugin, "the recipients cannot share one file: \(first.who) has the labels \(shown(first.labels)) and \(other.who) has \(shown(other.labels))"
                           + " (age-plugin.md: every stanza of a file carries the same labels)")
        }
        return stanzas
    }
}
