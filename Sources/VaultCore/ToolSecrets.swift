/// A secret for another tool (an MCP server's token, a database password): any printable
/// text, kept beside the Gemini keys with its dates and earlier values (payload version 9).
public struct ToolSecret {
    /// 64 KiB: a PEM block or a service account's JSON fits.
    public static let maxBytes = 65536
    /// The longest note of which tools use it.
    public static let maxUsedByBytes = 1024

    public let name: String
    public let value: SecretBytes
    /// Unix seconds.
    public let created: Int64
    /// When the current value was set (or, after a rollback, first set).
    public let updated: Int64
    /// When the agent last handed it out; 0 for never.
    public let lastUsed: Int64
    /// Which tools use it, in words (`mcp wrap` notes the server and its config file); may be empty.
    public let usedBy: String
    /// Newest first, at most `VaultContents.retiredLimit`.
    public let previous: [RetiredSecret]
    /// The Secret Manager secret it follows (`secret set --from`, payload version 10); nil for none.
    public let link: SecretLink?
    /// Its shares sent and the sender it was imported from (`secret share`, `secret import`; payload version 10).
    public let sharing: ToolSecretSharing

    public init(name: String, value: SecretBytes, created: Int64, updated: Int64, lastUsed: Int64 = 0, usedBy: String = "",
                previous: [RetiredSecret] = [], link: SecretLink? = nil, sharing: ToolSecretSharing = ToolSecretSharing()) {
        self.link = link
        self.sharing = sharing
        self.name = name
        self.value = value
        self.created = created
        self.updated = updated
        self.lastUsed = lastUsed
        self.usedBy = usedBy
        self.previous = previous
    }

    /// Why `value` cannot be a secret, or nil when it can: 1 to 65,536 bytes of UTF-8 without
    /// control characters; with `multiline`, line feeds and tabs are allowed too (a PEM block).
    public static func problem(with value: SecretBytes, multiline: Bool) -> String? {
        guard value.count > 0 else { return "it is empty" }
        guard value.count <= maxBytes else { return "it is longer than \(maxBytes) bytes" }
        return value.withUnsafeBytes { bytes -> String? in
            guard String(validating: bytes, as: UTF8.self) != nil else { return "it is not UTF-8 text" }
            for byte in bytes where byte < 0x20 || byte == 0x7f {
                if multiline && (byte == 0x0a || byte == 0x09) { continue }
                return byte == 0x0a ? "it has more than one line (--multiline allows that)" : "it holds a control character"
            }
            return nil
        }
    }

    /// The same secret following `link` (a refresh that found the value unchanged).
    func with(link: SecretLink) -> ToolSecret {
        ToolSecret(name: name, value: value, created: created, updated: updated, lastUsed: lastUsed, usedBy: usedBy, previous: previous, link: link,
                   sharing: sharing)
    }

    /// What may be shown of it: for `secret list` and `secret history`.
    public var summary: ToolSecretSummary {
        ToolSecretSummary(name: name, masked: value.masked, bytes: value.count, created: created, updated: updated, lastUsed: lastUsed,
                          usedBy: usedBy, earlier: previous.map { .init(masked: $0.secret.masked, retired: $0.retired, set: $0.set) }, sharing: sharing)
    }
}

/// A secret without its value.
public struct ToolSecretSummary: Sendable, Equatable {
    public struct Earlier: Sendable, Equatable {
        public let masked: String
        public let retired: Int64
        public let set: Int64

        public init(masked: String, retired: Int64, set: Int64) {
            self.masked = masked
            self.retired = retired
            self.set = set
        }
    }

    public let name: String
    public let masked: String
    public let bytes: Int
    public let created: Int64
    public let updated: Int64
    public let lastUsed: Int64
    public let usedBy: String
    public let earlier: [Earlier]
    /// Its sharing state (public: serials and the pinned sender's public key).
    public let sharing: ToolSecretSharing

    public init(name: String, masked: String, bytes: Int, created: Int64, updated: Int64, lastUsed: Int64, usedBy: String, earlier: [Earlier],
                sharing: ToolSecretSharing = ToolSecretSharing()) {
        self.sharing = sharing
        self.name = name
        self.masked = masked
        self.bytes = bytes
        self.created = created
        self.updated = updated
        self.lastUsed = lastUsed
        self.usedBy = usedBy
        self.earlier = earlier
    }
}

/// A change to the secrets, carried inside `VaultChange.secret`.
public enum ToolSecretChange: Sendable {
    /// Store or replace a secret; a replaced value goes into its history. `usedBy`, when
    /// given, replaces the note of which tools use it.
    case set(name: String, value: SecretBytes, now: Int64, usedBy: String?)
    case remove(name: String)
    case rollBack(name: String, now: Int64)
    case rename(from: String, to: String)
    /// Store or replace a secret with the Secret Manager version it was fetched from (`secret set --from`).
    case link(name: String, value: SecretBytes, now: Int64, link: SecretLink)
    /// A linked secret fetched again: taken only while its link is still the one fetched at
    /// `since` (another command may have refreshed or changed it meanwhile).
    case refreshLink(name: String, value: SecretBytes, now: Int64, link: SecretLink, since: Int64)
    /// A secret imported from a share (`secret import`): its value, its sender pinned for the
    /// name and the share's serial; a link to Secret Manager ends. The import's checks come first (Sharing).
    case importShared(name: String, value: SecretBytes, now: Int64, sender: ShareSender, serial: UInt64)
}

/// A secret's sharing state: the serial of the last share sent from this vault, and (once one
/// was imported) the sender pinned for its name and the serial of the last share taken.
public struct ToolSecretSharing: Sendable, Equatable {
    public var sentSerial: UInt64
    public var sender: ShareSender?
    public var importedSerial: UInt64

    public init(sentSerial: UInt64 = 0, sender: ShareSender? = nil, importedSerial: UInt64 = 0) {
        self.sentSerial = sentSerial
        self.sender = sender
        self.importedSerial = importedSerial
    }
}

extension VaultContents {
    public var toolSecretSummaries: [ToolSecretSummary] { toolSecrets.map(\.summary) }

    public func toolSecret(named name: String) -> ToolSecret? { toolSecrets.first { $0.name == name } }

    /// Applies one change to the secrets; the contents stay as they were when it throws.
    func apply(_ change: ToolSecretChange) throws(VaultError) -> VaultChange.Outcome {
        switch change {
        case .set(let name, let value, let now, let usedBy):
            return try setToolSecret(name, value, now: now, usedBy: usedBy, link: nil)
        case .link(let name, let value, let now, let link):
            if !link.isWellFormed { throw .valueTooLarge("the Secret Manager reference of \(name)") }
            return try setToolSecret(name, value, now: now, usedBy: nil, link: link)
        case .refreshLink(let name, let value, let now, let link, let since):
            guard let old = toolSecret(named: name) else { throw .secretNotFound(name: name) }
            guard let current = old.link, current.fetched == since, current.reference == link.reference, link.isWellFormed else {
                return VaultChange.Outcome(masked: old.value.masked, replaced: false)
            }
            guard !old.value.isEqual(to: value) else {
                try putToolSecret(old.with(link: link))
                return VaultChange.Outcome(masked: old.value.masked, replaced: false)
            }
            return try setToolSecret(name, value, now: now, usedBy: nil, link: link)
        case .importShared(let name, let value, let now, let sender, let serial):
            guard (1..<KeySharing.serialLimit).contains(serial), sender.signingKey.count == 32, VaultIdentity.isValidLabel(sender.label) else {
                throw .valueTooLarge("the share of \(name)")
            }
            var sharing = toolSecret(named: name)?.sharing ?? ToolSecretSharing()
            sharing.sender = sender
            sharing.importedSerial = serial
            return try setToolSecret(name, value, now: now, usedBy: nil, link: nil, sharing: sharing)
        case .remove(let name):
            guard let old = toolSecret(named: name) else { throw .secretNotFound(name: name) }
            toolSecrets.removeAll { $0.name == name }
            return VaultChange.Outcome(masked: old.value.masked, replaced: true)
        case .rollBack(let name, let now):
            guard let old = toolSecret(named: name) else { throw .secretNotFound(name: name) }
            guard let restored = old.previous.first else { throw .noEarlierSecretValue(name: name) }
            let history = [RetiredSecret(secret: old.value, retired: now, set: old.updated)] + old.previous.dropFirst()
            try putToolSecret(ToolSecret(name: name, value: restored.secret, created: old.created, updated: max(old.created, restored.set),
                                         lastUsed: old.lastUsed, usedBy: old.usedBy, previous: Array(history.prefix(Self.retiredLimit)), link: old.link,
                                         sharing: old.sharing))
            return VaultChange.Outcome(masked: restored.secret.masked, replaced: true)
        case .rename(let from, let to):
            try Self.validateName(to)
            guard let old = toolSecret(named: from) else { throw .secretNotFound(name: from) }
            guard from == to || toolSecret(named: to) == nil else { throw .secretExists(name: to) }
            toolSecrets.removeAll { $0.name == from }
            try putToolSecret(ToolSecret(name: to, value: old.value, created: old.created, updated: old.updated, lastUsed: old.lastUsed,
                                         usedBy: old.usedBy, previous: old.previous, link: old.link, sharing: old.sharing))
            return VaultChange.Outcome(masked: old.value.masked, replaced: true)
        }
    }

    /// Stores `value` as `name`'s current value, the one it replaces into its history.
    private func setToolSecret(_ name: String, _ value: SecretBytes, now: Int64, usedBy: String?, link: SecretLink?,
                               sharing: ToolSecretSharing? = nil) throws(VaultError) -> VaultChange.Outcome {
        try Self.validateName(name)
        if let problem = ToolSecret.problem(with: value, multiline: true) { throw .invalidSecret(name: name, reason: problem) }
        if let usedBy, usedBy.utf8.count > ToolSecret.maxUsedByBytes { throw .valueTooLarge("the note of which tools use \(name)") }
        let old = toolSecret(named: name)
        let retired = old.map { [RetiredSecret(secret: $0.value, retired: now, set: $0.updated)] + $0.previous } ?? []
        try putToolSecret(ToolSecret(name: name, value: value, created: old?.created ?? now, updated: now, lastUsed: old?.lastUsed ?? 0,
                                     usedBy: usedBy ?? old?.usedBy ?? "", previous: Array(retired.prefix(Self.retiredLimit)), link: link,
                                     sharing: sharing ?? old?.sharing ?? ToolSecretSharing()))
        return VaultChange.Outcome(masked: old?.value.masked, replaced: old != nil)
    }

    /// Records the next share of `name` as sent and returns its serial (the signer saves the contents).
    public func takeNextSecretShareSerial(_ name: String) throws(VaultError) -> UInt64 {
        guard let old = toolSecret(named: name) else { throw .secretNotFound(name: name) }
        var sharing = old.sharing
        guard sharing.sentSerial + 1 < KeySharing.serialLimit else { throw .valueTooLarge("the share serial of \(name)") }
        sharing.sentSerial += 1
        try putToolSecret(ToolSecret(name: name, value: old.value, created: old.created, updated: old.updated, lastUsed: old.lastUsed,
                                     usedBy: old.usedBy, previous: old.previous, link: old.link, sharing: sharing))
        return sharing.sentSerial
    }

    /// Notes when secrets were last handed out (the agent's record).
    public func recordToolSecretUse(_ name: String, at time: Int64) {
        guard let old = toolSecret(named: name), time > old.lastUsed else { return }
        try? putToolSecret(ToolSecret(name: name, value: old.value, created: old.created, updated: old.updated, lastUsed: time,
                                      usedBy: old.usedBy, previous: old.previous, link: old.link, sharing: old.sharing))
    }

    /// Inserts or replaces, keeping byte order of names.
    private func putToolSecret(_ secret: ToolSecret) throws(VaultError) {
        if let index = toolSecrets.firstIndex(where: { $0.name == secret.name }) {
            toolSecrets[index] = secret
            return
        }
        guard toolSecrets.count < Int(UInt16.max) else { throw .valueTooLarge("the vault (65535 secrets at most)") }
        let position = toolSecrets.firstIndex { !$0.name.utf8.lexicographicallyPrecedes(secret.name.utf8) } ?? toolSecrets.count
        toolSecrets.insert(secret, at: position)
    }

    // MARK: Payload version 9's last section

    /// u16 count, then per secret (in byte order of names): name (u16 length), value (u32
    /// length), created, updated and last used (i64 each), which tools use it (u16 length), a
    /// u8 count of earlier values, each a value (u32 length), when it was replaced and when set (i64).
    /// Version 10 adds to each a u8 (1 when linked to Secret Manager, else 0), then the link:
    /// the reference (u16 length), the version (u64) and the fetch time (i64); then the serial of
    /// the last share sent (u64), a u8 (1 when a share was imported), and then the pinned
    /// sender's label (u16 length), signing key (32 bytes) and the serial imported (u64).
    func encodedToolSecretsLength() -> Int {
        2 + toolSecrets.map { secret in
            2 + secret.name.utf8.count + 4 + secret.value.count + 24 + 2 + secret.usedBy.utf8.count + 1
                + secret.previous.map { 4 + $0.secret.count + 16 }.reduce(0, +) + 1 + (secret.link.map { 2 + $0.reference.utf8.count + 16 } ?? 0)
                + 8 + 1 + (secret.sharing.sender.map { 2 + $0.label.utf8.count + 32 + 8 } ?? 0)
        }.reduce(0, +)
    }

    func writeToolSecrets(_ writer: inout SecretWriter) {
        writer.append(UInt16(toolSecrets.count))
        for secret in toolSecrets {
            writer.appendField(secret.name)
            writer.append(UInt32(secret.value.count))
            secret.value.withUnsafeBytes { writer.append($0) }
            writer.append(secret.created)
            writer.append(secret.updated)
            writer.append(secret.lastUsed)
            writer.appendField(secret.usedBy)
            writer.append(UInt8(secret.previous.count))
            for old in secret.previous {
                writer.append(UInt32(old.secret.count))
                old.secret.withUnsafeBytes { writer.append($0) }
                writer.append(old.retired)
                writer.append(old.set)
            }
            writer.append(UInt8(secret.link == nil ? 0 : 1))
            if let link = secret.link {
                writer.appendField(link.reference)
                writer.append(link.version)
                writer.append(link.fetched)
            }
            writer.append(secret.sharing.sentSerial)
            writer.append(UInt8(secret.sharing.sender == nil ? 0 : 1))
            if let sender = secret.sharing.sender {
                writer.appendField(sender.label)
                sender.signingKey.withUnsafeBytes { writer.append($0) }
                writer.append(secret.sharing.importedSerial)
            }
        }
    }

    static func readToolSecrets(_ reader: inout ByteReader, version payloadVersion: UInt8, broken: (String) -> VaultError) throws -> [ToolSecret] {
        var secrets: [ToolSecret] = []
        for _ in 0..<Int(try reader.read(UInt16.self)) {
            let name = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            guard (try? validateName(name)) != nil else { throw broken("a secret has an invalid name") }
            if let last = secrets.last, !last.name.utf8.lexicographicallyPrecedes(name.utf8) { throw broken("secret names are duplicated or not in byte order") }
            let value = try reader.readSecret(Int(try reader.read(UInt32.self)))
            guard ToolSecret.problem(with: value, multiline: true) == nil else { throw broken("secret '\(name)' is empty, too long or not printable text") }
            let created = try reader.read(Int64.self), updated = try reader.read(Int64.self), lastUsed = try reader.read(Int64.self)
            let usedBy = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            guard usedBy.utf8.count <= ToolSecret.maxUsedByBytes else { throw broken("secret '\(name)' has too long a note of its tools") }
            let count = Int(try reader.read(UInt8.self))
            guard count <= retiredLimit else { throw broken("secret '\(name)' has \(count) earlier values; writers keep at most \(retiredLimit)") }
            var previous: [RetiredSecret] = []
            for _ in 0..<count {
                let old = try reader.readSecret(Int(try reader.read(UInt32.self)))
                guard ToolSecret.problem(with: old, multiline: true) == nil else { throw broken("an earlier value of secret '\(name)' is empty, too long or not text") }
                previous.append(RetiredSecret(secret: old, retired: try reader.read(Int64.self), set: try reader.read(Int64.self)))
            }
            let link = payloadVersion >= 10 ? try readToolSecretLink(&reader, name: name, broken: broken) : nil
            let sharing = payloadVersion >= 10 ? try readToolSecretSharing(&reader, name: name, broken: broken) : ToolSecretSharing()
            secrets.append(ToolSecret(name: name, value: value, created: created, updated: updated, lastUsed: lastUsed, usedBy: usedBy, previous: previous,
                                      link: link, sharing: sharing))
        }
        return secrets
    }
}

extension VaultContents {
    static func readToolSecretLink(_ reader: inout ByteReader, name: String, broken: (String) -> VaultError) throws -> SecretLink? {
        switch try reader.read(UInt8.self) {
        case 0: return nil
        case 1:
            let link = SecretLink(reference: try reader.readUTF8(Int(try reader.read(UInt16.self))), version: try reader.read(UInt64.self),
                                  fetched: try reader.read(Int64.self))
            guard link.isWellFormed else { throw broken("the Secret Manager link of secret '\(name)' is malformed") }
            return link
        default: throw broken("secret '\(name)' has an unknown link marker")
        }
    }

    static func readToolSecretSharing(_ reader: inout ByteReader, name: String, broken: (String) -> VaultError) throws -> ToolSecretSharing {
        var sharing = ToolSecretSharing(sentSerial: try reader.read(UInt64.self))
        switch try reader.read(UInt8.self) {
        case 0: break
        case 1:
            let label = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            let key = try reader.readBytes(32)
            guard VaultIdentity.isValidLabel(label) else { throw broken("the sender of secret '\(name)' has a malformed label") }
            sharing.sender = ShareSender(signingKey: key, label: label)
            sharing.importedSerial = try reader.read(UInt64.self)
        default: throw broken("secret '\(name)' has an unknown sender marker")
        }
        guard sharing.sentSerial < KeySharing.serialLimit, sharing.importedSerial < KeySharing.serialLimit else { throw broken("a share serial of secret '\(name)' is out of range") }
        return sharing
    }
}

extension SecretBytes {
    /// Runs `body` with the bytes of every secret at once (exec builds one environment from several).
    public static func withAllBytes<R, E: Error>(_ secrets: [SecretBytes], _ body: ([UnsafeRawBufferPointer]) throws(E) -> R) throws(E) -> R {
        func nest(_ index: Int, _ collected: [UnsafeRawBufferPointer]) throws(E) -> R {
            guard index < secrets.count else { return try body(collected) }
            return try secrets[index].withUnsafeBytes { bytes throws(E) in try nest(index + 1, collected + [bytes]) }
        }
        return try nest(0, [])
    }
}
