/// The built-in slots reached from a typed secret through Argon2id:
///
/// - kind 1, passphrase: the data key wrapped with XChaCha20-Poly1305 under a key derived
///   from the passphrase (102 bytes).
/// - kind 2, legacy recovery (format 1 vaults): the same construction with the recovery code.
///   It is carried as is until the data key changes, then replaced by kind 3.
/// - kind 3, recovery: the data key sealed (crypto_box_seal) to an X25519 public key whose
///   key pair is derived from the recovery code (142 bytes). Any writer can seal a new data
///   key to the public key; only the code opens it.
///
/// Kind 4, ssh-agent, is in SSHSlot.swift.
extension KeySlot {
    static let argon2id13: UInt8 = 2
    static let sealedKeyBytes = 32 + 48

    /// The key-encryption key (or key pair seed) for `secret` under a salt and parameters.
    static func derive(_ secret: SecretBytes, salt: [UInt8], kdf: KDFParameters,
                       purpose: KeyDerivationProgress.Purpose = .sealing) throws(VaultError) -> SecretBytes {
        let end = KeyDerivationProgress.begin(purpose)
        defer { end() }
        return try mapSodium { () throws(SodiumError) in
            try Sodium.argon2id(secret: secret, salt: salt, opsLimit: UInt64(kdf.opsLimit), memLimit: kdf.memLimit,
                                outputBytes: Sodium.xchachaKeyBytes)
        }
    }
}

/// What every Argon2 slot starts with after its kind byte: algorithm, parameters, salt.
struct Argon2Parameters: Equatable, Sendable {
    let kdf: KDFParameters
    let salt: [UInt8]

    var encoded: [UInt8] {
        var writer = ByteWriter()
        writer.append(KeySlot.argon2id13)
        writer.append(kdf.opsLimit)
        writer.append(kdf.memLimit)
        writer.append(salt)
        return writer.bytes
    }

    static func parse(_ reader: inout SlotReader, _ context: SlotContext, kindName: String) throws -> Argon2Parameters {
        guard try reader.read(UInt8.self) == KeySlot.argon2id13 else {
            throw VaultError.kdfParametersRejected(path: context.path, detail: "key slot \(context.index + 1) names an unknown key derivation algorithm")
        }
        let kdf = KDFParameters(opsLimit: try reader.read(UInt32.self), memLimit: try reader.read(UInt64.self))
        if let problem = context.policy.check(kdf) {
            throw VaultError.kdfParametersRejected(path: context.path, detail: "the \(kindName) slot's \(problem)")
        }
        return Argon2Parameters(kdf: kdf, salt: try reader.readBytes(Sodium.pwhashSaltBytes))
    }

    /// The key-encryption key for `secret` under these parameters.
    func deriveKey(from secret: SecretBytes) throws(VaultError) -> SecretBytes {
        try KeySlot.derive(secret, salt: salt, kdf: kdf, purpose: .unlocking)
    }
}

/// The data key wrapped under a key-encryption key (kinds 1 and 2): nonce, then the wrapped
/// key and its tag.
struct WrappedDataKey: Equatable, Sendable {
    let nonce: [UInt8]
    let wrapped: [UInt8]

    /// The wrap's additional data. "01 00" is the slot construction's version, the same in
    /// format 1 and 2 files, so a slot carries over unchanged when a vault is upgraded.
    static func additionalData(kindByte: UInt8, _ parameters: Argon2Parameters) -> [UInt8] {
        VaultFile.slotContext + VaultFile.magic + [1, 0] + [kindByte] + parameters.encoded
    }

    static func wrap(_ dataKey: SecretBytes, kek: SecretBytes, kindByte: UInt8, _ parameters: Argon2Parameters) throws(VaultError) -> WrappedDataKey {
        let nonce = Sodium.randomBytes(Sodium.xchachaNonceBytes)
        let additionalData = additionalData(kindByte: kindByte, parameters)
        let wrapped = try mapSodium { () throws(SodiumError) in
            try dataKey.withUnsafeBytes { raw throws(SodiumError) in
                try Sodium.xchachaSeal(raw, additionalData: additionalData, nonce: nonce, key: kek)
            }
        }
        return WrappedDataKey(nonce: nonce, wrapped: wrapped)
    }

    static func parse(_ reader: inout SlotReader) throws -> WrappedDataKey {
        WrappedDataKey(nonce: try reader.readBytes(Sodium.xchachaNonceBytes), wrapped: try reader.readBytes(Sodium.xchachaKeyBytes + Sodium.xchachaTagBytes))
    }

    /// The data key, or nil when `kek` does not open it.
    func unwrap(kek: SecretBytes, kindByte: UInt8, _ parameters: Argon2Parameters) -> SecretBytes? {
        try? Sodium.xchachaOpen(wrapped[...], additionalData: Self.additionalData(kindByte: kindByte, parameters), nonce: nonce, key: kek)
    }
}

/// Kind 1: the way in that always works; rewrapped (never resealed) by every rekey.
public struct PassphraseSlot: SlotKind, Equatable {
    public static let kindByte: UInt8 = 1
    public static let name = "passphrase"
    public static let placement = SlotPlacement.first

    let parameters: Argon2Parameters
    let key: WrappedDataKey

    public var kdf: KDFParameters { parameters.kdf }
    var salt: [UInt8] { parameters.salt }
    public var body: [UInt8] { parameters.encoded + key.nonce + key.wrapped }
    public var identity: [UInt8] { parameters.salt }
    public var holder: [UInt8] { [] }
    public var listing: SlotListing { SlotListing(kdf: kdf) }
    public func resealed(dataKey: SecretBytes) throws(VaultError) -> PassphraseSlot? { nil }

    public static func parse(_ reader: inout SlotReader, _ context: SlotContext) throws -> PassphraseSlot {
        let parameters = try Argon2Parameters.parse(&reader, context, kindName: name)
        return PassphraseSlot(parameters: parameters, key: try WrappedDataKey.parse(&reader))
    }

    /// Wraps `dataKey` under `kek`, which was derived for `salt` and `kdf`.
    static func wrap(dataKey: SecretBytes, kek: SecretBytes, salt: [UInt8], kdf: KDFParameters) throws(VaultError) -> PassphraseSlot {
        let parameters = Argon2Parameters(kdf: kdf, salt: salt)
        return PassphraseSlot(parameters: parameters, key: try WrappedDataKey.wrap(dataKey, kek: kek, kindByte: kindByte, parameters))
    }

    func deriveKey(from secret: SecretBytes) throws(VaultError) -> SecretBytes { try parameters.deriveKey(from: secret) }

    /// The data key, or nil when `kek` does not open this slot.
    func unwrap(kek: SecretBytes) -> SecretBytes? { key.unwrap(kek: kek, kindByte: Self.kindByte, parameters) }
}

/// A slot the recovery code opens: kind 2 (format 1) or kind 3.
protocol RecoveryCodeSlot: SlotKind {
    var parameters: Argon2Parameters { get }
    /// The data key, with the code's key already derived for this slot's parameters; nil for another code.
    func open(derived: SecretBytes) throws(VaultError) -> SecretBytes?
}

extension RecoveryCodeSlot {
    public var kdf: KDFParameters { parameters.kdf }
    public var identity: [UInt8] { parameters.salt }
    public var holder: [UInt8] { [] }
    public var listing: SlotListing { SlotListing(kdf: kdf) }
    func deriveKey(from code: SecretBytes) throws(VaultError) -> SecretBytes { try parameters.deriveKey(from: code) }
}

/// Kind 2, format 1's recovery slot: carried as is until the data key changes; a rekey
/// replaces it with a kind 3 slot (for the same code when it was typed).
public struct LegacyRecoverySlot: RecoveryCodeSlot, Equatable {
    public static let kindByte: UInt8 = 2
    public static let name = "recovery (format 1)"
    public static let placement = SlotPlacement.second(sinceFormat: 1)

    let parameters: Argon2Parameters
    let key: WrappedDataKey

    public var body: [UInt8] { parameters.encoded + key.nonce + key.wrapped }
    public func resealed(dataKey: SecretBytes) throws(VaultError) -> LegacyRecoverySlot? { nil }

    public static func parse(_ reader: inout SlotReader, _ context: SlotContext) throws -> LegacyRecoverySlot {
        let parameters = try Argon2Parameters.parse(&reader, context, kindName: name)
        return LegacyRecoverySlot(parameters: parameters, key: try WrappedDataKey.parse(&reader))
    }

    func open(derived: SecretBytes) throws(VaultError) -> SecretBytes? { key.unwrap(kek: derived, kindByte: Self.kindByte, parameters) }
}

/// Kind 3: the data key sealed to the key pair the recovery code derives.
public struct RecoverySlot: RecoveryCodeSlot, Equatable {
    public static let kindByte: UInt8 = 3
    public static let name = "recovery"
    public static let placement = SlotPlacement.second(sinceFormat: 2)

    let parameters: Argon2Parameters
    let key: SealedDataKey

    public var body: [UInt8] { parameters.encoded + key.encoded }
    public func resealed(dataKey: SecretBytes) throws(VaultError) -> RecoverySlot? {
        RecoverySlot(parameters: parameters, key: try key.resealed(dataKey))
    }

    public static func parse(_ reader: inout SlotReader, _ context: SlotContext) throws -> RecoverySlot {
        let parameters = try Argon2Parameters.parse(&reader, context, kindName: name)
        return RecoverySlot(parameters: parameters, key: try SealedDataKey.parse(&reader))
    }

    /// A recovery slot for a canonical code: derives the key pair, seals the data key.
    static func make(dataKey: SecretBytes, canonicalCode: SecretBytes, kdf: KDFParameters) throws(VaultError) -> RecoverySlot {
        let salt = Sodium.randomBytes(Sodium.pwhashSaltBytes)
        let seed = try KeySlot.derive(canonicalCode, salt: salt, kdf: kdf)
        return RecoverySlot(parameters: Argon2Parameters(kdf: kdf, salt: salt),
                            key: try SealedDataKey.seal(dataKey, to: try SealedDataKey.publicKey(seed: seed)))
    }

    func open(derived: SecretBytes) throws(VaultError) -> SecretBytes? {
        let pair = try mapSodium { () throws(SodiumError) in try Sodium.boxKeyPair(seed: derived) }
        return key.openIfSealed(publicKey: pair.publicKey, secretKey: pair.secretKey)
    }
}
