/// This vault's identity for sharing: an age X25519 key (recipients encrypt shares to it) and
/// an Ed25519 signing key (shares it sends are signed with it). Both secret parts stay in the
/// payload; only the public halves ever leave it.
public struct VaultIdentity {
    public static let labelLimit = 256

    public let agreementSecret: SecretBytes
    public let signingSeed: SecretBytes
    /// What shares carry as the sender's name (`user@host` unless set).
    public let label: String

    public init(agreementSecret: SecretBytes, signingSeed: SecretBytes, label: String) {
        self.agreementSecret = agreementSecret
        self.signingSeed = signingSeed
        self.label = label
    }

    public static func generate(label: String) -> VaultIdentity {
        VaultIdentity(agreementSecret: .random(count: 32), signingSeed: .random(count: 32), label: label)
    }

    public func relabeled(_ label: String) -> VaultIdentity {
        VaultIdentity(agreementSecret: agreementSecret, signingSeed: signingSeed, label: label)
    }

    /// Printable text without line breaks, bounded: what a share and `identity` show.
    public static func isValidLabel(_ label: String) -> Bool {
        !label.isEmpty && label.utf8.count <= labelLimit && label.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7f }
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

    /// The serial of the last share written (sender) or imported (recipient); a lower one is a rollback.
    public var serial: UInt64
    public var recipients: [ShareRecipient]
    /// How the key came in: nil when it was not imported; `.unsigned` for a plain age file.
    public var origin: Origin?
    public var follow: FollowedFile?

    public enum Origin: Sendable, Equatable {
        case unsigned
        case signed(ShareSender)
    }

    public init(serial: UInt64 = 0, recipients: [ShareRecipient] = [], origin: Origin? = nil, follow: FollowedFile? = nil) {
        self.serial = serial
        self.recipients = recipients
        self.origin = origin
        self.follow = follow
    }

    var isEmpty: Bool { serial == 0 && recipients.isEmpty && origin == nil && follow == nil }
}

extension VaultContents {
    static let pathLimit = 4096

    /// The payload's sharing section (version 6): the identity, then each key's sharing state.
    func encodedSharingLength() -> Int {
        var length = 1
        if let identity { length += 32 + 32 + 2 + identity.label.utf8.count }
        length += 2
        for (name, record) in sharing {
            length += 2 + name.utf8.count + 8 + 1
            if case .signed(let sender) = record.origin { length += 32 + 2 + sender.label.utf8.count }
            length += 2 + (record.follow?.path.utf8.count ?? 0) + (record.follow == nil ? 0 : 32)
            length += 2
            for recipient in record.recipients {
                length += 2 + recipient.recipient.utf8.count + 2 + recipient.label.utf8.count + 8 + 2 + recipient.path.utf8.count
            }
        }
        return length
    }

    func writeSharing(_ writer: inout SecretWriter) {
        if let identity {
            writer.append(UInt8(1))
            identity.agreementSecret.withUnsafeBytes { writer.append($0) }
            identity.signingSeed.withUnsafeBytes { writer.append($0) }
            writer.appendField(identity.label)
        } else {
            writer.append(UInt8(0))
        }
        writer.append(UInt16(sharing.count))
        for name in sharing.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let record = sharing[name]!
            writer.appendField(name)
            writer.append(record.serial)
            switch record.origin {
            case nil: writer.append(UInt8(0))
            case .unsigned: writer.append(UInt8(1))
            case .signed(let sender):
                writer.append(UInt8(2))
                sender.signingKey.withUnsafeBytes { writer.append($0) }
                writer.appendField(sender.label)
            }
            writer.appendField(record.follow?.path ?? "")
            if let follow = record.follow {
                writer.append(follow.device)
                writer.append(follow.inode)
                writer.append(follow.size)
                writer.append(follow.modified)
            }
            writer.append(UInt16(record.recipients.count))
            for recipient in record.recipients {
                writer.appendField(recipient.recipient)
                writer.appendField(recipient.label)
                writer.append(recipient.added)
                writer.appendField(recipient.path)
            }
        }
    }

    static func readSharing(_ reader: inout ByteReader, keyNames: Set<String>, broken: (String) -> VaultError) throws
        -> (VaultIdentity?, [String: KeySharing]) {
        var identity: VaultIdentity?
        switch try reader.read(UInt8.self) {
        case 0: break
        case 1:
            let agreement = try reader.readSecret(32)
            let signing = try reader.readSecret(32)
            let label = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            guard VaultIdentity.isValidLabel(label) else { throw broken("the identity's label is empty, too long or has control characters") }
            identity = VaultIdentity(agreementSecret: agreement, signingSeed: signing, label: label)
        default: throw broken("the identity marker is neither 0 nor 1")
        }
        var sharing: [String: KeySharing] = [:]
        var lastName: String?
        for _ in 0..<Int(try reader.read(UInt16.self)) {
            let name = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            guard keyNames.contains(name) else { throw broken("sharing is recorded for a key the vault does not hold") }
            if let lastName, !lastName.utf8.lexicographicallyPrecedes(name.utf8) { throw broken("sharing records are duplicated or not in byte order") }
            lastName = name
            var record = KeySharing(serial: try reader.read(UInt64.self))
            switch try reader.read(UInt8.self) {
            case 0: break
            case 1: record.origin = .unsigned
            case 2:
                let key = try reader.readBytes(32)
                let label = try reader.readUTF8(Int(try reader.read(UInt16.self)))
                guard label.utf8.count <= VaultIdentity.labelLimit else { throw broken("a sender's label is too long") }
                record.origin = .signed(ShareSender(signingKey: key, label: label))
            default: throw broken("a key's share origin is not 0, 1 or 2")
            }
            let followPath = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            guard followPath.utf8.count <= pathLimit else { throw broken("a followed path is too long") }
            if !followPath.isEmpty {
                record.follow = FollowedFile(path: followPath, device: try reader.read(UInt64.self), inode: try reader.read(UInt64.self),
                                             size: try reader.read(UInt64.self), modified: try reader.read(Int64.self))
            }
            let count = Int(try reader.read(UInt16.self))
            guard count <= KeySharing.recipientLimit else { throw broken("a key has more than \(KeySharing.recipientLimit) recipients") }
            for _ in 0..<count {
                let recipient = try reader.readUTF8(Int(try reader.read(UInt16.self)))
                let label = try reader.readUTF8(Int(try reader.read(UInt16.self)))
                let added = try reader.read(Int64.self)
                let path = try reader.readUTF8(Int(try reader.read(UInt16.self)))
                guard !recipient.isEmpty, recipient.utf8.count <= pathLimit, label.utf8.count <= VaultIdentity.labelLimit, path.utf8.count <= pathLimit else {
                    throw broken("a recipient record is empty or too long")
                }
                record.recipients.append(ShareRecipient(recipient: recipient, label: label, added: added, path: path))
            }
            guard !record.isEmpty else { throw broken("an empty sharing record") }
            sharing[name] = record
        }
        return (identity, sharing)
    }
}
