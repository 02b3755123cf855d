import VaultCore

/// The hybrid KEMs of hpke-pq.md (draft-ietf-hpke-pq): ML-KEM-768 combined with X25519
/// (MLKEM768-X25519, i.e. X-Wing) or with P-256 (MLKEM768-P256). A private key is a 32-byte
/// seed, expanded by SHAKE256 into ML-KEM's d ‖ z and the group's scalar; the shared secret is
/// SHA3-256(ss_PQ ‖ ss_T ‖ ct_T ‖ ek_T ‖ Label).
struct HybridKEM: Sendable {
    enum Group: Sendable { case x25519, p256 }
    let group: Group

    static let mlkem768x25519 = HybridKEM(group: .x25519)
    static let mlkem768p256 = HybridKEM(group: .p256)
    static let seedBytes = 32

    var kemID: UInt16 { group == .x25519 ? 0x647a : 0x0050 }
    var label: [UInt8] { group == .x25519 ? [0x5c, 0x2e, 0x2f, 0x2f, 0x5e, 0x5c] : Array("MLKEM768-P256".utf8) }
    /// Group.Nelem and Group.Nseed.
    var elementBytes: Int { group == .x25519 ? 32 : 65 }
    var groupSeedBytes: Int { group == .x25519 ? 32 : 128 }
    var encBytes: Int { MLKEM768.ciphertextBytes + elementBytes }
    var publicKeyBytes: Int { MLKEM768.encapsulationKeyBytes + elementBytes }

    /// The parts of a seed: ek_PQ ‖ ek_T, ML-KEM's decapsulation key and the group scalar.
    struct ExpandedKey: Sendable {
        let publicKey: [UInt8]
        let mlkemKey: SecretBytes
        let groupScalar: SecretBytes
    }

    /// expandKey (hpke-pq.md).
    func expand(seed: SecretBytes) throws(PrimitiveError) -> ExpandedKey {
        guard seed.count == Self.seedBytes else { throw .invalidInput }
        var shake = Keccak(.shake256)
        shake.absorb(seed)
        let full = shake.finishSecret(count: MLKEM768.seedBytes + groupSeedBytes)
        let (encapsulationKey, decapsulationKey) = MLKEM768.keyPair(seed: full.view(0..<MLKEM768.seedBytes))
        let scalar = try groupScalar(from: full.view(MLKEM768.seedBytes..<full.count))
        return ExpandedKey(publicKey: encapsulationKey + (try groupPublicKey(scalar)), mlkemKey: decapsulationKey, groupScalar: scalar)
    }

    /// Encaps, or EncapsDerand with `randomness` for the vectors: 32 bytes for ML-KEM, then the
    /// group's seed (Nrandom is 32 + Group.Nseed; hpke-pq's P-256 vectors give 3 scalar windows, not 4).
    func encapsulate(to publicKey: [UInt8], randomness: SecretBytes? = nil) throws(PrimitiveError) -> (sharedSecret: SecretBytes, enc: [UInt8]) {
        guard publicKey.count == publicKeyBytes else { throw .invalidInput }
        let mlkemKey = Array(publicKey[0..<MLKEM768.encapsulationKeyBytes])
        let groupKey = Array(publicKey[MLKEM768.encapsulationKeyBytes...])
        let random = randomness ?? SecretBytes.random(count: 32 + groupSeedBytes)
        guard random.count >= 64, random.count <= 32 + groupSeedBytes, random.count % 32 == 0 else { throw .invalidInput }
        let (pqShared, pqCiphertext) = try MLKEM768.encapsulate(to: mlkemKey, message: random.view(0..<32))
        let ephemeral = try groupScalar(from: random.view(32..<random.count))
        let groupCiphertext = try groupPublicKey(ephemeral)
        let groupShared = try self.groupShared(groupKey, ephemeral)
        return (combine(pqShared, groupShared, groupCiphertext, groupKey), pqCiphertext + groupCiphertext)
    }

    /// Decaps with an expanded key. Throws `.lowOrderPoint` when the group share gives X25519's
    /// all-zero secret, `.invalidInput` for a share that is not a point.
    func decapsulate(_ enc: [UInt8], with key: ExpandedKey) throws(PrimitiveError) -> SecretBytes {
        guard enc.count == encBytes else { throw .invalidInput }
        let pqShared = try MLKEM768.decapsulate(Array(enc[0..<MLKEM768.ciphertextBytes]), with: key.mlkemKey)
        let groupCiphertext = Array(enc[MLKEM768.ciphertextBytes...])
        let groupShared = try self.groupShared(groupCiphertext, key.groupScalar)
        return combine(pqShared, groupShared, groupCiphertext, Array(key.publicKey[MLKEM768.encapsulationKeyBytes...]))
    }

    private func combine(_ pqShared: SecretBytes, _ groupShared: SecretBytes, _ groupCiphertext: [UInt8], _ groupKey: [UInt8]) -> SecretBytes {
        var hash = Keccak(.sha3_256)
        hash.absorb(pqShared)
        hash.absorb(groupShared)
        hash.absorb(groupCiphertext)
        hash.absorb(groupKey)
        hash.absorb(label)
        return hash.finishSecret(count: 32)
    }

    private func groupScalar(from seed: SecretBytes) throws(PrimitiveError) -> SecretBytes {
        group == .x25519 ? SecretBytes(slicing: seed, range: 0..<32) : try P256.scalar(from: seed)
    }

    private func groupPublicKey(_ scalar: SecretBytes) throws(PrimitiveError) -> [UInt8] {
        group == .x25519 ? try X25519.publicKey(of: scalar) : try P256.multiply(nil, scalar)
    }

    private func groupShared(_ point: [UInt8], _ scalar: SecretBytes) throws(PrimitiveError) -> SecretBytes {
        group == .x25519 ? try X25519.sharedSecret(scalar, point) : try P256.sharedX(point, scalar)
    }

    /// DeriveKeyPair's seed: SHAKE256.LabeledDerive(ikm, "DeriveKeyPair", "", 32), for the vectors.
    func derivedSeed(_ ikm: [UInt8]) -> SecretBytes {
        let suite = Array("KEM".utf8) + HPKE.i2osp(Int(kemID), 2)
        let label = Array("DeriveKeyPair".utf8)
        var shake = Keccak(.shake256)
        shake.absorb(ikm)
        shake.absorb(Array("HPKE-v1".utf8) + suite + HPKE.i2osp(label.count, 2) + label + HPKE.i2osp(Self.seedBytes, 2))
        return shake.finishSecret(count: Self.seedBytes)
    }
}
