public import VaultCore

extension Labels {
    static let tagRecipientHRP = "age1tag"
    static let hybridTagRecipientHRP = "age1tagpq"
    static let tagStanza = "p256tag"
    static let hybridTagStanza = "mlkem768p256tag"
    static let tagInfo = Array("age-encryption.org/p256tag".utf8)
    static let hybridTagInfo = Array("age-encryption.org/mlkem768p256tag".utf8)
}

/// The tag of a tagged stanza (age.md): HKDF-Extract-SHA-256(salt = the info string,
/// ikm = enc ‖ SHA-256(the recipient's P-256 encoding)[:4])[:4], so a hardware identity can tell
/// its stanzas apart without trying them.
enum StanzaTag {
    static func tag(enc: [UInt8], point: [UInt8], label: [UInt8]) -> [UInt8] {
        let ikm = enc + Sodium.sha256(point).prefix(4)
        return HKDFSHA256.extract(salt: label, prefix: ikm, SecretBytes(count: 0)).withUnsafeBytes { Array($0.prefix(4)) }
    }
}

/// A tagged hardware recipient, `age1tag1…`: a compressed P-256 point (a YubiKey, TPM or Secure
/// Enclave key). Only encryption to it is here: its identity lives in the hardware's plugin.
public struct P256TagRecipient: AgeRecipient, Equatable {
    /// The compressed SEC 1 point (33 bytes), as the recipient encodes it.
    public let point: [UInt8]
    private let uncompressed: [UInt8]

    /// Parses `age1tag1…`; nil for anything else, or for a point not on the curve.
    public init?(parsing text: String) {
        guard let (hrp, data) = Bech32.decode(Array(text.utf8)), hrp == Labels.tagRecipientHRP, data.count == P256.compressedBytes,
              let uncompressed = try? P256.uncompressed(data) else { return nil }
        self.point = data
        self.uncompressed = uncompressed
    }

    public var text: String { String(decoding: Bech32.encode(hrp: Labels.tagRecipientHRP, point), as: UTF8.self) }

    /// A `p256tag` stanza: HPKE SealBase with DHKEM(P-256), then the tag and `enc` as arguments.
    public func wrap(_ fileKey: SecretBytes) throws(AgeError) -> AgeStanza {
        let (enc, body) = try HPKE.seal(fileKey, kem: DHKEMP256.kemID, info: Labels.tagInfo, unusable: "P-256 point") { () throws(PrimitiveError) in
            try DHKEMP256.encapsulate(to: uncompressed)
        }
        let tag = StanzaTag.tag(enc: enc, point: point, label: Labels.tagInfo)
        return AgeStanza(type: Labels.tagStanza, arguments: [StrictBase64.encode(tag), StrictBase64.encode(enc)], body: body)
    }
}

/// A tagged hybrid hardware recipient, `age1tagpq1…`: an ML-KEM-768 encapsulation key and an
/// uncompressed P-256 point (1,249 bytes), for MLKEM768-P256. Encryption only, as for `age1tag1…`.
public struct MLKEM768P256TagRecipient: AgeRecipient, Equatable {
    public let publicKey: [UInt8]
    /// `age1tagpq1…`, encoded once (2,015 characters).
    public let text: String
    public var isPostQuantum: Bool { true }

    /// Parses `age1tagpq1…`; nil for anything else, a key that fails ML-KEM's modulus check, or
    /// a point not on the curve.
    public init?(parsing text: String) {
        guard let (hrp, data) = Bech32.decode(Array(text.utf8)), hrp == Labels.hybridTagRecipientHRP,
              data.count == HybridKEM.mlkem768p256.publicKeyBytes,
              MLKEM768.passesModulusCheck(Array(data[0..<MLKEM768.encapsulationKeyBytes])),
              data[MLKEM768.encapsulationKeyBytes] == 0x04,
              (try? P256.uncompressed(Array(data[MLKEM768.encapsulationKeyBytes...]))) != nil else { return nil }
        self.publicKey = data
        self.text = String(decoding: Bech32.encode(hrp: Labels.hybridTagRecipientHRP, data), as: UTF8.self)
    }

    /// A `mlkem768p256tag` stanza: HPKE SealBase with MLKEM768-P256, the tag over the P-256 part only.
    public func wrap(_ fileKey: SecretBytes) throws(AgeError) -> AgeStanza {
        let kem = HybridKEM.mlkem768p256
        let (enc, body) = try HPKE.seal(fileKey, kem: kem.kemID, info: Labels.hybridTagInfo, unusable: "ML-KEM-768 + P-256 key") { () throws(PrimitiveError) in
            try kem.encapsulate(to: publicKey)
        }
        let point = Array(publicKey[MLKEM768.encapsulationKeyBytes...])
        let tag = StanzaTag.tag(enc: enc, point: point, label: Labels.hybridTagInfo)
        return AgeStanza(type: Labels.hybridTagStanza, arguments: [StrictBase64.encode(tag), StrictBase64.encode(enc)], body: body)
    }
}
