/// A key slot: the data key made reachable from a passphrase or the recovery code.
///
/// - kind 1, passphrase: the data key wrapped with XChaCha20-Poly1305 under a key derived
///   from the passphrase with Argon2id (102 bytes).
/// - kind 2, legacy recovery (format 1 vaults): the same construction with the recovery code.
///   It is carried as is until the data key changes, then replaced by kind 3.
/// - kind 3, recovery: the data key sealed (crypto_box_seal) to an X25519 public key whose
///   key pair is derived from the recovery code with Argon2id (142 bytes). Any writer can
///   seal a new data key to the public key; only the code opens it.
/// - kind 4, ssh-agent (format 3): the same sealed box, to a key pair derived from an
///   ssh-agent's signature over the slot's challenge (SSHSlot.swift).
public struct KeySlot: Equatable, Sendable {
    public enum Kind: UInt8, Sendable {
        case passphrase = 1
        case legacyRecovery = 2
        case recovery = 3
        case sshAgent = 4

        public var name: String {
            switch self {
            case .passphrase: "passphrase"
            case .legacyRecovery: "recovery (format 1)"
            case .recovery: "recovery"
            case .sshAgent: "ssh-agent"
            }
        }

        public var isRecovery: Bool { self == .legacyRecovery || self == .recovery }
    }

    static let argon2id13: UInt8 = 2
    static let sealedKeyBytes = 32 + 48

    public var kind: Kind
    public var kdf: KDFParameters
    var salt: [UInt8]
    /// The wrap nonce (kinds 1 and 2), or the X25519 public key (kinds 3 and 4).
    var nonceOrPublicKey: [UInt8]
    /// The wrapped data key with its tag (kinds 1 and 2), or the sealed box (kinds 3 and 4).
    var wrappedKey: [UInt8]
    /// Kind 4's ssh key (its salt is the challenge, and it has no KDF).
    var sshKey: SSHSlotKey? = nil

    /// What tells this slot from others of its kind across rekeys: its salt (an ssh slot's challenge).
    public var identity: [UInt8] { salt }

    /// Kind, algorithm, KDF parameters and salt: the first 30 bytes.
    var parameterBytes: [UInt8] {
        var writer = ByteWriter()
        writer.append(kind.rawValue)
        writer.append(Self.argon2id13)
        writer.append(kdf.opsLimit)
        writer.append(kdf.memLimit)
        writer.append(salt)
        return writer.bytes
    }

    var encoded: [UInt8] { kind == .sshAgent ? sshEncoded : parameterBytes + nonceOrPublicKey + wrappedKey }

    /// The wrap's additional data. "01 00" is the slot construction's version, the same in
    /// format 1 and 2 files, so a slot carries over unchanged when a vault is upgraded.
    var additionalData: [UInt8] { VaultFile.slotContext + VaultFile.magic + [1, 0] + parameterBytes }

    // MARK: Passphrase slots (and legacy recovery slots)

    /// Wraps `dataKey` under `kek`, which was derived for this slot's salt and parameters.
    static func wrap(dataKey: SecretBytes, kind: Kind, kek: SecretBytes, salt: [UInt8], kdf: KDFParameters) throws(VaultError) -> KeySlot {
        var slot = KeySlot(kind: kind, kdf: kdf, salt: salt, nonceOrPublicKey: Sodium.randomBytes(Sodium.xchachaNonceBytes), wrappedKey: [])
        let additionalData = slot.additionalData
        let nonce = slot.nonceOrPublicKey
        slot.wrappedKey = try mapSodium { () throws(SodiumError) in
            try dataKey.withUnsafeBytes { raw throws(SodiumError) in
                try Sodium.xchachaSeal(raw, additionalData: additionalData, nonce: nonce, key: kek)
            }
        }
        return slot
    }

    /// The key-encryption key for `secret` under this slot's salt and parameters.
    func deriveKey(from secret: SecretBytes) throws(VaultError) -> SecretBytes {
        try Self.derive(secret, salt: salt, kdf: kdf, purpose: .unlocking)
    }

    static func derive(_ secret: SecretBytes, salt: [UInt8], kdf: KDFParameters,
                       purpose: KeyDerivationProgress.Purpose = .sealing) throws(VaultError) -> SecretBytes {
        let end = KeyDerivationProgress.begin(purpose)
        defer { end() }
        return try mapSodium { () throws(SodiumError) in
            try Sodium.argon2id(secret: secret, salt: salt, opsLimit: UInt64(kdf.opsLimit), memLimit: kdf.memLimit,
                                outputBytes: Sodium.xchachaKeyBytes)
        }
    }

    /// The data key, or nil when `kek` does not open this slot.
    func unwrap(kek: SecretBytes) -> SecretBytes? {
        try? Sodium.xchachaOpen(wrappedKey[...], additionalData: additionalData, nonce: nonceOrPublicKey, key: kek)
    }

    // MARK: Recovery slots

    /// A recovery slot for a canonical code: derives the key pair, seals the data key.
    static func recovery(dataKey: SecretBytes, canonicalCode: SecretBytes, kdf: KDFParameters) throws(VaultError) -> KeySlot {
        let salt = Sodium.randomBytes(Sodium.pwhashSaltBytes)
        let seed = try derive(canonicalCode, salt: salt, kdf: kdf)
        let publicKey = try mapSodium { () throws(SodiumError) in try Sodium.boxKeyPair(seed: seed).publicKey }
        return try KeySlot(kind: .recovery, kdf: kdf, salt: salt, nonceOrPublicKey: publicKey, wrappedKey: [])
            .resealed(dataKey: dataKey)
    }

    /// The same recovery slot with a new data key sealed to its public key: no code needed.
    func resealed(dataKey: SecretBytes) throws(VaultError) -> KeySlot {
        precondition(kind == .recovery || kind == .sshAgent)
        var slot = self
        slot.wrappedKey = try mapSodium { () throws(SodiumError) in try Sodium.seal(dataKey, to: nonceOrPublicKey) }
        return slot
    }

    /// The data key, or nil when `canonicalCode` is not this slot's code.
    func openRecovery(canonicalCode: SecretBytes) throws(VaultError) -> SecretBytes? {
        try openRecovery(derived: try deriveKey(from: canonicalCode))
    }

    /// The same, with the code's key already derived for this slot's salt and parameters.
    func openRecovery(derived: SecretBytes) throws(VaultError) -> SecretBytes? {
        switch kind {
        case .passphrase, .sshAgent: return nil
        case .legacyRecovery: return unwrap(kek: derived)
        case .recovery:
            let pair = try mapSodium { () throws(SodiumError) in try Sodium.boxKeyPair(seed: derived) }
            guard pair.publicKey == nonceOrPublicKey else { return nil }
            return try? Sodium.openSealed(wrappedKey, publicKey: pair.publicKey, secretKey: pair.secretKey)
        }
    }
}
