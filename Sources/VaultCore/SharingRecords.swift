/// This vault's identity for sharing: an age X25519 key (recipients encrypt shares to it), from
/// payload version 11 a hybrid post-quantum seed beside it (an `age1pq1…` recipient, ML-KEM-768 and
/// X25519), and an Ed25519 signing key (shares it sends are signed with it). The secret parts stay
/// in the payload; only the public halves ever leave it.
public struct VaultIdentity {
    public static let labelLimit = 256
    /// A hybrid identity is a 32-byte seed (age.md: `AGE-SECRET-KEY-PQ-1…` encodes it).
    public static let hybridSeedBytes = 32

    public let agreementSecret: SecretBytes
    public let signingSeed: SecretBytes
    /// The hybrid identity's seed; nil for a classic (X25519 only) identity.
    public let hybridSeed: SecretBytes?
    /// What shares carry as the sender's name (`user@host` unless set).
    public let label: String

    public init(agreementSecret: SecretBytes, signingSeed: SecretBytes, hybridSeed: SecretBytes? = nil, label: String) {
        self.agreementSecret = agreementSecret
        self.signingSeed = signingSeed
        self.hybridSeed = hybridSeed
        self.label = label
    }

    /// A new identity: hybrid unless `classic`.
    public static func generate(label: String, classic: Bool = false) -> VaultIdentity {
        VaultIdentity(agreementSecret: .random(count: 32), signingSeed: .random(count: 32),
                      hybridSeed: classic ? nil : .random(count: hybridSeedBytes), label: label)
    }

    public func relabeled(_ label: String) -> VaultIdentity {
        VaultIdentity(agreementSecret: agreementSecret, signingSeed: signingSeed, hybridSeed: hybridSeed, label: label)
    }

    /// The same identity with a new hybrid seed beside its X25519 key (`identity --upgrade`).
    public func upgraded() -> VaultIdentity {
        VaultIdentity(agreementSecret: agreementSecret, signingSeed: signingSeed, hybridSeed: .random(count: Self.hybridSeedBytes), label: label)
    }

    /// Printable text without line breaks, bounded: what a share and `identity` show. Labels
    /// travel to other people's terminals, so C0 and C1 controls and the bidirectional
    /// controls (which reorder what is shown) are refused, not only escaped.
    public static func isValidLabel(_ label: String) -> Bool {
        !label.isEmpty && label.utf8.count <= labelLimit && label.unicodeScalars.allSatisfy { scalar in
            let value = scalar.value
            return value >= 0x20 && !(0x7f...0x9f).contains(value) && !(0x200e...0x200f).contains(value)
                && !(0x202a...0x202e).contains(value) && !(0x2066...0x2069).contains(value)
        }
    }
}

/// One place a shared key was sent: a recipient, and the file written for it.
public struct ShareRecipient: Sendable, Equatable {
    /// `age1…`, or `ssh-ed25519 AAAA…` without its comment.
    public let recipient: String
    /// The recipient's name as given (an ssh key's comment, a recipients file's `#` line), or empty.
    public let label: String
    /// Unix seconds.
    public let added: Int64
    /// The share file written for it, absolute; empty when it went to stdout (not followed).
    public let path: String

    public init(recipient: String, label: String, added: Int64, path: String) {
        self.recipient = recipient
        self.label = label
        self.added = added
        self.path = path
    }
}

/// Who sent an imported key: the signing key pinned by its first signed import.
public struct ShareSender: Sendable, Equatable {
    /// Ed25519 public key, 32 bytes.
    public let signingKey: [UInt8]
    public let label: String

    public init(signingKey: [UInt8], label: String) {
        self.signingKey = signingKey
        self.label = label
    }
}

/// The identity of a followed share file when it was last read: a change means a new share may be there.
public struct FollowedFile: Sendable, Equatable {
    public let path: String
    public let device: UInt64
    public let inode: UInt64
    public let size: UInt64
    /// Nanoseconds since the epoch.
    public let modified: Int64

    public init(path: String, device: UInt64, inode: UInt64, size: UInt64, modified: Int64) {
        self.path = path
        self.device = device
        self.inode = inode
        self.size = size
        self.modified = modified
    }
}

/// A key's sharing state: as a sender, who it went to; as a recipient, who sent it and what is followed.
public struct KeySharing: Sendable, Equatable {
    public static let recipientLimit = 256
    /// Serials stay below 2^53 (exact in every JSON reader).
    public static let serialLimit: UInt64 = 1 << 53

    /// The serial of the last share imported (as a recipient): a lower one is a replay.
    public var serial: UInt64
    /// The serial of the last share written (as a sender). Apart from `serial`: a recipient
    /// who shares the key on counts its own shares without touching the sender's.
    public var sentSerial: UInt64
    public var recipients: [ShareRecipient]
    /// How the key came in: nil when it was not imported; `.unsigned` for a plain age file.
    public var origin: Origin?
    public var follow: FollowedFile?
    /// When the importer last took a lower serial from the pinned sender (`key import
    /// --reset-serial`), Unix seconds; shown by `key list`.
    public var serialReset: Int64?

    public enum Origin: Sendable, Equatable {
        case unsigned
        case signed(ShareSender)
    }

    public init(serial: UInt64 = 0, sentSerial: UInt64 = 0, recipients: [ShareRecipient] = [], origin: Origin? = nil, follow: FollowedFile? = nil) {
        self.serial = serial
        self.sentSerial = sentSerial
        self.recipients = recipients
        self.origin = origin
        self.follow = follow
    }

    var isEmpty: Bool { serial == 0 && sentSerial == 0 && recipients.isEmpty && origin == nil && follow == nil }

    /// The people the key went to: one recipient has an entry per file written for it.
    public var recipientCount: Int { Set(recipients.map(\.recipient)).count }
}

extension KeySharing {
    /// The record's bytes as the payload holds them after the key's name (Docs/vault-format.md);
    /// the agent's `change` carries the same bytes.
    public func encoded() -> [UInt8] {
        var writer = ByteWriter()
        writer.append(serial)
        writer.append(sentSerial)
        switch origin {
        case nil: writer.append(UInt8(0))
        case .unsigned: writer.append(UInt8(1))
        case .signed(let sender):
            // 3: signed, and the serial was reset since, at the time that follows the label.
            writer.append(UInt8(serialReset == nil ? 2 : 3))
            writer.append(sender.signingKey)
            writer.appendField(sender.label)
            if let serialReset { writer.append(serialReset) }
        }
        writer.appendField(follow?.path ?? "")
        if let follow {
            writer.append(follow.device)
            writer.append(follow.inode)
            writer.append(follow.size)
            writer.append(follow.modified)
        }
        writer.append(UInt16(recipients.count))
        for recipient in recipients {
            writer.appendField(recipient.recipient)
            writer.appendField(recipient.label)
            writer.append(recipient.added)
            writer.appendField(recipient.path)
        }
        return writer.bytes
    }

    /// A record from `encoded()`'s bytes, nil for anything a writer never produces.
    public init?(encoded bytes: [UInt8]) {
        guard let record = try? bytes.withUnsafeBytes({ raw in
            var reader = ByteReader(raw)
            let record = try KeySharing.read(&reader)
            guard reader.remaining == 0 else { throw ByteReader.OutOfBounds() }
            return record
        }) else { return nil }
        self = record
    }

    struct Malformed: Error {
        let detail: String
    }

    static func read(_ reader: inout ByteReader) throws -> KeySharing {
        var record = KeySharing(serial: try reader.read(UInt64.self), sentSerial: try reader.read(UInt64.self))
        switch try reader.read(UInt8.self) {
        case 0: break
        case 1: record.origin = .unsigned
        case let marker where marker == 2 || marker == 3:
            let key = try reader.readBytes(32)
            let label = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            guard label.utf8.count <= VaultIdentity.labelLimit else { throw Malformed(detail: "a sender's label is too long") }
            record.origin = .signed(ShareSender(signingKey: key, label: label))
            if marker == 3 { record.serialReset = try reader.read(Int64.self) }
        default: throw Malformed(detail: "a key's share origin is not 0, 1, 2 or 3")
        }
        let followPath = try reader.readUTF8(Int(try reader.read(UInt16.self)))
        guard followPath.utf8.count <= VaultContents.pathLimit else { throw Malformed(detail: "a followed path is too long") }
        if !followPath.isEmpty {
            record.follow = FollowedFile(path: followPath, device: try reader.read(UInt64.self), inode: try reader.read(UInt64.self),
                                         size: try reader.read(UInt64.self), modified: try reader.read(Int64.self))
        }
        let count = Int(try reader.read(UInt16.self))
        guard count <= recipientLimit else { throw Malformed(detail: "a key has more than \(recipientLimit) recipients") }
        for _ in 0..<count {
            let recipient = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            let label = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            let added = try reader.read(Int64.self)
            let path = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            guard !recipient.isEmpty, recipient.utf8.count <= VaultContents.pathLimit, label.utf8.count <= VaultIdentity.labelLimit,
                  path.utf8.count <= VaultContents.pathLimit else {
                throw Malformed(detail: "a recipient record is empty or too long")
            }
            record.recipients.append(ShareRecipient(recipient: recipient, label: label, added: added, path: path))
        }
        guard !record.isEmpty else { throw Malformed(detail: "an empty sharing record") }
        return record
    }
}

extension VaultContents {
    static let pathLimit = 4096

    /// The payload's sharing section (version 6): the identity, then each key's sharing state.
    /// The identity's marker is 1 for a classic identity, 2 (version 11) when a hybrid seed follows its two keys.
    func encodedSharing() -> [UInt8] {
        var writer = ByteWriter()
        if let identity {
            writer.append(UInt8(identity.hybridSeed == nil ? 1 : 2))
            writer.appendField(identity.label)
        } else {
            writer.append(UInt8(0))
        }
        writer.append(UInt16(sharing.count))
        for name in sharing.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            writer.appendField(name)
            writer.append(sharing[name]!.encoded())
        }
        return writer.bytes
    }

    /// The section's length in the payload: its public bytes and the identity's secrets.
    func encodedSharingLength() -> Int { encodedSharing().count + (identity.map { 64 + ($0.hybridSeed?.count ?? 0) } ?? 0) }

    func writeSharing(_ writer: inout SecretWriter) {
        let section = encodedSharing()
        // The identity's secrets go between its marker and its label; the rest is public.
        writer.append(section[0])
        if let identity {
            identity.agreementSecret.withUnsafeBytes { writer.append($0) }
            identity.signingSeed.withUnsafeBytes { writer.append($0) }
            identity.hybridSeed?.withUnsafeBytes { writer.append($0) }
        }
        section[1...].withUnsafeBytes { writer.append($0) }
    }

    static func readSharing(_ reader: inout ByteReader, version: UInt8, keyNames: Set<String>, broken: (String) -> VaultError) throws
        -> (VaultIdentity?, [String: KeySharing]) {
        var identity: VaultIdentity?
        let marker = try reader.read(UInt8.self)
        switch marker {
        case 0: break
        case 1, 2:
            guard marker == 1 || version >= 11 else { throw broken("the identity marker is neither 0 nor 1") }
            let agreement = try reader.readSecret(32)
            let signing = try reader.readSecret(32)
            let hybrid = marker == 2 ? try reader.readSecret(VaultIdentity.hybridSeedBytes) : nil
            let label = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            guard VaultIdentity.isValidLabel(label) else { throw broken("the identity's label is empty, too long or has control characters") }
            identity = VaultIdentity(agreementSecret: agreement, signingSeed: signing, hybridSeed: hybrid, label: label)
        default: throw broken(version >= 11 ? "the identity marker is not 0, 1 or 2" : "the identity marker is neither 0 nor 1")
        }
        var sharing: [String: KeySharing] = [:]
        var lastName: String?
        for _ in 0..<Int(try reader.read(UInt16.self)) {
            let name = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            guard keyNames.contains(name) else { throw broken("sharing is recorded for a key the vault does not hold") }
            if let lastName, !lastName.utf8.lexicographicallyPrecedes(name.utf8) { throw broken("sharing records are duplicated or not in byte order") }
            lastName = name
            do {
                sharing[name] = try KeySharing.read(&reader)
            } catch let malformed as KeySharing.Malformed {
                throw broken(malformed.detail)
            }
        }
        return (identity, sharing)
    }
}
