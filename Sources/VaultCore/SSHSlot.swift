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
public struct SSHSlotOpener: SlotKey {
    let challenge: [UInt8]
    let publicKey: [UInt8]
    let secretKey: SecretBytes

    /// The data key of `file`'s slot made with the same challenge. The key pair is the slot's,
    /// so a box that does not open was altered.
    public func open(_ file: VaultFile, path: String) throws(VaultError) -> SlotOpening {
        guard let slot = file.slots(SSHAgentSlot.self).first(where: { $0.challenge == challenge && $0.key.publicKey == publicKey }),
              let dataKey = try slot.key.open(publicKey: publicKey, secretKey: secretKey, path: path) else { throw .wrongPassphrase }
        return SlotOpening(dataKey: dataKey)
    }
}

/// Kind 4: the data key sealed (crypto_box_seal) to an X25519 key pair whose seed is
/// HKDF-SHA-256 of an ssh-agent's signature over a random challenge. Like the recovery slot,
/// any writer can seal a new data key to the public key, so passwd, rekey and recover keep it.
///
/// Layout (186 bytes): kind, algorithm, fingerprint (32), added (u64), challenge (32),
/// X25519 public key (32), sealed data key (80). The challenge sits where other slots keep
/// their salt.
public struct SSHAgentSlot: SlotKind, Equatable {
    public static let kindByte: UInt8 = 4
    public static let name = "ssh-agent"
    public static let nameWithArticle = "an ssh-agent"
    /// At most this many ssh slots, beside the passphrase and recovery slots.
    public static let most = 8
    public static let placement = SlotPlacement.additional(most: most)
    public static let encodedBytes = 2 + 32 + 8 + 32 + SealedDataKey.bytes
    static let challengeBytes = 32
    /// What every signed message starts with: no ssh authentication request does (those
    /// start with a length), so a slot's signature can be asked for nothing else.
    static let context = Array("gemvault ssh slot v1\n".utf8)
    /// 9999-12-31T23:59:59Z: a slot's date is shown, so it must be one.
    static let latestDate: Int64 = 253_402_300_799

    /// The ssh key this slot was made with.
    public let sshKey: SSHSlotKey
    let challenge: [UInt8]
    let key: SealedDataKey

    public var identity: [UInt8] { challenge }
    public var holder: [UInt8] { sshKey.fingerprint }
    public var listing: SlotListing {
        SlotListing(keyType: sshKey.algorithm.keyType, fingerprint: sshKey.fingerprintText, added: sshKey.added)
    }

    /// A fresh challenge for a new slot.
    public static func newChallenge() -> [UInt8] { Sodium.randomBytes(challengeBytes) }

    /// The bytes the ssh-agent signs for a challenge.
    public static func message(challenge: [UInt8]) -> [UInt8] { context + challenge }

    /// The bytes the ssh-agent signs for this slot.
    public var message: [UInt8] { Self.message(challenge: challenge) }

    /// The key pair a signature derives for a slot with this challenge and key.
    static func keyPair(signature: SecretBytes, challenge: [UInt8], key: SSHSlotKey) throws(VaultError) -> (publicKey: [UInt8], secretKey: SecretBytes) {
        let info = Array("gemvault ssh slot v1".utf8) + [key.algorithm.rawValue] + key.fingerprint
        let seed = HKDFSHA256.derive(secret: signature, salt: challenge, info: info, length: 32)
        return try mapSodium { () throws(SodiumError) in try Sodium.boxKeyPair(seed: seed) }
    }

    /// A new ssh slot holding `dataKey`, for the signature of `message(challenge:)`.
    public static func make(dataKey: SecretBytes, key: SSHSlotKey, challenge: [UInt8], signature: SecretBytes) throws(VaultError) -> SSHAgentSlot {
        let pair = try keyPair(signature: signature, challenge: challenge, key: key)
        return SSHAgentSlot(sshKey: key, challenge: challenge, key: try SealedDataKey.seal(dataKey, to: pair.publicKey))
    }

    public func resealed(dataKey: SecretBytes) throws(VaultError) -> SSHAgentSlot? {
        SSHAgentSlot(sshKey: sshKey, challenge: challenge, key: try key.resealed(dataKey))
    }

    /// What opens this slot, from the signature of `message`; nil when it is not this
    /// slot's signature (another key).
    public func opener(signature: SecretBytes) throws(VaultError) -> SSHSlotOpener? {
        let pair = try Self.keyPair(signature: signature, challenge: challenge, key: sshKey)
        // The public key is the slot's only for this signature; the sealed box is opened once,
        // by the vault's open, which reports a box that does not open as tampering.
        guard pair.publicKey == key.publicKey else { return nil }
        return SSHSlotOpener(challenge: challenge, publicKey: pair.publicKey, secretKey: pair.secretKey)
    }

    public var body: [UInt8] {
        var writer = ByteWriter()
        writer.append(sshKey.algorithm.rawValue)
        writer.append(sshKey.fingerprint)
        writer.append(UInt64(bitPattern: sshKey.added))
        writer.append(challenge)
        writer.append(key.encoded)
        return writer.bytes
    }

    public static func parse(_ reader: inout SlotReader, _ context: SlotContext) throws -> SSHAgentSlot {
        guard let algorithm = SSHSlotKey.Algorithm(rawValue: try reader.read(UInt8.self)) else {
            throw context.damaged("names an ssh key type this gemvault does not know")
        }
        let fingerprint = try reader.readBytes(32)
        let added = Int64(bitPattern: try reader.read(UInt64.self))
        guard (0...latestDate).contains(added) else {
            throw context.damaged("says it was added at \(added), not a date between 1970 and 9999")
        }
        let challenge = try reader.readBytes(challengeBytes)
        return SSHAgentSlot(sshKey: SSHSlotKey(algorithm: algorithm, fingerprint: fingerprint, added: added), challenge: challenge,
                            key: try SealedDataKey.parse(&reader))
    }
}
