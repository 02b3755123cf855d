/// A key slot: the data key wrapped under a key derived from a passphrase or the recovery code.
///
/// Encoded as 102 bytes: kind (1), KDF algorithm (1, 2 = Argon2id v1.3), opslimit (u32 LE),
/// memlimit in bytes (u64 LE), salt (16), nonce (24), wrapped data key (32) with its tag (16).
public struct KeySlot: Equatable, Sendable {
    public enum Kind: UInt8, Sendable {
        case passphrase = 1
        case recovery = 2

        public var name: String { self == .passphrase ? "passphrase" : "recovery" }
    }

    public static let encodedSize = 102
    static let argon2id13: UInt8 = 2

    public var kind: Kind
    public var kdf: KDFParameters
    var salt: [UInt8]
    var nonce: [UInt8]
    var wrappedKey: [UInt8]

    /// The slot's fields before the nonce: they are the slot's additional data, so its KDF
    /// parameters and salt cannot be changed without the unwrap failing.
    var parameterBytes: [UInt8] {
        var writer = ByteWriter()
        writer.append(kind.rawValue)
        writer.append(Self.argon2id13)
        writer.append(kdf.opsLimit)
        writer.append(kdf.memLimit)
        writer.append(salt)
        return writer.bytes
    }

    var additionalData: [UInt8] { VaultFile.slotContext + VaultFile.magic + [1, 0] + parameterBytes }

    /// Derives the key-encryption key and wraps `dataKey` with a fresh salt and nonce.
    static func seal(dataKey: SecretBytes, kind: Kind, secret: SecretBytes, kdf: KDFParameters) throws(VaultError) -> KeySlot {
        var slot = KeySlot(kind: kind, kdf: kdf, salt: Sodium.randomBytes(Sodium.pwhashSaltBytes),
                           nonce: Sodium.randomBytes(Sodium.xchachaNonceBytes), wrappedKey: [])
        let kek = try slot.deriveKey(from: secret)
        slot.wrappedKey = try mapSodium { () throws(SodiumError) in
            try dataKey.withUnsafeBytes { raw throws(SodiumError) in
                try Sodium.xchachaSeal(raw, additionalData: slot.additionalData, nonce: slot.nonce, key: kek)
            }
        }
        return slot
    }

    /// The data key, or nil when `secret` is not this slot's passphrase or code.
    func unwrap(with secret: SecretBytes) throws(VaultError) -> SecretBytes? {
        let kek = try deriveKey(from: secret)
        return try? Sodium.xchachaOpen(wrappedKey[...], additionalData: additionalData, nonce: nonce, key: kek)
    }

    private func deriveKey(from secret: SecretBytes) throws(VaultError) -> SecretBytes {
        try mapSodium { () throws(SodiumError) in
            try Sodium.argon2id(secret: secret, salt: salt, opsLimit: UInt64(kdf.opsLimit), memLimit: kdf.memLimit,
                                outputBytes: Sodium.xchachaKeyBytes)
        }
    }
}

/// A vault file as it sits on disk, parsed but not decrypted. The layout is in Docs/vault-format.md.
public struct VaultFile: Equatable, Sendable {
    static let magic = Array("GEMVAULT".utf8)
    static let slotContext = Array("gemvault slot\0".utf8)
    public static let currentVersion: UInt16 = 1
    static let maxSlots = 8
    static let maxPayload = 16 << 20
    static let checksumBytes = 32
    /// Magic, version, generation, slot count.
    static let fixedHeaderSize = 8 + 2 + 8 + 1

    public var formatVersion: UInt16 = currentVersion
    public var generation: UInt64
    public var slots: [KeySlot]
    var payloadNonce: [UInt8]
    var payloadCiphertext: [UInt8]

    /// Everything from the magic through the payload length: the payload's additional data.
    var authenticatedHeader: [UInt8] {
        var writer = ByteWriter()
        writer.append(Self.magic)
        writer.append(formatVersion)
        writer.append(generation)
        writer.append(UInt8(slots.count))
        for slot in slots {
            writer.append(slot.parameterBytes)
            writer.append(slot.nonce)
            writer.append(slot.wrappedKey)
        }
        writer.append(payloadNonce)
        writer.append(UInt32(payloadCiphertext.count))
        return writer.bytes
    }

    /// The complete file: header, payload, then the BLAKE2b-256 checksum of everything before it.
    public func encoded() -> [UInt8] {
        var bytes = authenticatedHeader + payloadCiphertext
        bytes += Sodium.blake2b256(bytes[...])
        return bytes
    }

    /// Size of the ciphertext, tag included.
    public var payloadSize: Int { payloadCiphertext.count }

    /// Parses and checks a file without any secret: checksum, structure, version, KDF bounds.
    public static func parse(_ bytes: [UInt8], path: String, policy: KDFPolicy = .standard) throws(VaultError) -> VaultFile {
        let minimum = fixedHeaderSize + KeySlot.encodedSize + Sodium.xchachaNonceBytes + 4 + Sodium.xchachaTagBytes + checksumBytes
        guard bytes.count >= 8, Array(bytes.prefix(8)) == magic else {
            throw .damaged(path: path, detail: "not a gemvault vault (bad magic bytes)")
        }
        guard bytes.count >= minimum else {
            throw .damaged(path: path, detail: "the file is truncated (\(bytes.count) bytes)")
        }
        let body = bytes.dropLast(checksumBytes)
        guard Sodium.blake2b256(body) == Array(bytes.suffix(checksumBytes)) else {
            throw .damaged(path: path, detail: "the checksum does not match; the file was damaged or truncated")
        }
        do {
            return try body.withUnsafeBytes { raw in
                var reader = ByteReader(raw)
                try reader.readBytes(8).checkMagic()
                let version = try reader.read(UInt16.self)
                guard version == currentVersion else {
                    throw VaultError.unsupportedVersion(path: path, version: Int(version))
                }
                let generation = try reader.read(UInt64.self)
                let slotCount = Int(try reader.read(UInt8.self))
                guard (1...maxSlots).contains(slotCount) else {
                    throw VaultError.damaged(path: path, detail: "invalid slot count \(slotCount)")
                }
                var slots: [KeySlot] = []
                for _ in 0..<slotCount {
                    guard let kind = KeySlot.Kind(rawValue: try reader.read(UInt8.self)) else {
                        throw VaultError.damaged(path: path, detail: "unknown key slot kind")
                    }
                    guard try reader.read(UInt8.self) == KeySlot.argon2id13 else {
                        throw VaultError.kdfParametersRejected(path: path, detail: "unknown key derivation algorithm")
                    }
                    let kdf = KDFParameters(opsLimit: try reader.read(UInt32.self), memLimit: try reader.read(UInt64.self))
                    if let problem = policy.check(kdf) {
                        throw VaultError.kdfParametersRejected(path: path, detail: problem)
                    }
                    slots.append(KeySlot(kind: kind, kdf: kdf, salt: try reader.readBytes(Sodium.pwhashSaltBytes),
                                         nonce: try reader.readBytes(Sodium.xchachaNonceBytes),
                                         wrappedKey: try reader.readBytes(Sodium.xchachaKeyBytes + Sodium.xchachaTagBytes)))
                }
                let nonce = try reader.readBytes(Sodium.xchachaNonceBytes)
                let length = Int(try reader.read(UInt32.self))
                guard length >= Sodium.xchachaTagBytes, length <= maxPayload, length == reader.remaining else {
                    throw VaultError.damaged(path: path, detail: "the payload length does not match the file size")
                }
                return VaultFile(formatVersion: version, generation: generation, slots: slots,
                                 payloadNonce: nonce, payloadCiphertext: try reader.readBytes(length))
            }
        } catch let error as VaultError {
            throw error
        } catch {
            throw .damaged(path: path, detail: "the header is truncated")
        }
    }
}

private extension Array where Element == UInt8 {
    func checkMagic() throws(ByteReader.OutOfBounds) {
        guard self == VaultFile.magic else { throw ByteReader.OutOfBounds() }
    }
}

/// Sodium errors inside the vault only come from resource exhaustion or programming errors.
func mapSodium<T>(_ body: () throws(SodiumError) -> T) throws(VaultError) -> T {
    do {
        return try body()
    } catch {
        throw .io(operation: "crypto (\(error))", path: "", errno: 12)
    }
}
