public import VaultCore

extension AgeRecipient {
    /// Whether the recipient resists a quantum computer (harvest now, decrypt later): false
    /// unless the type says so.
    public var isPostQuantum: Bool { false }
}

extension Labels {
    static let hybridRecipientHRP = "age1pq"
    static let hybridIdentityHRP = "AGE-SECRET-KEY-PQ-"
    static let hybridStanza = "mlkem768x25519"
    static let hybridInfo = Array("age-encryption.org/mlkem768x25519".utf8)
}

/// A hybrid post-quantum age recipient, `age1pq1…`: an MLKEM768-X25519 (X-Wing) public key,
/// ML-KEM-768's encapsulation key followed by an X25519 point (1,216 bytes).
public struct HybridRecipient: AgeRecipient, Equatable {
    public let publicKey: [UInt8]
    public var isPostQuantum: Bool { true }

    /// A key that passes ML-KEM's modulus check; nil otherwise.
    public init?(publicKey: [UInt8]) {
        guard publicKey.count == HybridKEM.mlkem768x25519.publicKeyBytes,
              MLKEM768.passesModulusCheck(Array(publicKey[0..<MLKEM768.encapsulationKeyBytes])) else { return nil }
        self.init(derived: publicKey)
    }

    /// A key just expanded from a seed: right by construction, so not checked again.
    init(derived publicKey: [UInt8]) {
        self.publicKey = publicKey
    }

    /// `age1pq1…` (1,960 characters), encoded when asked: a holder that only decapsulates never needs it.
    public var text: String { String(decoding: Bech32.encode(hrp: Labels.hybridRecipientHRP, publicKey), as: UTF8.self) }

    /// Parses `age1pq1…`; nil for anything else.
    public init?(parsing text: String) {
        guard let (hrp, data) = Bech32.decode(Array(text.utf8)), hrp == Labels.hybridRecipientHRP else { return nil }
        self.init(publicKey: data)
    }

    /// An `mlkem768x25519` stanza: HPKE SealBase of the file key, `enc` as the argument.
    public func wrap(_ fileKey: SecretBytes) throws(AgeError) -> AgeStanza {
        let kem = HybridKEM.mlkem768x25519
        let (enc, body) = try HPKE.seal(fileKey, kem: kem.kemID, info: Labels.hybridInfo, unusable: "ML-KEM-768 + X25519 key") { () throws(PrimitiveError) in
            try kem.encapsulate(to: publicKey)
        }
        return AgeStanza(type: Labels.hybridStanza, arguments: [StrictBase64.encode(enc)], body: body)
    }
}

/// A hybrid post-quantum age identity, `AGE-SECRET-KEY-PQ-1…`: a 32-byte seed, expanded once.
public struct HybridIdentity: AgeIdentity {
    public let seed: SecretBytes
    public let recipient: HybridRecipient
    private let expanded: HybridKEM.ExpandedKey

    public init(seed: SecretBytes) throws(AgeError) {
        guard let expanded = try? HybridKEM.mlkem768x25519.expand(seed: seed) else {
            throw AgeError(.header, "a hybrid identity is a 32-byte seed")
        }
        self.seed = seed
        self.expanded = expanded
        recipient = HybridRecipient(derived: expanded.publicKey)
    }

    /// A new random identity.
    public static func generate() -> HybridIdentity {
        // Every 32-byte seed expands to a key pair.
        try! HybridIdentity(seed: SecretBytes.random(count: HybridKEM.seedBytes))
    }

    /// Parses `AGE-SECRET-KEY-PQ-1…`; nil for anything else.
    public init?(parsing text: SecretBytes) {
        var characters = text.withUnsafeBytes { Array($0) }
        defer { SecretBytes.wipe(&characters) }
        guard let (hrp, decoded) = Bech32.decode(characters), hrp == Labels.hybridIdentityHRP,
              decoded.count == HybridKEM.seedBytes else { return nil }
        var data = decoded
        guard let identity = try? HybridIdentity(seed: SecretBytes(taking: &data)) else { return nil }
        self = identity
    }

    /// `AGE-SECRET-KEY-PQ-1…`, as age writes it, in secret memory.
    public var encoded: SecretBytes {
        var text = seed.withUnsafeBytes { raw in
            var bytes = Array(raw)
            defer { SecretBytes.wipe(&bytes) }
            return Bech32.encode(hrp: Labels.hybridIdentityHRP, bytes, uppercase: true)
        }
        return SecretBytes(taking: &text)
    }

    public var recipientText: String { recipient.text }

    /// The shared secrets of `encs` (nil where the X25519 share is low order), for a holder of
    /// this identity answering a `DelegatedHybridIdentity` (the session agent).
    public func decapsulate(_ encs: [[UInt8]]) throws(PrimitiveError) -> [SecretBytes?] {
        var secrets: [SecretBytes?] = []
        for enc in encs {
            do { secrets.append(try HybridKEM.mlkem768x25519.decapsulate(enc, with: expanded)) } catch .lowOrderPoint { secrets.append(nil) }
        }
        return secrets
    }

    public func unwrap(_ stanzas: [AgeStanza]) throws(AgeError) -> SecretBytes? {
        try Self.unwrap(stanzas) { encs throws(AgeError) in
            do { return try decapsulate(encs) } catch { throw AgeError(.header, "the mlkem768x25519 stanza's enc could not be decapsulated") }
        }
    }

    /// The size of an `mlkem768x25519` stanza's `enc`: ML-KEM-768's ciphertext and an X25519 point.
    public static let encapsulatedKeyBytes = HybridKEM.mlkem768x25519.encBytes

    /// The most `mlkem768x25519` stanzas tried in one file, as for X25519.
    public static let stanzaLimit = X25519Identity.stanzaLimit

    /// The `mlkem768x25519` stanzas' unwrapping (age.md), the decapsulations done by `decapsulate`
    /// (here, or all of one file's in one request to the agent).
    static func unwrap(_ stanzas: [AgeStanza], decapsulate: ([[UInt8]]) throws(AgeError) -> [SecretBytes?]) throws(AgeError) -> SecretBytes? {
        let hybrid = stanzas.filter { $0.type == Labels.hybridStanza }
        guard hybrid.count <= stanzaLimit else {
            throw AgeError(.unsupported, "the file has \(hybrid.count) mlkem768x25519 recipients; gemvault tries at most \(stanzaLimit)")
        }
        guard !hybrid.isEmpty else { return nil }
        var encs: [[UInt8]] = []
        for stanza in hybrid {
            guard stanza.arguments.count == 1 else { throw AgeError(.header, "the mlkem768x25519 stanza has \(stanza.arguments.count) arguments, not 1") }
            guard let enc = StrictBase64.decode(Array(stanza.arguments[0].utf8)), enc.count == encapsulatedKeyBytes else {
                throw AgeError(.header, "the mlkem768x25519 stanza's enc is not \(encapsulatedKeyBytes) bytes of canonical base64")
            }
            try StanzaSeal.checkBody(stanza, "mlkem768x25519")
            encs.append(enc)
        }
        let secrets = try decapsulate(encs)
        guard secrets.count == encs.count else { throw AgeError(.header, "the decapsulation answered for \(secrets.count) of \(encs.count) stanzas") }
        for (index, stanza) in hybrid.enumerated() {
            guard let shared = secrets[index] else { throw AgeError(.header, "the X25519 part of the mlkem768x25519 enc is a low-order point") }
            if let fileKey = HPKE.open(stanza.body, kem: HybridKEM.mlkem768x25519.kemID, sharedSecret: shared, info: Labels.hybridInfo) {
                return fileKey
            }
        }
        return nil
    }
}

/// A hybrid identity whose seed is held elsewhere (the session agent): only the decapsulations
/// of a file's `enc`s are asked for (all in one request), never the seed.
public struct DelegatedHybridIdentity: AgeIdentity {
    public let recipient: HybridRecipient
    private let decapsulate: @Sendable ([[UInt8]]) throws(AgeError) -> [SecretBytes?]

    public init(recipient: HybridRecipient, decapsulate: @escaping @Sendable ([[UInt8]]) throws(AgeError) -> [SecretBytes?]) {
        self.recipient = recipient
        self.decapsulate = decapsulate
    }

    public var recipientText: String { recipient.text }

    public func unwrap(_ stanzas: [AgeStanza]) throws(AgeError) -> SecretBytes? {
        try HybridIdentity.unwrap(stanzas, decapsulate: decapsulate)
    }
}
