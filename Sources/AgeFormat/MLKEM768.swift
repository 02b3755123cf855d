import VaultCore

/// ML-KEM-768 as final FIPS 203 defines it (k = 3, η₁ = η₂ = 2, d_u = 10, d_v = 4): key
/// generation from the 64-byte seed d ‖ z, encapsulation with the modulus check, decapsulation
/// with implicit rejection and a constant-time comparison. Decapsulation keys, seeds, messages
/// and shared secrets stay in secret memory.
public enum MLKEM768 {
    public static let seedBytes = 64
    public static let encapsulationKeyBytes = 1184
    public static let decapsulationKeyBytes = 2400
    public static let ciphertextBytes = 1088
    public static let sharedSecretBytes = 32
    static let k = 3
    static let polynomialBytes = 384
    static let publicKeyVectorBytes = 3 * 384

    /// The encapsulation key and the expanded decapsulation key (dk_PKE ‖ ek ‖ H(ek) ‖ z) of
    /// `seed` = d ‖ z (ML-KEM.KeyGen_internal, algorithm 16).
    public static func keyPair(seed: SecretBytes) -> (encapsulationKey: [UInt8], decapsulationKey: SecretBytes) {
        precondition(seed.count == seedBytes)
        let workspace = MLKEMWorkspace()
        let rho = generateKPKEKeys(d: seed.view(0..<32), in: workspace)
        var encapsulationKey = [UInt8](repeating: 0, count: encapsulationKeyBytes)
        encapsulationKey.withUnsafeMutableBytes { out in
            for i in 0..<k {
                ByteCoding.encode(workspace.t(i), bits: 12, into: UnsafeMutableRawBufferPointer(rebasing: out[(i * polynomialBytes)..<((i + 1) * polynomialBytes)]))
            }
            out[publicKeyVectorBytes...].copyBytes(from: rho)
        }
        let decapsulationKey = SecretBytes(count: decapsulationKeyBytes)
        decapsulationKey.withUnsafeMutableBytes { out in
            for i in 0..<k {
                ByteCoding.encode(workspace.secret(i), bits: 12, into: UnsafeMutableRawBufferPointer(rebasing: out[(i * polynomialBytes)..<((i + 1) * polynomialBytes)]))
            }
            var position = publicKeyVectorBytes
            out[position..<(position + encapsulationKeyBytes)].copyBytes(from: encapsulationKey)
            position += encapsulationKeyBytes
            out[position..<(position + 32)].copyBytes(from: Keccak.sha3_256(encapsulationKey))
            position += 32
            seed.withUnsafeBytes { out[position..<(position + 32)].copyBytes(from: $0[32..<64]) }
        }
        return (encapsulationKey, decapsulationKey)
    }

    /// Whether every coefficient of the key is reduced modulo q (FIPS 203, section 7.2).
    public static func passesModulusCheck(_ encapsulationKey: [UInt8]) -> Bool {
        guard encapsulationKey.count == encapsulationKeyBytes else { return false }
        return encapsulationKey.withUnsafeBytes { raw in
            var index = 0
            while index + 3 <= publicKeyVectorBytes {
                let d1 = UInt16(raw[index]) | UInt16(raw[index + 1] & 0x0f) << 8
                let d2 = UInt16(raw[index + 1] >> 4) | UInt16(raw[index + 2]) << 4
                if d1 >= 3329 || d2 >= 3329 { return false }
                index += 3
            }
            return true
        }
    }

    /// ML-KEM.Encaps (algorithm 20), or with `message` given, Encaps_internal (algorithm 17).
    public static func encapsulate(to encapsulationKey: [UInt8], message: SecretBytes? = nil)
        throws(PrimitiveError) -> (sharedSecret: SecretBytes, ciphertext: [UInt8]) {
        guard passesModulusCheck(encapsulationKey) else { throw .invalidInput }
        let m = message ?? SecretBytes.random(count: 32)
        precondition(m.count == 32)
        var g = Keccak(.sha3_512)
        g.absorb(m)
        g.absorb(Keccak.sha3_256(encapsulationKey))
        let kr = g.finishSecret(count: 64)
        let ciphertext = encrypt(encapsulationKey[...], message: m, randomness: kr.view(32..<64), in: MLKEMWorkspace())
        return (SecretBytes(slicing: kr, range: 0..<32), ciphertext)
    }

    /// ML-KEM.Decaps (algorithms 18 and 21): the shared secret, or for a ciphertext that does
    /// not re-encrypt to itself, the implicit rejection J(z ‖ c), told apart in constant time.
    public static func decapsulate(_ ciphertext: [UInt8], with decapsulationKey: SecretBytes) throws(PrimitiveError) -> SecretBytes {
        guard ciphertext.count == ciphertextBytes, decapsulationKey.count == decapsulationKeyBytes else { throw .invalidInput }
        let workspace = MLKEMWorkspace()
        let message = decrypt(ciphertext, key: decapsulationKey.view(0..<publicKeyVectorBytes), in: workspace)
        let hashOffset = publicKeyVectorBytes + encapsulationKeyBytes
        var g = Keccak(.sha3_512)
        g.absorb(message)
        g.absorb(decapsulationKey.view(hashOffset..<(hashOffset + 32)))
        let kr = g.finishSecret(count: 64)
        var j = Keccak(.shake256)
        j.absorb(decapsulationKey.view((hashOffset + 32)..<(hashOffset + 64)))
        j.absorb(ciphertext)
        let rejection = j.finishSecret(count: 32)
        let encapsulationKey = decapsulationKey.withUnsafeBytes { Array($0[publicKeyVectorBytes..<hashOffset]) }
        // For a forged ciphertext the re-encryption depends on the secret key: wiped after use.
        var reencrypted = encrypt(encapsulationKey[...], message: message, randomness: kr.view(32..<64), in: workspace)
        defer { SecretBytes.wipe(&reencrypted) }
        let mask = equalityMask(ciphertext, reencrypted)
        let sharedSecret = SecretBytes(count: 32)
        sharedSecret.withUnsafeMutableBytes { out in
            kr.withUnsafeBytes { accepted in
                rejection.withUnsafeBytes { rejected in
                    for index in 0..<32 { out[index] = accepted[index] & mask | rejected[index] & ~mask }
                }
            }
        }
        return sharedSecret
    }

    /// 0xff when `a` equals `b`, else 0, without a branch on the bytes.
    static func equalityMask(_ a: [UInt8], _ b: [UInt8]) -> UInt8 {
        precondition(a.count == b.count)
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        let isEqual = UInt8(truncatingIfNeeded: (UInt32(difference) &- 1) >> 31)
        return 0 &- isEqual
    }
}
