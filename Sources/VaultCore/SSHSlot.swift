/// The ssh key an ssh-agent slot (kind 4) was made with: its algorithm and the SHA-256 of its
/// public key blob, never the signature.
public struct SSHSlotKey: Equatable, Sendable {
    /// Only deterministic signatures can hold a slot: the same challenge must always give the
    /// same key.
    public enum Algorithm: UInt8, Sendable, CaseIterable {
        case ed25519 = 1
        /// Signed with rsa-sha2-512 (PKCS #1 v1.5, deterministic).
        case rsa = 2

        /// The public key's type in ssh's wire format.
        public var keyType: String {
            switch self {
            case .ed25519: "ssh-ed25519"
            case .rsa: "ssh-rsa"
            }
        }

        /// The signature's type the agent must answer with.
        public var signatureType: String {
            switch self {
            case .ed25519: "ssh-ed25519"
            case .rsa: "rsa-sha2-512"
            }
        }

        public init?(keyType: String) {
            guard let known = Self.allCases.first(where: { $0.keyType == keyType }) else { return nil }
            self = known
        }
    }

    public let algorithm: Algorithm
    /// SHA-256 of the public key blob, as `ssh-keygen -l` shows it.
    public let fingerprint: [UInt8]
    /// When the slot was added (Unix seconds).
    public let added: Int64

    public init(algorithm: Algorithm, fingerprint: [UInt8], added: Int64) {
        self.algorithm = algorithm
        self.fingerprint = fingerprint
        self.added = added
    }

    /// `SHA256:` and the unpadded base64 of the fingerprint, as OpenSSH writes it.
    public var fingerprintText: String { Self.fingerprintText(fingerprint) }

    public static func fingerprintText(_ digest: [UInt8]) -> String {
        "SHA256:" + String(Sodium.base64(digest).prefix { $0 != "=" })
    }
}

/// The key pair an ssh-agent's signature derives for one ssh slot: it opens that slot while
/// the slot is unchanged, whatever data key the slot holds now (so a read and a later write
/// cost one signature).
public struct SSHSlotOpener {
    let challenge: [UInt8]
    let publicKey: [UInt8]
    let secretKey: SecretBytes

    /// The data key of `file`'s slot made with the same challenge, or nil.
    func dataKey(in file: VaultFile) -> SecretBytes? {
        guard let slot = file.slots.first(where: { $0.kind == .sshAgent && $0.salt == challenge && $0.nonceOrPublicKey == publicKey }) else { return nil }
        return try? Sodium.openSealed(slot.wrappedKey, publicKey: publicKey, secretKey: secretKey)
    }
}

/// Kind 4: the data key sealed (crypto_box_seal) to an X25519 key pair whose seed is
/// HKDF-SHA-256 of an ssh-agent's signature over a random challenge. Like the recovery slot,
/// any writer can seal a new data key to the public key, so passwd, rekey and recover keep it.
///
/// Layout (186 bytes): kind, algorithm, fingerprint (32), added (u64), challenge (32),
/// X25519 public key (32), sealed data key (80). The challenge sits where other slots keep
/// their salt.
extension KeySlot {
    public static let sshSlotBytes = 2 + 32 + 8 + 32 + 32 + sealedKeyBytes
    /// At most this many ssh slots, beside the passphrase and recovery slots.
    public static let maxSSHSlots = 8
    static let sshChallengeBytes = 32
    /// What every signed message starts with: no ssh authentication request does (those
    /// start with a length), so a slot's signature can be asked for nothing else.
    static let sshContext = Array("gemvault ssh slot v1\n".utf8)
    static let sshNoKDF = KDFParameters(opsLimit: 0, memLimit: 0)
    /// 9999-12-31T23:59:59Z: a slot's date is shown, so it must be one.
    static let latestDate: Int64 = 253_402_300_799

    /// A fresh challenge for a new slot.
    public static func newSSHChallenge() -> [UInt8] { Sodium.randomBytes(sshChallengeBytes) }

    /// The bytes the ssh-agent signs for a challenge.
    public static func sshMessage(challenge: [UInt8]) -> [UInt8] { sshContext + challenge }

    /// The bytes the ssh-agent signs for this slot.
    public var sshMessage: [UInt8] { Self.sshMessage(challenge: salt) }

    /// The ssh key this slot was made with (kind 4 only).
    public var sshSlotKey: SSHSlotKey? { sshKey }

    /// The key pair a signature derives for a slot with this challenge and key.
    static func sshKeyPair(signature: SecretBytes, challenge: [UInt8], key: SSHSlotKey) throws(VaultError) -> (publicKey: [UInt8], secretKey: SecretBytes) {
        let info = Array("gemvault ssh slot v1".utf8) + [key.algorithm.rawValue] + key.fingerprint
        let seed = HKDFSHA256.derive(secret: signature, salt: challenge, info: info, length: 32)
        return try mapSodium { () throws(SodiumError) in try Sodium.boxKeyPair(seed: seed) }
    }

    /// A new ssh slot holding `dataKey`, for the signature of `sshMessage(challenge:)`.
    static func ssh(dataKey: SecretBytes, key: SSHSlotKey, challenge: [UInt8], signature: SecretBytes) throws(VaultError) -> KeySlot {
        let pair = try sshKeyPair(signature: signature, challenge: challenge, key: key)
        return try KeySlot(kind: .sshAgent, kdf: sshNoKDF, salt: challenge, nonceOrPublicKey: pair.publicKey, wrappedKey: [], sshKey: key)
            .resealed(dataKey: dataKey)
    }

    /// What opens this slot, from the signature of `sshMessage`; nil when it is not this
    /// slot's signature (another key).
    public func sshOpener(signature: SecretBytes) throws(VaultError) -> SSHSlotOpener? {
        guard kind == .sshAgent, let sshKey else { return nil }
        let pair = try Self.sshKeyPair(signature: signature, challenge: salt, key: sshKey)
        // The public key is the slot's only for this signature; the sealed box is opened once,
        // by the vault's open, which reports a box that does not open as tampering.
        guard pair.publicKey == nonceOrPublicKey else { return nil }
        return SSHSlotOpener(challenge: salt, publicKey: pair.publicKey, secretKey: pair.secretKey)
    }

    var sshEncoded: [UInt8] {
        guard let sshKey else { return [] }
        var writer = ByteWriter()
        writer.append(kind.rawValue)
        writer.append(sshKey.algorithm.rawValue)
        writer.append(sshKey.fingerprint)
        writer.append(UInt64(bitPattern: sshKey.added))
        writer.append(salt)
        writer.append(nonceOrPublicKey)
        writer.append(wrappedKey)
        return writer.bytes
    }

    /// The rest of a kind 4 slot, its kind byte read.
    static func parseSSH(_ reader: inout ByteReader, index: Int, path: String) throws -> KeySlot {
        guard let algorithm = SSHSlotKey.Algorithm(rawValue: try reader.read(UInt8.self)) else {
            throw VaultError.slotsDamaged(path: path, detail: "key slot \(index + 1) names an ssh key type this gemvault does not know")
        }
        let fingerprint = try reader.readBytes(32)
        let added = Int64(bitPattern: try reader.read(UInt64.self))
        guard (0...latestDate).contains(added) else {
            throw VaultError.slotsDamaged(path: path, detail: "key slot \(index + 1) says it was added at \(added), not a date between 1970 and 9999")
        }
        let challenge = try reader.readBytes(sshChallengeBytes)
        let publicKey = try reader.readBytes(Sodium.boxPublicKeyBytes)
        let sealed = try reader.readBytes(sealedKeyBytes)
        return KeySlot(kind: .sshAgent, kdf: sshNoKDF, salt: challenge, nonceOrPublicKey: publicKey, wrappedKey: sealed,
                       sshKey: SSHSlotKey(algorithm: algorithm, fingerprint: fingerprint, added: added))
    }
}
