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

/// An OpenSSH ed25519 private key (`~/.ssh/id_ed25519`) as an age identity: unencrypted, or
/// protected by a passphrase the way `ssh-keygen` does it (bcrypt_pbkdf and AES-CTR).
public struct SSHEd25519Identity: AgeIdentity {
    public let recipient: SSHEd25519Recipient
    private let montgomerySecret: SecretBytes
    private let montgomeryPublic: [UInt8]

    private static let begin = "-----BEGIN OPENSSH PRIVATE KEY-----"
    private static let end = "-----END OPENSSH PRIVATE KEY-----"
    /// ssh-keygen's default is 16; far more would only make a hostile file hang the command.
    static let maximumRounds = 1000

    /// Whether `text` looks like an OpenSSH private key file (so a caller can say which parser refused it).
    public static func isOpenSSHPrivateKey(_ text: SecretBytes) -> Bool {
        text.withUnsafeBytes { $0.starts(with: Array(begin.utf8)) }
    }

    /// Whether the key is protected by a passphrase. Throws for a file it could not read at all,
    /// so that nobody is asked for a passphrase in vain.
    public static func needsPassphrase(_ text: SecretBytes) throws(AgeError) -> Bool {
        var decoded = try decode(text)
        defer { SecretBytes.wipe(&decoded) }
        var reader = try outerReader(decoded)
        var (protection, publicWire, privateSection) = try Self.outerFields(&reader)
        let wholeBlocks = !privateSection.isEmpty && privateSection.count % 16 == 0
        SecretBytes.wipe(&privateSection)
        // Damage that no passphrase could explain is said before anyone is asked for one.
        if protection != nil, !wholeBlocks { throw AgeError(.header, "the ssh key file is damaged") }
        // Another key type is refused before anyone types a passphrase for it.
        var publicReader = SSHWireReader(publicWire)
        guard publicReader.string() == SSHWire.ed25519Type else { throw AgeError(.unsupported, "only ssh-ed25519 keys can be used") }
        return protection != nil
    }

    /// Parses the file's text, decrypting it with `passphrase` when it is protected. Throws
    /// `.wrongPassphrase` when it is protected and the passphrase is missing or wrong, and
    /// `.unsupported` for another key type or cipher.
    public init(openSSHPrivateKey text: SecretBytes, passphrase: SecretBytes? = nil) throws(AgeError) {
        var decoded = try Self.decode(text)
        defer { SecretBytes.wipe(&decoded) }
        var (publicKey, pair) = try Self.keys(in: decoded, passphrase: passphrase)
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

    /// The openssh-key-v1 blob inside the file's PEM-style armor.
    private static func decode(_ text: SecretBytes) throws(AgeError) -> [UInt8] {
        var lines = text.withUnsafeBytes { raw in
            raw.split(separator: 10, omittingEmptySubsequences: true).map { Array($0.last == 13 ? $0.dropLast() : $0[...]) }
        }
        defer { for index in lines.indices { SecretBytes.wipe(&lines[index]) } }
        guard lines.first == Array(Self.begin.utf8), let endIndex = lines.firstIndex(of: Array(Self.end.utf8)) else {
            throw AgeError(.header, "not an OpenSSH private key")
        }
        var body = Array(lines[1..<endIndex].joined())
        defer { SecretBytes.wipe(&body) }
        guard let decoded = StrictBase64.decode(body, padded: true) else { throw AgeError(.header, "the ssh key's base64 is damaged") }
        return decoded
    }

    private static func outerReader(_ decoded: [UInt8]) throws(AgeError) -> SSHWireReader {
        let magic = Array("openssh-key-v1".utf8) + [0]
        guard decoded.starts(with: magic) else { throw AgeError(.header, "not an openssh-key-v1 private key") }
        return SSHWireReader(decoded, from: magic.count)
    }

    /// How the private section is protected (nil: not at all), then the public key's wire form
    /// and the private section.
    private static func outerFields(_ reader: inout SSHWireReader) throws(AgeError) -> (OpenSSHKeyProtection?, [UInt8], [UInt8]) {
        guard let cipher = reader.string(), let kdf = reader.string(), let options = reader.string(), reader.uint32() == 1,
              let publicWire = reader.string(), let privateSection = reader.string() else {
            throw AgeError(.header, "the ssh key file is damaged")
        }
        return (try OpenSSHKeyProtection(cipher: cipher, kdf: kdf, options: options), publicWire, privateSection)
    }

    /// The public key and libsodium's 64-byte secret key (seed ‖ public key) of a decoded
    /// openssh-key-v1 blob. A function of its own so its readers are gone before the caller wipes.
    private static func keys(in decoded: [UInt8], passphrase: SecretBytes?) throws(AgeError) -> (publicKey: [UInt8], pair: [UInt8]) {
        var reader = try outerReader(decoded)
        var (protection, publicWire, privateSection) = try outerFields(&reader)
        defer { SecretBytes.wipe(&privateSection) }
        var publicReader = SSHWireReader(publicWire)
        guard publicReader.string() == SSHWire.ed25519Type, let publicKey = publicReader.string(), publicKey.count == Ed25519.publicKeyBytes else {
            throw AgeError(.unsupported, "only ssh-ed25519 keys can be used")
        }
        if let protection {
            guard let passphrase else { throw AgeError(.wrongPassphrase, "the ssh key is protected by a passphrase") }
            try protection.decrypt(&privateSection, passphrase: passphrase)
        }
        let pair: [UInt8]
        do {
            // Scoped: the reader shares privateSection's storage, which the deferred wipe must own alone.
            var inner = SSHWireReader(privateSection)
            guard let check1 = inner.uint32(), let check2 = inner.uint32(), check1 == check2 else {
                // The two check words are equal in every key ssh-keygen writes; after a wrong
                // passphrase they are random.
                throw protection == nil ? AgeError(.header, "the ssh key file is damaged") : AgeError(.wrongPassphrase, "wrong passphrase for the ssh key")
            }
            guard inner.string() == SSHWire.ed25519Type, inner.string() == publicKey, let found = inner.string(),
                  found.count == Ed25519.seedBytes + Ed25519.publicKeyBytes, Array(found.suffix(Ed25519.publicKeyBytes)) == publicKey else {
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

/// How ssh-keygen protects a private key with a passphrase: bcrypt_pbkdf makes the cipher's key
/// and counter from the passphrase and the file's salt; AES-CTR encrypts the private section.
struct OpenSSHKeyProtection {
    let cipherName: String
    let keyBytes: Int
    let salt: [UInt8]
    let rounds: Int

    private static let counterModeKeyBytes = ["aes128-ctr": 16, "aes192-ctr": 24, "aes256-ctr": 32]

    /// nil for an unprotected key (cipher and KDF both `none`).
    init?(cipher: [UInt8], kdf: [UInt8], options: [UInt8]) throws(AgeError) {
        let cipherName = String(decoding: cipher, as: UTF8.self)
        let kdfName = String(decoding: kdf, as: UTF8.self)
        if cipherName == "none" && kdfName == "none" && options.isEmpty { return nil }
        guard kdfName == "bcrypt" else { throw AgeError(.unsupported, "the ssh key's key derivation '\(Self.printable(kdfName))' is not one ssh-keygen writes") }
        guard let keyBytes = Self.counterModeKeyBytes[cipherName] else {
            throw AgeError(.unsupported, "the ssh key is encrypted with '\(Self.printable(cipherName))'; gemvault reads aes128-ctr, aes192-ctr and aes256-ctr (ssh-keygen's default): 'ssh-keygen -p -Z aes256-ctr -f KEY' re-encrypts it with that")
        }
        var reader = SSHWireReader(options)
        guard let salt = reader.string(), !salt.isEmpty, salt.count <= 1024, let rounds = reader.uint32(), reader.isAtEnd else {
            throw AgeError(.header, "the ssh key file is damaged")
        }
        guard (1...UInt32(SSHEd25519Identity.maximumRounds)).contains(rounds) else {
            throw AgeError(.unsupported, "the ssh key asks for \(rounds) bcrypt rounds; gemvault reads at most \(SSHEd25519Identity.maximumRounds)")
        }
        self.cipherName = cipherName
        self.keyBytes = keyBytes
        self.salt = salt
        self.rounds = Int(rounds)
    }

    /// Decrypts the private section in place.
    func decrypt(_ section: inout [UInt8], passphrase: SecretBytes) throws(AgeError) {
        guard section.count % 16 == 0 else { throw AgeError(.header, "the ssh key file is damaged") }
        let derived = BcryptPBKDF.derive(passphrase: passphrase, salt: salt, rounds: rounds, length: keyBytes + 16)
        var counter = derived.withUnsafeBytes { Array($0[keyBytes...]) }
        defer { SecretBytes.wipe(&counter) }
        let cipher = AESCounterMode(key: SecretBytes(slicing: derived, range: 0..<keyBytes))
        section.withUnsafeMutableBytes { cipher.apply(to: $0, counter: counter) }
    }

    private static func printable(_ name: String) -> String {
        String(name.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7f }.prefix(40))
    }
}
