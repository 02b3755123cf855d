public import VaultCore

/// SSH's wire encoding: big-endian length-prefixed strings (RFC 4251 §5).
struct SSHWireReader {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8], from offset: Int = 0) {
        self.bytes = bytes
        self.position = offset
    }

    var isAtEnd: Bool { position == bytes.count }

    mutating func uint32() -> UInt32? {
        guard bytes.count - position >= 4 else { return nil }
        defer { position += 4 }
        return bytes[position..<(position + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func string() -> [UInt8]? {
        guard let length = uint32(), bytes.count - position >= Int(length) else { return nil }
        defer { position += Int(length) }
        return Array(bytes[position..<(position + Int(length))])
    }
}

enum SSHWire {
    static func string(_ bytes: [UInt8]) -> [UInt8] {
        let length = UInt32(bytes.count)
        return [UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)] + bytes
    }

    static let ed25519Type = Array("ssh-ed25519".utf8)

    static func ed25519PublicKey(_ key: [UInt8]) -> [UInt8] { string(ed25519Type) + string(key) }
}

/// A colleague's ssh-ed25519 public key as an age recipient (age's ssh-ed25519 stanza).
public struct SSHEd25519Recipient: AgeRecipient, Equatable {
    public let publicKey: [UInt8]
    /// The `ssh-ed25519 AAAA…` part of the line, without its comment.
    public let text: String

    /// Parses an authorized_keys-style line: `ssh-ed25519 BASE64 [comment]`; nil for anything else.
    public init?(parsing line: String) {
        let words = line.split(separator: " ", omittingEmptySubsequences: true)
        guard words.count >= 2, words[0] == "ssh-ed25519", let wire = StrictBase64.decode(Array(words[1].utf8), padded: true) else { return nil }
        var reader = SSHWireReader(wire)
        guard reader.string() == SSHWire.ed25519Type, let key = reader.string(), key.count == Ed25519.publicKeyBytes, reader.isAtEnd,
              (try? Ed25519.montgomeryPublicKey(key)) != nil else { return nil }
        self.publicKey = key
        self.text = "ssh-ed25519 " + words[1]
    }

    var wireKey: [UInt8] { SSHWire.ed25519PublicKey(publicKey) }

    /// The stanza's first argument: the first four bytes of SHA-256 of the wire key.
    var tag: String { StrictBase64.encode(Sodium.sha256(wireKey).prefix(4)) }

    /// The scalar age multiplies every shared secret by, so the stanza is bound to this ssh key.
    var tweak: SecretBytes {
        HKDFSHA256.derive(secret: SecretBytes(count: 0), salt: wireKey, info: Labels.sshEd25519, length: X25519.keyBytes)
    }

    public func wrap(_ fileKey: SecretBytes) throws(AgeError) -> AgeStanza {
        guard let montgomery = try? Ed25519.montgomeryPublicKey(publicKey) else { throw AgeError(.header, "the ssh key is not a usable Ed25519 key") }
        let (share, shared) = try StanzaSeal.ephemeral(with: montgomery)
        guard let tweaked = try? X25519.sharedSecret(tweak, shared) else { throw AgeError(.header, "the ssh key gives a low-order point") }
        let body = try StanzaSeal.seal(fileKey, shared: tweaked, salt: share + montgomery, label: Labels.sshEd25519)
        return AgeStanza(type: "ssh-ed25519", arguments: [tag, StrictBase64.encode(share)], body: body)
    }
}

/// An unencrypted OpenSSH ed25519 private key (`~/.ssh/id_ed25519`) as an age identity.
public struct SSHEd25519Identity: AgeIdentity {
    public let recipient: SSHEd25519Recipient
    private let montgomerySecret: SecretBytes
    private let montgomeryPublic: [UInt8]

    private static let begin = "-----BEGIN OPENSSH PRIVATE KEY-----"
    private static let end = "-----END OPENSSH PRIVATE KEY-----"

    /// Whether `text` looks like an OpenSSH private key file (so a caller can say which parser refused it).
    public static func isOpenSSHPrivateKey(_ text: SecretBytes) -> Bool {
        text.withUnsafeBytes { $0.starts(with: Array(begin.utf8)) }
    }

    /// Parses the file's text. Throws `.unsupported` for a passphrase-protected key or another key type.
    public init(openSSHPrivateKey text: SecretBytes) throws(AgeError) {
        var lines = text.withUnsafeBytes { raw in
            raw.split(separator: 10, omittingEmptySubsequences: true).map { Array($0.last == 13 ? $0.dropLast() : $0[...]) }
        }
        defer { for index in lines.indices { SecretBytes.wipe(&lines[index]) } }
        guard lines.first == Array(Self.begin.utf8), let endIndex = lines.firstIndex(of: Array(Self.end.utf8)) else {
            throw AgeError(.header, "not an OpenSSH private key")
        }
        var body = Array(lines[1..<endIndex].joined())
        defer { SecretBytes.wipe(&body) }
        guard var decoded = StrictBase64.decode(body, padded: true) else { throw AgeError(.header, "the ssh key's base64 is damaged") }
        defer { SecretBytes.wipe(&decoded) }
        var (publicKey, pair) = try Self.keys(in: decoded)
        defer { SecretBytes.wipe(&pair) }
        guard let recipient = SSHEd25519Recipient(parsing: "ssh-ed25519 " + StrictBase64.encode(SSHWire.ed25519PublicKey(publicKey), padded: true)),
              let montgomerySecret = try? Ed25519.montgomerySecretKey(SecretBytes(taking: &pair)),
              let montgomeryPublic = try? Ed25519.montgomeryPublicKey(publicKey) else {
            throw AgeError(.header, "the ssh key file is damaged")
        }
        self.recipient = recipient
        self.montgomerySecret = montgomerySecret
        self.montgomeryPublic = montgomeryPublic
    }

    /// The public key and libsodium's 64-byte secret key (seed ‖ public key) of a decoded
    /// openssh-key-v1 blob. A function of its own so its readers are gone before the caller wipes.
    private static func keys(in decoded: [UInt8]) throws(AgeError) -> (publicKey: [UInt8], pair: [UInt8]) {
        let magic = Array("openssh-key-v1".utf8) + [0]
        guard decoded.starts(with: magic) else { throw AgeError(.header, "not an openssh-key-v1 private key") }
        var reader = SSHWireReader(decoded, from: magic.count)
        guard let cipher = reader.string(), let kdf = reader.string(), reader.string() != nil, reader.uint32() == 1,
              let publicWire = reader.string(), var privateSection = reader.string() else {
            throw AgeError(.header, "the ssh key file is damaged")
        }
        defer { SecretBytes.wipe(&privateSection) }
        guard cipher == Array("none".utf8), kdf == Array("none".utf8) else {
            throw AgeError(.unsupported, "the ssh key is protected by a passphrase; decrypting such keys is not supported yet")
        }
        var publicReader = SSHWireReader(publicWire)
        guard publicReader.string() == SSHWire.ed25519Type, let publicKey = publicReader.string(), publicKey.count == Ed25519.publicKeyBytes else {
            throw AgeError(.unsupported, "only ssh-ed25519 keys can be used")
        }
        let pair: [UInt8]
        do {
            // Scoped: the reader shares privateSection's storage, which the deferred wipe must own alone.
            var inner = SSHWireReader(privateSection)
            guard let check1 = inner.uint32(), let check2 = inner.uint32(), check1 == check2, inner.string() == SSHWire.ed25519Type,
                  inner.string() == publicKey, let found = inner.string(), found.count == Ed25519.seedBytes + Ed25519.publicKeyBytes,
                  Array(found.suffix(Ed25519.publicKeyBytes)) == publicKey else {
                throw AgeError(.header, "the ssh key file is damaged")
            }
            pair = found
        }
        return (publicKey, pair)
    }

    public func unwrap(_ stanzas: [AgeStanza]) throws(AgeError) -> SecretBytes? {
        for stanza in stanzas where stanza.type == "ssh-ed25519" {
            guard stanza.arguments.count == 2 else { throw AgeError(.header, "the ssh-ed25519 stanza has \(stanza.arguments.count) arguments, not 2") }
            guard stanza.arguments[0] == recipient.tag else { continue }
            let share = try StanzaSeal.point(stanza.arguments[1], "ssh-ed25519")
            try StanzaSeal.checkBody(stanza, "ssh-ed25519")
            guard let shared = try? X25519.sharedSecret(montgomerySecret, share), let tweaked = try? X25519.sharedSecret(recipient.tweak, shared) else {
                throw AgeError(.header, "the ssh-ed25519 share is a low-order point")
            }
            if let fileKey = StanzaSeal.open(stanza.body, shared: tweaked, salt: share + montgomeryPublic, label: Labels.sshEd25519) {
                return fileKey
            }
        }
        return nil
    }
}
