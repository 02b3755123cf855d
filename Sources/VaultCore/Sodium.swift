internal import CSodium

/// The only place that calls libsodium. Every return code becomes a thrown error.
public enum Sodium {
    /// `sodium_init` runs once, on first use of any wrapper.
    private static let initialized: Bool = sodium_init() >= 0

    static func ensureInitialized() {
        precondition(initialized, "libsodium failed to initialise")
    }

    static let xchachaKeyBytes = Int(crypto_aead_xchacha20poly1305_ietf_keybytes())
    static let xchachaNonceBytes = Int(crypto_aead_xchacha20poly1305_ietf_npubbytes())
    static let xchachaTagBytes = Int(crypto_aead_xchacha20poly1305_ietf_abytes())
    static let pwhashSaltBytes = Int(crypto_pwhash_saltbytes())
    static let pwhashAlgorithmArgon2id13 = Int(crypto_pwhash_alg_argon2id13())

    /// Random bytes for salts and nonces. The corresponding libsodium function is `randombytes_buf`.
    static func randomBytes(_ count: Int) -> [UInt8] {
        ensureInitialized()
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, count) }
        return bytes
    }

    /// Fills secret memory with random bytes. The corresponding libsodium function is `randombytes_buf`.
    static func fillRandom(_ secret: SecretBytes) {
        ensureInitialized()
        secret.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
    }

    /// A uniformly random number below `bound`. The corresponding libsodium function is `randombytes_uniform`.
    static func randomUniform(_ bound: UInt32) -> UInt32 {
        ensureInitialized()
        return randombytes_uniform(bound)
    }

    /// Argon2id13 key derivation. The corresponding libsodium function is `crypto_pwhash`.
    static func argon2id(secret: SecretBytes, salt: [UInt8], opsLimit: UInt64, memLimit: UInt64, outputBytes: Int) throws(SodiumError) -> SecretBytes {
        ensureInitialized()
        guard salt.count == pwhashSaltBytes, secret.count > 0 else { throw .invalidInput("salt or secret length") }
        let output = SecretBytes(count: outputBytes)
        func derive() -> Int32 {
            output.withUnsafeMutableBytes { out in
                secret.withUnsafeBytes { input in
                    crypto_pwhash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(outputBytes),
                                  input.baseAddress!.assumingMemoryBound(to: CChar.self), UInt64(input.count), salt,
                                  opsLimit, Int(memLimit), crypto_pwhash_alg_argon2id13())
                }
            }
        }
        // Its working memory locked where the limits allow (DerivationMemory); a locked
        // mapping refused by the limit after all is retried as the limits leave it.
        var rc = DerivationMemory.withLockedMappings(bytes: memLimit) { _ in derive() }
        if rc != 0 { rc = derive() }
        guard rc == 0 else { throw .outOfMemory }
        return output
    }

    /// Seals `plaintext`, returning ciphertext followed by the 16-byte tag.
    /// The corresponding libsodium function is `crypto_aead_xchacha20poly1305_ietf_encrypt`.
    static func xchachaSeal(_ plaintext: UnsafeRawBufferPointer, additionalData: [UInt8], nonce: [UInt8], key: SecretBytes) throws(SodiumError) -> [UInt8] {
        ensureInitialized()
        guard nonce.count == xchachaNonceBytes, key.count == xchachaKeyBytes else { throw .invalidInput("nonce or key length") }
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + xchachaTagBytes)
        var written: UInt64 = 0
        let rc = ciphertext.withUnsafeMutableBufferPointer { out in
            key.withUnsafeBytes { keyBytes in
                crypto_aead_xchacha20poly1305_ietf_encrypt(
                    out.baseAddress!, &written,
                    plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                    additionalData, UInt64(additionalData.count), nil, nonce,
                    keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard rc == 0, Int(written) == ciphertext.count else { throw .invalidInput("encryption failed") }
        return ciphertext
    }

    /// Opens a sealed box into secret memory; throws `.authenticationFailed` when the tag does not verify.
    /// The corresponding libsodium function is `crypto_aead_xchacha20poly1305_ietf_decrypt`.
    static func xchachaOpen(_ ciphertext: ArraySlice<UInt8>, additionalData: [UInt8], nonce: [UInt8], key: SecretBytes) throws(SodiumError) -> SecretBytes {
        ensureInitialized()
        guard nonce.count == xchachaNonceBytes, key.count == xchachaKeyBytes else { throw .invalidInput("nonce or key length") }
        guard ciphertext.count >= xchachaTagBytes else { throw .authenticationFailed }
        let plaintext = SecretBytes(count: ciphertext.count - xchachaTagBytes)
        var written: UInt64 = 0
        let rc = ciphertext.withUnsafeBufferPointer { input in
            plaintext.withUnsafeMutableBytes { out in
                key.withUnsafeBytes { keyBytes in
                    crypto_aead_xchacha20poly1305_ietf_decrypt(
                        out.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafeMutablePointer(mutating: input.baseAddress!),
                        &written, nil, input.baseAddress!, UInt64(input.count),
                        additionalData, UInt64(additionalData.count), nonce,
                        keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        guard rc == 0 else { throw .authenticationFailed }
        return plaintext
    }

    static let boxPublicKeyBytes = Int(crypto_box_publickeybytes())

    /// An X25519 key pair from a 32-byte seed. The corresponding libsodium function is `crypto_box_seed_keypair`.
    static func boxKeyPair(seed: SecretBytes) throws(SodiumError) -> (publicKey: [UInt8], secretKey: SecretBytes) {
        ensureInitialized()
        guard seed.count == Int(crypto_box_seedbytes()) else { throw .invalidInput("seed length") }
        var publicKey = [UInt8](repeating: 0, count: boxPublicKeyBytes)
        let secretKey = SecretBytes(count: Int(crypto_box_secretkeybytes()))
        let rc = secretKey.withUnsafeMutableBytes { secret in
            seed.withUnsafeBytes { seedBytes in
                crypto_box_seed_keypair(&publicKey, secret.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                        seedBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard rc == 0 else { throw .invalidInput("key pair") }
        return (publicKey, secretKey)
    }

    /// An anonymous sealed box to `publicKey`. The corresponding libsodium function is `crypto_box_seal`.
    static func seal(_ message: SecretBytes, to publicKey: [UInt8]) throws(SodiumError) -> [UInt8] {
        ensureInitialized()
        guard publicKey.count == boxPublicKeyBytes else { throw .invalidInput("public key length") }
        var sealed = [UInt8](repeating: 0, count: message.count + Int(crypto_box_sealbytes()))
        let rc = message.withUnsafeBytes { plain in
            crypto_box_seal(&sealed, plain.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(plain.count), publicKey)
        }
        guard rc == 0 else { throw .invalidInput("seal") }
        return sealed
    }

    /// Opens a sealed box. The corresponding libsodium function is `crypto_box_seal_open`.
    static func openSealed(_ sealed: [UInt8], publicKey: [UInt8], secretKey: SecretBytes) throws(SodiumError) -> SecretBytes {
        ensureInitialized()
        let overhead = Int(crypto_box_sealbytes())
        guard sealed.count > overhead, publicKey.count == boxPublicKeyBytes else { throw .authenticationFailed }
        let message = SecretBytes(count: sealed.count - overhead)
        let rc = message.withUnsafeMutableBytes { out in
            secretKey.withUnsafeBytes { secret in
                crypto_box_seal_open(out.baseAddress!.assumingMemoryBound(to: UInt8.self), sealed, UInt64(sealed.count), publicKey,
                                     secret.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard rc == 0 else { throw .authenticationFailed }
        return message
    }

    /// Opens a sealed box into `out`, which holds exactly the message's length, without
    /// allocating: many records can be opened into one guarded allocation.
    static func openSealed(_ sealed: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer,
                           publicKey: [UInt8], secretKey: SecretBytes) -> Bool {
        ensureInitialized()
        guard sealed.count > sealedBoxOverhead, out.count == sealed.count - sealedBoxOverhead, publicKey.count == boxPublicKeyBytes else { return false }
        return secretKey.withUnsafeBytes { secret in
            crypto_box_seal_open(out.baseAddress!.assumingMemoryBound(to: UInt8.self), sealed.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                 UInt64(sealed.count), publicKey, secret.baseAddress!.assumingMemoryBound(to: UInt8.self))
        } == 0
    }

    static let sealedBoxOverhead = Int(crypto_box_sealbytes())

    /// Unkeyed BLAKE2b with a 32-byte digest. The corresponding libsodium function is `crypto_generichash`.
    public static func blake2b256(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        ensureInitialized()
        var digest = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeBufferPointer { input in
            _ = crypto_generichash(&digest, 32, input.baseAddress, UInt64(input.count), nil, 0)
        }
        return digest
    }

    /// Keyed BLAKE2b with a 32-byte digest, into secret memory: a subkey for one purpose.
    /// The corresponding libsodium function is `crypto_generichash` with a key.
    static func keyedHash(_ message: [UInt8], key: SecretBytes) throws(SodiumError) -> SecretBytes {
        ensureInitialized()
        guard key.count >= Int(crypto_generichash_keybytes_min()), key.count <= Int(crypto_generichash_keybytes_max()) else {
            throw .invalidInput("key length")
        }
        let digest = SecretBytes(count: 32)
        let rc = digest.withUnsafeMutableBytes { out in
            key.withUnsafeBytes { keyBytes in
                crypto_generichash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), 32, message, UInt64(message.count),
                                   keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), keyBytes.count)
            }
        }
        guard rc == 0 else { throw .invalidInput("keyed hash") }
        return digest
    }

    /// BLAKE2b-256 of a secret under a 32-byte key, into secret memory.
    static func digest(_ secret: SecretBytes, key: [UInt8]) throws(SodiumError) -> SecretBytes {
        ensureInitialized()
        let digest = SecretBytes(count: 32)
        let rc = digest.withUnsafeMutableBytes { out in
            secret.withUnsafeBytes { message in
                crypto_generichash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), 32, message.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                   UInt64(message.count), key, key.count)
            }
        }
        guard rc == 0 else { throw .invalidInput("digest") }
        return digest
    }

    /// Allocates guarded, locked memory. The corresponding libsodium function is `sodium_malloc`.
    static func allocate(_ count: Int) -> UnsafeMutableRawPointer {
        guard let pointer = allocateIfAvailable(count) else { fatalError("sodium_malloc failed") }
        return pointer
    }

    /// `allocate`, or nil when the memory is not there (a count beyond what the process may map).
    static func allocateIfAvailable(_ count: Int) -> UnsafeMutableRawPointer? {
        ensureInitialized()
        guard count >= 0, let pointer = DerivationMemory.allocate({ sodium_malloc(max(count, 1)) }, count: count) else { return nil }
        sodium_memzero(pointer, max(count, 1))
        return pointer
    }

    /// Wipes and frees memory from `allocate`. The corresponding libsodium function is `sodium_free`.
    static func free(_ pointer: UnsafeMutableRawPointer) { DerivationMemory.free(pointer) { sodium_free($0) } }

    /// Zeroes memory in a way the compiler cannot elide. The corresponding libsodium function is `sodium_memzero`.
    static func wipe(_ pointer: UnsafeMutableRawPointer, _ count: Int) { sodium_memzero(pointer, count) }

    /// Constant-time equality. The corresponding libsodium function is `sodium_memcmp`.
    static func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        if a.count == 0 { return true }
        return sodium_memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
    }

    /// ISO/IEC 7816-4 padding up to a multiple of `blockSize`, in place; returns the padded length.
    /// The corresponding libsodium function is `sodium_pad`.
    static func pad(_ buffer: UnsafeMutableRawBufferPointer, unpaddedLength: Int, blockSize: Int) throws(SodiumError) -> Int {
        var padded = 0
        let rc = sodium_pad(&padded, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), unpaddedLength, blockSize, buffer.count)
        guard rc == 0 else { throw .invalidInput("padding") }
        return padded
    }

    /// The length before padding. The corresponding libsodium function is `sodium_unpad`.
    static func unpad(_ buffer: UnsafeRawBufferPointer, blockSize: Int) throws(SodiumError) -> Int {
        var unpadded = 0
        guard buffer.count > 0 else { throw .invalidInput("padding") }
        let rc = sodium_unpad(&unpadded, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), buffer.count, blockSize)
        guard rc == 0 else { throw .invalidInput("padding") }
        return unpadded
    }

    /// The linked libsodium's version string. The corresponding libsodium function is `sodium_version_string`.
    static var versionString: String { String(cString: sodium_version_string()) }
}

/// A libsodium call that failed.
enum SodiumError: Error, Equatable {
    case authenticationFailed
    case outOfMemory
    case invalidInput(String)
}

extension Sodium {
    /// SHA-256, for naming attached files the way `sha256sum` does (`crypto_hash_sha256`).
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        ensureInitialized()
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        _ = crypto_hash_sha256(&digest, bytes, UInt64(bytes.count))
        return digest
    }

    /// Standard base64 with padding (RFC 4648 §4), as JSON APIs and OSC 52 want it.
    public static func base64(_ bytes: [UInt8]) -> String {
        ensureInitialized()
        let variant = Int32(sodium_base64_VARIANT_ORIGINAL)
        let capacity = sodium_base64_encoded_len(bytes.count, variant)
        var text = [CChar](repeating: 0, count: capacity)
        _ = sodium_bin2base64(&text, capacity, bytes, bytes.count, variant)
        return text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// The bytes of standard, padded base64, or nil when `text` is not that.
    public static func bytes(base64 text: String) -> [UInt8]? {
        ensureInitialized()
        let input = Array(text.utf8)
        var output = [UInt8](repeating: 0, count: input.count / 4 * 3 + 3)
        var length = 0
        let rc = input.withUnsafeBufferPointer { raw in
            raw.withMemoryRebound(to: CChar.self) { chars in
                sodium_base642bin(&output, output.count, chars.baseAddress, input.count, nil, &length, nil, Int32(sodium_base64_VARIANT_ORIGINAL))
            }
        }
        return rc == 0 ? Array(output.prefix(length)) : nil
    }

    /// Standard, padded base64 of a secret, written into secret memory (no terminating NUL).
    public static func base64(secret: SecretBytes) -> SecretBytes {
        ensureInitialized()
        let variant = Int32(sodium_base64_VARIANT_ORIGINAL)
        let capacity = sodium_base64_encoded_len(secret.count, variant)
        let text = SecretBytes(count: capacity)
        text.withUnsafeMutableBytes { out in
            secret.withUnsafeBytes { input in
                _ = sodium_bin2base64(out.baseAddress!.assumingMemoryBound(to: CChar.self), capacity,
                                      input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, variant)
            }
        }
        text.truncate(to: capacity - 1)
        return text
    }

    /// The bytes of standard, padded base64 held in secret memory, decoded into secret memory;
    /// nil when it is not that.
    public static func secret(base64 text: SecretBytes) -> SecretBytes? {
        ensureInitialized()
        let output = SecretBytes(count: text.count / 4 * 3 + 3)
        var length = 0
        let rc = output.withUnsafeMutableBytes { out in
            text.withUnsafeBytes { input in
                sodium_base642bin(out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count, input.baseAddress?.assumingMemoryBound(to: CChar.self),
                                  input.count, nil, &length, nil, Int32(sodium_base64_VARIANT_ORIGINAL))
            }
        }
        guard rc == 0 else { return nil }
        output.truncate(to: length)
        return output
    }

    /// Lowercase hex, two digits a byte.
    public static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// A short hex fingerprint of a name (BLAKE2b), for file names derived from paths.
    public static func fingerprint(_ text: String, bytes: Int = 8) -> String {
        hex(blake2b256(Array(text.utf8)[...]).prefix(bytes))
    }

    /// Lowercase hex, written by hand: `map` and `joined` make the Swift runtime look their types
    /// up on first use, which cost every command more than the work itself (Docs/performance.md).
    static func hex(_ bytes: ArraySlice<UInt8>) -> String {
        let digits: StaticString = "0123456789abcdef"
        var text: [UInt8] = []
        text.reserveCapacity(2 * bytes.count)
        for byte in bytes {
            text.append(digits.utf8Start[Int(byte >> 4)])
            text.append(digits.utf8Start[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// Anonymous sealed boxes (crypto_box_seal) to an X25519 key pair derived from a 32-byte
/// seed: anyone with the public key can seal, only the seed's holder can open.
public enum SealedBox {
    public struct KeyPair: Sendable {
        public let publicKey: [UInt8]
        let secretKey: SecretBytes
    }

    public static func keyPair(seed: SecretBytes) throws(VaultError) -> KeyPair {
        let pair = try mapSodium { () throws(SodiumError) in try Sodium.boxKeyPair(seed: seed) }
        return KeyPair(publicKey: pair.publicKey, secretKey: pair.secretKey)
    }

    /// A pair derived from a secret for one purpose (BLAKE2b of the secret, keyed by the
    /// purpose's hash): whoever holds the secret derives it again; nobody else can.
    public static func keyPair(derivedFrom secret: SecretBytes, purpose: String) throws(VaultError) -> KeyPair {
        let seed = try mapSodium { () throws(SodiumError) in try Sodium.digest(secret, key: Sodium.blake2b256(Array(purpose.utf8)[...])) }
        return try keyPair(seed: seed)
    }

    public static func seal(_ message: [UInt8], to publicKey: [UInt8]) throws(VaultError) -> [UInt8] {
        try mapSodium { () throws(SodiumError) in try Sodium.seal(SecretBytes(copying: message), to: publicKey) }
    }

    /// What a box adds to its message.
    public static var overhead: Int { Sodium.sealedBoxOverhead }

    /// Opens `sealed` into `out` (secret memory of exactly `sealed.count - overhead` bytes);
    /// false when the box was not sealed to this pair or was altered.
    public static func open(_ sealed: UnsafeRawBufferPointer, with pair: KeyPair, into out: UnsafeMutableRawBufferPointer) -> Bool {
        Sodium.openSealed(sealed, into: out, publicKey: pair.publicKey, secretKey: pair.secretKey)
    }
}

extension SealedBox.KeyPair {
    /// Encrypts bytes that only this pair's holder reads back (XChaCha20-Poly1305 under a
    /// subkey of the secret key, keyed BLAKE2b of `purpose`): nonce, then ciphertext and tag.
    public func sealPrivately(_ message: [UInt8], purpose: String) throws(VaultError) -> [UInt8] {
        let key = try privateKey(purpose)
        let nonce = Sodium.randomBytes(Sodium.xchachaNonceBytes)
        let plain = SecretBytes(copying: message)
        return nonce + (try mapSodium { () throws(SodiumError) in
            try plain.withUnsafeBytes { raw throws(SodiumError) in
                try Sodium.xchachaSeal(raw, additionalData: Array(purpose.utf8), nonce: nonce, key: key)
            }
        })
    }

    /// What `sealPrivately` sealed for the same purpose, or nil when it was altered or is another's.
    public func openPrivately(_ sealed: [UInt8], purpose: String) -> SecretBytes? {
        guard sealed.count >= Sodium.xchachaNonceBytes + Sodium.xchachaTagBytes, let key = try? privateKey(purpose) else { return nil }
        return try? Sodium.xchachaOpen(sealed[Sodium.xchachaNonceBytes...], additionalData: Array(purpose.utf8),
                                       nonce: Array(sealed.prefix(Sodium.xchachaNonceBytes)), key: key)
    }

    private func privateKey(_ purpose: String) throws(VaultError) -> SecretBytes {
        try mapSodium { () throws(SodiumError) in try Sodium.keyedHash(Array(purpose.utf8), key: secretKey) }
    }
}
