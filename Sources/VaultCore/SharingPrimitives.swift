internal import CSodium

/// A primitive of the sharing code that refused its input.
public enum PrimitiveError: Error, Equatable, Sendable {
    /// An AEAD tag or a signature did not verify.
    case authenticationFailed
    /// X25519 gave the all-zero shared secret: the peer's share is a low-order point.
    case lowOrderPoint
    /// A key or nonce of the wrong length, or a public key that does not convert.
    case invalidInput
}

/// X25519 (RFC 7748), through libsodium's `crypto_scalarmult_curve25519`.
public enum X25519 {
    public static let keyBytes = 32

    /// A fresh secret scalar.
    public static func newSecret() -> SecretBytes { SecretBytes.random(count: keyBytes) }

    /// The public key (the scalar times the base point) of `secret`.
    public static func publicKey(of secret: SecretBytes) throws(PrimitiveError) -> [UInt8] {
        Sodium.ensureInitialized()
        guard secret.count == keyBytes else { throw .invalidInput }
        var point = [UInt8](repeating: 0, count: keyBytes)
        let rc = secret.withUnsafeBytes { scalar in
            crypto_scalarmult_curve25519_base(&point, scalar.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard rc == 0 else { throw .invalidInput }
        return point
    }

    /// The shared secret of `secret` and a peer's `point`; libsodium refuses the all-zero result.
    public static func sharedSecret(_ secret: SecretBytes, _ point: [UInt8]) throws(PrimitiveError) -> SecretBytes {
        Sodium.ensureInitialized()
        guard secret.count == keyBytes, point.count == keyBytes else { throw .invalidInput }
        let shared = SecretBytes(count: keyBytes)
        let rc = shared.withUnsafeMutableBytes { out in
            secret.withUnsafeBytes { scalar in
                crypto_scalarmult_curve25519(out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                             scalar.baseAddress!.assumingMemoryBound(to: UInt8.self), point)
            }
        }
        guard rc == 0 else { throw .lowOrderPoint }
        return shared
    }

    /// `sharedSecret` with a point that is itself secret (an earlier shared secret, tweaked again).
    public static func sharedSecret(_ secret: SecretBytes, _ point: SecretBytes) throws(PrimitiveError) -> SecretBytes {
        var bytes = point.withUnsafeBytes { Array($0) }
        defer { SecretBytes.wipe(&bytes) }
        return try sharedSecret(secret, bytes)
    }
}

/// ChaCha20-Poly1305 with a 12-byte nonce (RFC 8439), as age uses it for stanza bodies and payload chunks.
public enum ChaCha20Poly1305 {
    public static let keyBytes = 32
    public static let nonceBytes = 12
    public static let tagBytes = 16

    /// `plaintext` sealed: ciphertext followed by the tag. The ciphertext is not secret.
    public static func seal(_ plaintext: SecretBytes, nonce: [UInt8], key: SecretBytes) throws(PrimitiveError) -> [UInt8] {
        Sodium.ensureInitialized()
        guard nonce.count == nonceBytes, key.count == keyBytes else { throw .invalidInput }
        var sealed = [UInt8](repeating: 0, count: plaintext.count + tagBytes)
        var written: UInt64 = 0
        let rc = sealed.withUnsafeMutableBufferPointer { out in
            plaintext.withUnsafeBytes { input in
                key.withUnsafeBytes { keyBytes in
                    crypto_aead_chacha20poly1305_ietf_encrypt(
                        out.baseAddress!, &written, input.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                        nil, 0, nil, nonce, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        guard rc == 0, Int(written) == sealed.count else { throw .invalidInput }
        return sealed
    }

    /// The plaintext of `sealed` in secret memory, or `.authenticationFailed`.
    public static func open(_ sealed: ArraySlice<UInt8>, nonce: [UInt8], key: SecretBytes) throws(PrimitiveError) -> SecretBytes {
        Sodium.ensureInitialized()
        guard nonce.count == nonceBytes, key.count == keyBytes else { throw .invalidInput }
        guard sealed.count >= tagBytes else { throw .authenticationFailed }
        let plaintext = SecretBytes(count: sealed.count - tagBytes)
        var written: UInt64 = 0
        let rc = sealed.withUnsafeBufferPointer { input in
            plaintext.withUnsafeMutableBytes { out in
                key.withUnsafeBytes { keyBytes in
                    crypto_aead_chacha20poly1305_ietf_decrypt(
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), &written, nil, input.baseAddress!, UInt64(input.count),
                        nil, 0, nonce, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        guard rc == 0 else { throw .authenticationFailed }
        return plaintext
    }
}

/// HMAC-SHA-256 (RFC 2104) with a key of any length, and HKDF-SHA-256 (RFC 5869) built on it:
/// Debian's libsodium 1.0.18 predates `crypto_kdf_hkdf_sha256`.
public enum HMACSHA256 {
    public static let bytes = 32

    /// The MAC of the concatenated `parts` under `key`.
    public static func mac(key: SecretBytes, _ parts: [UInt8]...) -> SecretBytes {
        mac(key: key) { state in
            for part in parts { _ = crypto_auth_hmacsha256_update(state, part, UInt64(part.count)) }
        }
    }

    /// `mac` of a secret part, then public bytes: HKDF's expand step feeds the previous block.
    static func mac(key: SecretBytes, secretPart: SecretBytes, _ tail: [UInt8]) -> SecretBytes {
        mac(key: key) { state in
            secretPart.withUnsafeBytes { part in
                _ = crypto_auth_hmacsha256_update(state, part.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(part.count))
            }
            _ = crypto_auth_hmacsha256_update(state, tail, UInt64(tail.count))
        }
    }

    /// The one HMAC computation: its state lives in secret memory, `feed` adds the message.
    private static func mac(key: SecretBytes, feed: (UnsafeMutablePointer<crypto_auth_hmacsha256_state>) -> Void) -> SecretBytes {
        key.withUnsafeBytes { mac(rawKey: $0, feed: feed) }
    }

    /// The same with the key's bytes at hand. The digest and the state share one guarded
    /// allocation (each sodium_malloc costs several system calls): the digest is a view of it.
    private static func mac(rawKey: UnsafeRawBufferPointer, feed: (UnsafeMutablePointer<crypto_auth_hmacsha256_state>) -> Void) -> SecretBytes {
        Sodium.ensureInitialized()
        let stateSize = MemoryLayout<crypto_auth_hmacsha256_state>.size
        let digestOffset = (stateSize + 15) & ~15
        let memory = SecretBytes(count: (digestOffset + bytes + 15) & ~15)
        memory.withUnsafeMutableBytes { raw in
            // sodium_malloc ends an allocation at its guard page: its start is aligned when the size is a multiple of 16.
            precondition(Int(bitPattern: raw.baseAddress!) % MemoryLayout<crypto_auth_hmacsha256_state>.alignment == 0)
            let state = raw.baseAddress!.assumingMemoryBound(to: crypto_auth_hmacsha256_state.self)
            // An empty key (HKDF's empty salt) has no address; HMAC pads it with zeros either way.
            if let key = rawKey.baseAddress {
                _ = crypto_auth_hmacsha256_init(state, key.assumingMemoryBound(to: UInt8.self), rawKey.count)
            } else {
                _ = withUnsafePointer(to: UInt8(0)) { crypto_auth_hmacsha256_init(state, $0, 0) }
            }
            feed(state)
            _ = crypto_auth_hmacsha256_final(state, (raw.baseAddress! + digestOffset).assumingMemoryBound(to: UInt8.self))
            // The state is no longer needed: wipe it now rather than when the digest goes.
            Sodium.wipe(raw.baseAddress!, stateSize)
        }
        return memory.view(digestOffset..<digestOffset + bytes)
    }
}

public enum HKDFSHA256 {
    /// `length` bytes (at most 255 blocks) from `secret`, `salt` and `info`.
    public static func derive(secret: SecretBytes, salt: [UInt8], info: [UInt8], length: Int) -> SecretBytes {
        // An empty salt means HashLen zero bytes; HMAC pads either to the same block.
        expand(HMACSHA256.macWithPublicKey(salt, prefix: [], secret), info: info, length: length)
    }

    /// HKDF-Extract of `prefix ‖ secret` under a public salt (HPKE's labelled extract puts its
    /// label before the secret).
    public static func extract(salt: [UInt8], prefix: [UInt8] = [], _ secret: SecretBytes) -> SecretBytes {
        HMACSHA256.macWithPublicKey(salt, prefix: prefix, secret)
    }

    /// HKDF-Expand: `length` bytes (at most 255 blocks) of a pseudorandom key.
    public static func expand(_ pseudorandomKey: SecretBytes, info: [UInt8], length: Int) -> SecretBytes {
        precondition(length > 0 && length <= 255 * HMACSHA256.bytes)
        let output = SecretBytes(count: length)
        var previous = SecretBytes(count: 0)
        var filled = 0
        var counter: UInt8 = 1
        while filled < length {
            let block = HMACSHA256.mac(key: pseudorandomKey, secretPart: previous, info + [counter])
            let take = min(HMACSHA256.bytes, length - filled)
            output.withUnsafeMutableBytes { out in
                block.withUnsafeBytes { source in
                    (out.baseAddress! + filled).copyMemory(from: source.baseAddress!, byteCount: take)
                }
            }
            filled += take
            counter &+= 1
            previous = block
        }
        return output
    }
}

extension HMACSHA256 {
    /// HKDF's extract step: the salt is the (public) key and the secret the message.
    static func macWithPublicKey(_ key: [UInt8], prefix: [UInt8] = [], _ message: SecretBytes) -> SecretBytes {
        key.withUnsafeBytes { rawKey in
            mac(rawKey: rawKey) { state in
                if !prefix.isEmpty { _ = crypto_auth_hmacsha256_update(state, prefix, UInt64(prefix.count)) }
                message.withUnsafeBytes { part in
                    _ = crypto_auth_hmacsha256_update(state, part.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(part.count))
                }
            }
        }
    }
}

/// Ed25519 signatures (RFC 8032) and the conversion of Ed25519 keys to X25519 ones, for ssh keys.
public enum Ed25519 {
    public static let publicKeyBytes = 32
    public static let seedBytes = 32
    public static let signatureBytes = 64

    /// The key pair of a 32-byte seed: the public key, and libsodium's 64-byte secret key (seed ‖ public key).
    public static func keyPair(seed: SecretBytes) throws(PrimitiveError) -> (publicKey: [UInt8], secretKey: SecretBytes) {
        Sodium.ensureInitialized()
        guard seed.count == seedBytes else { throw .invalidInput }
        var publicKey = [UInt8](repeating: 0, count: publicKeyBytes)
        let secretKey = SecretBytes(count: Int(crypto_sign_ed25519_secretkeybytes()))
        let rc = secretKey.withUnsafeMutableBytes { out in
            seed.withUnsafeBytes { seedBytes in
                crypto_sign_ed25519_seed_keypair(&publicKey, out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                 seedBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard rc == 0 else { throw .invalidInput }
        return (publicKey, secretKey)
    }

    /// A detached signature of `message` (secret: a share's signed bytes hold the key) by a 64-byte libsodium secret key.
    public static func sign(_ message: SecretBytes, secretKey: SecretBytes) throws(PrimitiveError) -> [UInt8] {
        Sodium.ensureInitialized()
        guard secretKey.count == Int(crypto_sign_ed25519_secretkeybytes()) else { throw .invalidInput }
        var signature = [UInt8](repeating: 0, count: signatureBytes)
        let rc = secretKey.withUnsafeBytes { key in
            message.withUnsafeBytes { bytes in
                crypto_sign_ed25519_detached(&signature, nil, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count),
                                             key.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard rc == 0 else { throw .invalidInput }
        return signature
    }

    /// Whether `signature` is `publicKey`'s over `message`.
    public static func verify(_ signature: [UInt8], of message: SecretBytes, by publicKey: [UInt8]) -> Bool {
        Sodium.ensureInitialized()
        guard signature.count == signatureBytes, publicKey.count == publicKeyBytes else { return false }
        return message.withUnsafeBytes { bytes in
            crypto_sign_ed25519_verify_detached(signature, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count), publicKey)
        } == 0
    }

    /// The same for a secret signature over public bytes (an ssh slot's: the signature is the
    /// slot's secret, the signed challenge is not).
    public static func verify(secretSignature signature: SecretBytes, of message: [UInt8], by publicKey: [UInt8]) -> Bool {
        Sodium.ensureInitialized()
        guard signature.count == signatureBytes, publicKey.count == publicKeyBytes else { return false }
        return signature.withUnsafeBytes { raw in
            crypto_sign_ed25519_verify_detached(raw.baseAddress!.assumingMemoryBound(to: UInt8.self), message, UInt64(message.count), publicKey)
        } == 0
    }

    /// The X25519 public key of an Ed25519 public key (the birational map to Montgomery form).
    public static func montgomeryPublicKey(_ publicKey: [UInt8]) throws(PrimitiveError) -> [UInt8] {
        Sodium.ensureInitialized()
        guard publicKey.count == publicKeyBytes else { throw .invalidInput }
        var converted = [UInt8](repeating: 0, count: X25519.keyBytes)
        guard crypto_sign_ed25519_pk_to_curve25519(&converted, publicKey) == 0 else { throw .invalidInput }
        return converted
    }

    /// The X25519 secret scalar of an Ed25519 64-byte secret key (its seed hashed and clamped).
    public static func montgomerySecretKey(_ secretKey: SecretBytes) throws(PrimitiveError) -> SecretBytes {
        Sodium.ensureInitialized()
        guard secretKey.count == Int(crypto_sign_ed25519_secretkeybytes()) else { throw .invalidInput }
        let converted = SecretBytes(count: X25519.keyBytes)
        let rc = converted.withUnsafeMutableBytes { out in
            secretKey.withUnsafeBytes { key in
                crypto_sign_ed25519_sk_to_curve25519(out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                     key.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard rc == 0 else { throw .invalidInput }
        return converted
    }
}

/// SHA-512 from and into raw memory, so that OpenSSH's bcrypt_pbkdf can keep every
/// intermediate value of a passphrase in one secret buffer.
public enum SHA512 {
    public static let bytes = 64

    /// Writes the digest of `message` to the first 64 bytes at `digest`.
    public static func hash(_ message: UnsafeRawBufferPointer, into digest: UnsafeMutableRawPointer) {
        Sodium.ensureInitialized()
        let input = message.baseAddress?.assumingMemoryBound(to: UInt8.self)
        _ = crypto_hash_sha512(digest.assumingMemoryBound(to: UInt8.self), input, UInt64(message.count))
    }
}
