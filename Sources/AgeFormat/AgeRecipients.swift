public import VaultCore

/// Someone a file key can be wrapped to.
public protocol AgeRecipient: Sendable {
    /// The recipient as a user writes it: `age1…`, or an `ssh-ed25519 …` line.
    var text: String { get }
    /// Whether the recipient resists a quantum computer (a default of false in an extension).
    var isPostQuantum: Bool { get }
    func wrap(_ fileKey: SecretBytes) throws(AgeError) -> AgeStanza
}

/// Someone who can unwrap a file key from the stanzas meant for them.
public protocol AgeIdentity: Sendable {
    /// The file key, or nil when no stanza is for this identity. Throws for a stanza that is
    /// this identity's type but malformed: age treats that as a broken header, not a miss.
    func unwrap(_ stanzas: [AgeStanza]) throws(AgeError) -> SecretBytes?
    /// The recipient this identity opens files for, as a share names it (`age1…`, `ssh-ed25519 AAAA…`).
    var recipientText: String { get }
}

extension X25519Identity {
    public var recipientText: String { recipient.text }
}

extension DelegatedX25519Identity {
    public var recipientText: String { recipient.text }
}

extension SSHEd25519Identity {
    public var recipientText: String { recipient.text }
}

enum Labels {
    static let x25519 = Array("age-encryption.org/v1/X25519".utf8)
    static let sshEd25519 = Array("age-encryption.org/v1/ssh-ed25519".utf8)
    static let recipientHRP = "age"
    static let identityHRP = "AGE-SECRET-KEY-"
}

/// The file key sealed to a shared secret, as every X25519-based stanza does it.
enum StanzaSeal {
    static let zeroNonce = [UInt8](repeating: 0, count: ChaCha20Poly1305.nonceBytes)

    static func wrapKey(shared: SecretBytes, salt: [UInt8], label: [UInt8]) -> SecretBytes {
        HKDFSHA256.derive(secret: shared, salt: salt, info: label, length: ChaCha20Poly1305.keyBytes)
    }

    static func seal(_ fileKey: SecretBytes, shared: SecretBytes, salt: [UInt8], label: [UInt8]) throws(AgeError) -> [UInt8] {
        do {
            return try ChaCha20Poly1305.seal(fileKey, nonce: zeroNonce, key: wrapKey(shared: shared, salt: salt, label: label))
        } catch {
            throw AgeError(.header, "a file key could not be wrapped")
        }
    }

    /// The file key, or nil when the body does not open (the stanza is someone else's).
    static func open(_ body: [UInt8], shared: SecretBytes, salt: [UInt8], label: [UInt8]) -> SecretBytes? {
        try? ChaCha20Poly1305.open(body[...], nonce: zeroNonce, key: wrapKey(shared: shared, salt: salt, label: label))
    }

    /// A stanza argument that must be exactly one 32-byte point.
    static func point(_ argument: String, _ what: String) throws(AgeError) -> [UInt8] {
        guard let bytes = StrictBase64.decode(Array(argument.utf8)), bytes.count == X25519.keyBytes else {
            throw AgeError(.header, "the \(what) stanza's share is not 32 bytes")
        }
        return bytes
    }

    /// age's file key is 16 bytes, so a body is exactly 32: checked before opening (a partitioning oracle otherwise).
    static func checkBody(_ stanza: AgeStanza, _ what: String) throws(AgeError) {
        guard stanza.body.count == AgeFile.fileKeyBytes + ChaCha20Poly1305.tagBytes else {
            throw AgeError(.header, "the \(what) stanza's body is not a 16-byte file key")
        }
    }

    /// An ephemeral share and the shared secret with `theirs`.
    static func ephemeral(with theirs: [UInt8]) throws(AgeError) -> (share: [UInt8], shared: SecretBytes) {
        let secret = X25519.newSecret()
        do {
            return (try X25519.publicKey(of: secret), try X25519.sharedSecret(secret, theirs))
        } catch {
            throw AgeError(.header, "the recipient's key is not a usable X25519 point")
        }
    }
}

/// A native age recipient, `age1…`: an X25519 public key.
public struct X25519Recipient: AgeRecipient, Equatable {
    public let publicKey: [UInt8]

    public init(publicKey: [UInt8]) {
        self.publicKey = publicKey
    }

    /// Parses `age1…`; nil for anything else.
    public init?(parsing text: String) {
        guard let (hrp, data) = Bech32.decode(Array(text.utf8)), hrp == Labels.recipientHRP, data.count == X25519.keyBytes else { return nil }
        self.publicKey = data
    }

    public var text: String { String(decoding: Bech32.encode(hrp: Labels.recipientHRP, publicKey), as: UTF8.self) }

    public func wrap(_ fileKey: SecretBytes) throws(AgeError) -> AgeStanza {
        let (share, shared) = try StanzaSeal.ephemeral(with: publicKey)
        let body = try StanzaSeal.seal(fileKey, shared: shared, salt: share + publicKey, label: Labels.x25519)
        return AgeStanza(type: "X25519", arguments: [StrictBase64.encode(share)], body: body)
    }
}

/// A native age identity, `AGE-SECRET-KEY-1…`: an X25519 secret scalar.
public struct X25519Identity: AgeIdentity {
    public let secret: SecretBytes
    public let recipient: X25519Recipient

    public init(secret: SecretBytes) throws(AgeError) {
        guard secret.count == X25519.keyBytes, let publicKey = try? X25519.publicKey(of: secret) else {
            throw AgeError(.header, "an X25519 identity is 32 bytes")
        }
        self.secret = secret
        self.recipient = X25519Recipient(publicKey: publicKey)
    }

    /// A new random identity.
    public static func generate() -> X25519Identity {
        // 32 random bytes are always a valid scalar (X25519 clamps them).
        try! X25519Identity(secret: X25519.newSecret())
    }

    /// Parses `AGE-SECRET-KEY-1…`; nil for anything else.
    public init?(parsing text: SecretBytes) {
        var characters = text.withUnsafeBytes { Array($0) }
        defer { SecretBytes.wipe(&characters) }
        guard let (hrp, decoded) = Bech32.decode(characters), hrp == Labels.identityHRP, decoded.count == X25519.keyBytes else { return nil }
        var data = decoded
        guard let identity = try? X25519Identity(secret: SecretBytes(taking: &data)) else { return nil }
        self = identity
    }

    /// `AGE-SECRET-KEY-1…`, as age-keygen writes it, in secret memory.
    public var encoded: SecretBytes {
        var text = secret.withUnsafeBytes { raw in
            var scalar = Array(raw)
            defer { SecretBytes.wipe(&scalar) }
            return Bech32.encode(hrp: Labels.identityHRP, scalar, uppercase: true)
        }
        return SecretBytes(taking: &text)
    }

    public func unwrap(_ stanzas: [AgeStanza]) throws(AgeError) -> SecretBytes? {
        try Self.unwrap(stanzas, recipient: recipient) { shares in shares.map { try? X25519.sharedSecret(secret, $0) } }
    }

    /// The most X25519 stanzas a file may have for gemvault to try it: a share has at most 256
    /// recipients, and each stanza costs an agreement (in a session, the agent's).
    public static let stanzaLimit = 256

    /// The X25519 stanzas' unwrapping, with the agreements done by `agree` (here, or in the
    /// agent: all of one file's in one request). `agree` answers nil for a low-order share.
    static func unwrap(_ stanzas: [AgeStanza], recipient: X25519Recipient,
                       agree: ([[UInt8]]) throws(AgeError) -> [SecretBytes?]) throws(AgeError) -> SecretBytes? {
        let x25519 = stanzas.filter { $0.type == "X25519" }
        guard x25519.count <= stanzaLimit else {
            throw AgeError(.unsupported, "the file has \(x25519.count) X25519 recipients; gemvault tries at most \(stanzaLimit)")
        }
        guard !x25519.isEmpty else { return nil }
        var shares: [[UInt8]] = []
        for stanza in x25519 {
            guard stanza.arguments.count == 1 else { throw AgeError(.header, "the X25519 stanza has \(stanza.arguments.count) arguments, not 1") }
            shares.append(try StanzaSeal.point(stanza.arguments[0], "X25519"))
            try StanzaSeal.checkBody(stanza, "X25519")
        }
        let agreed = try agree(shares)
        guard agreed.count == shares.count else { throw AgeError(.header, "the agreement answered for \(agreed.count) of \(shares.count) shares") }
        for (index, stanza) in x25519.enumerated() {
            guard let shared = agreed[index] else { throw AgeError(.header, "the X25519 share is a low-order point") }
            if let fileKey = StanzaSeal.open(stanza.body, shared: shared, salt: shares[index] + recipient.publicKey, label: Labels.x25519) {
                return fileKey
            }
        }
        return nil
    }
}

/// An X25519 identity whose secret is held elsewhere (the session agent): only the agreements
/// with a file's stanza shares are asked for (all in one request), never the secret.
public struct DelegatedX25519Identity: AgeIdentity {
    public let recipient: X25519Recipient
    private let agree: @Sendable ([[UInt8]]) throws(AgeError) -> [SecretBytes?]

    public init(recipient: X25519Recipient, agree: @escaping @Sendable ([[UInt8]]) throws(AgeError) -> [SecretBytes?]) {
        self.recipient = recipient
        self.agree = agree
    }

    public func unwrap(_ stanzas: [AgeStanza]) throws(AgeError) -> SecretBytes? {
        try X25519Identity.unwrap(stanzas, recipient: recipient, agree: agree)
    }
}
