import VaultCore

/// HPKE (RFC 9180) in base mode, single shot, with HKDF-SHA256 and ChaCha20Poly1305, as age's
/// `mlkem768x25519`, `p256tag` and `mlkem768p256tag` stanzas use it: the KEM gives the shared
/// secret and `enc`, the key schedule turns it into one key and nonce, and one message (the file
/// key) is sealed with an empty AAD.
enum HPKE {
    static let kdfID: UInt16 = 0x0001
    static let aeadID: UInt16 = 0x0003
    private static let version = Array("HPKE-v1".utf8)

    static func i2osp(_ value: Int, _ length: Int) -> [UInt8] {
        (0..<length).map { UInt8(truncatingIfNeeded: value >> (8 * (length - 1 - $0))) }
    }

    /// `"HPKE" ‖ kem ‖ kdf ‖ aead`, the key schedule's suite id.
    static func suiteID(kem: UInt16) -> [UInt8] {
        Array("HPKE".utf8) + i2osp(Int(kem), 2) + i2osp(Int(kdfID), 2) + i2osp(Int(aeadID), 2)
    }

    /// LabeledExtract with a public salt.
    static func labeledExtract(suite: [UInt8], salt: [UInt8], label: String, _ ikm: SecretBytes) -> SecretBytes {
        HKDFSHA256.extract(salt: salt, prefix: version + suite + Array(label.utf8), ikm)
    }

    static func labeledExpand(suite: [UInt8], _ prk: SecretBytes, label: String, info: [UInt8], length: Int) -> SecretBytes {
        HKDFSHA256.expand(prk, info: i2osp(length, 2) + version + suite + Array(label.utf8) + info, length: length)
    }

    /// KeySchedule (section 5.1) in mode_base: the AEAD key and base nonce.
    static func keySchedule(kem: UInt16, sharedSecret: SecretBytes, info: [UInt8]) -> (key: SecretBytes, nonce: [UInt8]) {
        let suite = suiteID(kem: kem)
        let empty = SecretBytes(count: 0)
        let pskIDHash = labeledExtract(suite: suite, salt: [], label: "psk_id_hash", empty)
        let infoHash = HKDFSHA256.extract(salt: [], prefix: version + suite + Array("info_hash".utf8) + info, empty)
        let context = [0] + pskIDHash.withUnsafeBytes { Array($0) } + infoHash.withUnsafeBytes { Array($0) }
        // The shared secret is the salt here, with the (empty) PSK as input.
        let secret = HMACSHA256.mac(key: sharedSecret, version + suite + Array("secret".utf8))
        let key = labeledExpand(suite: suite, secret, label: "key", info: context, length: ChaCha20Poly1305.keyBytes)
        let nonce = labeledExpand(suite: suite, secret, label: "base_nonce", info: context, length: ChaCha20Poly1305.nonceBytes)
        return (key, nonce.withUnsafeBytes { Array($0) })
    }

    /// SealBase's ciphertext of `plaintext` for the KEM's shared secret.
    static func seal(_ plaintext: SecretBytes, kem: UInt16, sharedSecret: SecretBytes, info: [UInt8]) throws(AgeError) -> [UInt8] {
        let (key, nonce) = keySchedule(kem: kem, sharedSecret: sharedSecret, info: info)
        do {
            return try ChaCha20Poly1305.seal(plaintext, nonce: nonce, key: key)
        } catch {
            throw AgeError(.header, "a file key could not be wrapped")
        }
    }

    /// A file key sealed to a recipient's KEM key: `encapsulate` makes the shared secret and
    /// `enc`; a key it refuses is `unusable` (what kind of key the recipient should have been).
    static func seal(_ fileKey: SecretBytes, kem: UInt16, info: [UInt8], unusable: String,
                     encapsulate: () throws(PrimitiveError) -> (sharedSecret: SecretBytes, enc: [UInt8])) throws(AgeError) -> (enc: [UInt8], body: [UInt8]) {
        let encapsulated: (sharedSecret: SecretBytes, enc: [UInt8])
        do { encapsulated = try encapsulate() } catch { throw AgeError(.header, "the recipient's key is not a usable \(unusable)") }
        return (encapsulated.enc, try seal(fileKey, kem: kem, sharedSecret: encapsulated.sharedSecret, info: info))
    }

    /// OpenBase's plaintext, or nil when the ciphertext does not open (the stanza is someone else's).
    static func open(_ ciphertext: [UInt8], kem: UInt16, sharedSecret: SecretBytes, info: [UInt8]) -> SecretBytes? {
        let (key, nonce) = keySchedule(kem: kem, sharedSecret: sharedSecret, info: info)
        return try? ChaCha20Poly1305.open(ciphertext[...], nonce: nonce, key: key)
    }
}

/// DHKEM(P-256, HKDF-SHA256) (RFC 9180, section 4.1), the sender's half: the tagged recipients
/// only encrypt. Points are checked on the curve by libcrypto.
enum DHKEMP256 {
    static let kemID: UInt16 = 0x0010
    static let encBytes = 65
    private static let suite = Array("KEM".utf8) + HPKE.i2osp(Int(kemID), 2)

    /// Encap to an uncompressed point (`0x04 ‖ x ‖ y`, 65 bytes, as the context needs it) with a
    /// fresh ephemeral key, or with `ephemeral` (a scalar) for the vectors.
    static func encapsulate(to recipient: [UInt8], ephemeral: SecretBytes? = nil) throws(PrimitiveError) -> (sharedSecret: SecretBytes, enc: [UInt8]) {
        guard recipient.count == P256.uncompressedBytes, recipient[0] == 0x04 else { throw .invalidInput }
        let scalar = ephemeral ?? P256.randomScalar()
        let enc = try P256.multiply(nil, scalar)
        // Checks the point is on the curve.
        let dh = try P256.sharedX(recipient, scalar)
        let prk = HPKE.labeledExtract(suite: suite, salt: [], label: "eae_prk", dh)
        let shared = HPKE.labeledExpand(suite: suite, prk, label: "shared_secret", info: enc + recipient, length: 32)
        return (shared, enc)
    }

    /// DeriveKeyPair (section 7.1.3)'s scalar, for the RFC 9180 vectors.
    static func derivedScalar(_ ikm: [UInt8]) -> SecretBytes {
        let prk = HPKE.labeledExtract(suite: suite, salt: [], label: "dkp_prk", SecretBytes(copying: ikm))
        for counter in 0..<256 {
            let candidate = HPKE.labeledExpand(suite: suite, prk, label: "candidate", info: [UInt8(counter)], length: 32)
            if P256.isValidScalar(candidate) { return candidate }
        }
        fatalError("DeriveKeyPair found no P-256 scalar in 256 candidates")
    }
}
