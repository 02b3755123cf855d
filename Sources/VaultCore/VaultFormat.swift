/// A vault file as it sits on disk, parsed but not decrypted. The layout is in Docs/vault-format.md.
public struct VaultFile: Equatable, Sendable {
    static let magic = Array("GEMVAULT".utf8)
    static let slotContext = Array("gemvault slot\0".utf8)
    /// Format 3 is format 2 with ssh-agent slots; a vault without one is still written as 2,
    /// so an older gemvault keeps reading it.
    public static let currentVersion: UInt16 = 3
    static let versionWithoutSSHSlots: UInt16 = 2
    static let maxPayload = 16 << 20
    static let checksumBytes = 32
    static let vaultIDBytes = 16
    /// The smallest file that can be structurally valid: format 1, one slot, a bare tag as payload.
    /// (Writers pad the payload to 512 bytes, so their files are larger.)
    public static let minimumSize = 8 + 2 + 8 + 1 + 102 + 24 + 4 + 16 + 32
    /// The largest: a format 3 header with every slot, the largest payload, the checksum.
    public static let maximumSize = 8 + 2 + 16 + 8 + 1 + 102 + 142 + KeySlot.maxSSHSlots * KeySlot.sshSlotBytes + 24 + 4 + maxPayload + 32

    public var formatVersion: UInt16 = currentVersion
    /// Random, fixed for the life of the vault; nil in format 1 files until they are rewritten.
    public var vaultID: [UInt8]?
    public var generation: UInt64
    public var slots: [KeySlot]
    var payloadNonce: [UInt8]
    var payloadCiphertext: [UInt8]

    /// Everything from the magic through the payload length: the payload's additional data.
    var authenticatedHeader: [UInt8] {
        var writer = ByteWriter()
        writer.append(Self.magic)
        writer.append(formatVersion)
        if formatVersion >= 2, let vaultID { writer.append(vaultID) }
        writer.append(generation)
        writer.append(UInt8(slots.count))
        for slot in slots { writer.append(slot.encoded) }
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

    public var vaultIDHex: String? { vaultID.map { $0.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() } }

    public var passphraseSlot: KeySlot? { slots.first { $0.kind == .passphrase } }
    public var recoverySlot: KeySlot? { slots.first { $0.kind.isRecovery } }
    public var sshSlots: [KeySlot] { slots.filter { $0.kind == .sshAgent } }

    /// The version a writer gives this file now: 3 only while it holds an ssh slot.
    var versionToWrite: UInt16 { sshSlots.isEmpty ? Self.versionWithoutSSHSlots : Self.currentVersion }

    /// Parses and checks a file without any secret: size, checksum, structure, version, slots,
    /// KDF bounds. Every rule a writer follows is enforced here.
    public static func parse(_ bytes: [UInt8], path: String, policy: KDFPolicy = .standard) throws(VaultError) -> VaultFile {
        guard bytes.count >= 8, Array(bytes.prefix(8)) == magic else {
            throw .damaged(path: path, detail: "it is not a gemvault vault (the first 8 bytes are not GEMVAULT)")
        }
        guard bytes.count >= minimumSize else {
            throw .damaged(path: path, detail: "it is truncated: \(bytes.count) bytes, and no vault is shorter than \(minimumSize)")
        }
        let body = bytes.dropLast(checksumBytes)
        guard Sodium.blake2b256(body) == Array(bytes.suffix(checksumBytes)) else {
            throw .damaged(path: path, detail: "the checksum does not match, so bytes were changed or cut off")
        }
        do {
            return try body.withUnsafeBytes { raw in
                var reader = ByteReader(raw)
                _ = try reader.readBytes(8)
                let version = try reader.read(UInt16.self)
                guard (1...currentVersion).contains(version) else { throw VaultError.unsupportedVersion(path: path, version: Int(version)) }
                let vaultID = version >= 2 ? try reader.readBytes(vaultIDBytes) : nil
                let generation = try reader.read(UInt64.self)
                let slots = try parseSlots(&reader, version: version, path: path, policy: policy)
                let nonce = try reader.readBytes(Sodium.xchachaNonceBytes)
                let length = Int(try reader.read(UInt32.self))
                if length > maxPayload {
                    throw VaultError.damaged(path: path, detail: "the payload length field says \(length) bytes, more than the \(maxPayload >> 20) MiB a vault may hold")
                }
                guard length >= Sodium.xchachaTagBytes else {
                    throw VaultError.damaged(path: path, detail: "the payload length field says \(length) bytes, shorter than its 16-byte tag")
                }
                guard length == reader.remaining else {
                    throw VaultError.damaged(path: path, detail: "the payload length field says \(length) bytes, but \(reader.remaining) follow")
                }
                return VaultFile(formatVersion: version, vaultID: vaultID, generation: generation, slots: slots,
                                 payloadNonce: nonce, payloadCiphertext: try reader.readBytes(length))
            }
        } catch let error as VaultError {
            throw error
        } catch {
            throw .damaged(path: path, detail: "the header is cut short")
        }
    }

    /// One passphrase slot, then at most one recovery slot: a legacy one in format 1, a sealed one in format 2
    /// (a format 2 file may still carry a legacy slot from its format 1 days); format 3 adds ssh-agent
    /// slots after them.
    private static func parseSlots(_ reader: inout ByteReader, version: UInt16, path: String, policy: KDFPolicy) throws -> [KeySlot] {
        let count = Int(try reader.read(UInt8.self))
        let most = version >= 3 ? 2 + KeySlot.maxSSHSlots : 2
        guard (1...most).contains(count) else {
            let rule = version >= 3 ? "one passphrase slot, at most one recovery slot and at most \(KeySlot.maxSSHSlots) ssh-agent slots"
                : "one passphrase slot and at most one recovery slot"
            throw VaultError.slotsDamaged(path: path, detail: "the file declares \(count) key slots; a vault has \(rule)")
        }
        var slots: [KeySlot] = []
        for index in 0..<count {
            guard let kind = KeySlot.Kind(rawValue: try reader.read(UInt8.self)) else {
                throw VaultError.slotsDamaged(path: path, detail: "key slot \(index + 1) has an unknown kind")
            }
            let expected = switch kind {
            case .passphrase: index == 0
            case .legacyRecovery: index == 1
            case .recovery: index == 1 && version >= 2
            case .sshAgent: index >= 1 && version >= 3
            }
            guard expected else {
                throw VaultError.slotsDamaged(path: path, detail: "key slot \(index + 1) is a \(kind.name) slot where a vault never has one")
            }
            if kind == .sshAgent {
                let slot = try KeySlot.parseSSH(&reader, index: index, path: path)
                let earlier = slots.filter { $0.kind == .sshAgent }
                guard earlier.count < KeySlot.maxSSHSlots else {
                    throw VaultError.slotsDamaged(path: path, detail: "the file has more than \(KeySlot.maxSSHSlots) ssh-agent slots")
                }
                guard !earlier.contains(where: { $0.sshKey?.fingerprint == slot.sshKey?.fingerprint || $0.salt == slot.salt }) else {
                    throw VaultError.slotsDamaged(path: path, detail: "key slot \(index + 1) repeats an earlier ssh-agent slot's key or challenge")
                }
                slots.append(slot)
                continue
            }
            guard try reader.read(UInt8.self) == KeySlot.argon2id13 else {
                throw VaultError.kdfParametersRejected(path: path, detail: "key slot \(index + 1) names an unknown key derivation algorithm")
            }
            let kdf = KDFParameters(opsLimit: try reader.read(UInt32.self), memLimit: try reader.read(UInt64.self))
            if let problem = policy.check(kdf) {
                throw VaultError.kdfParametersRejected(path: path, detail: "the \(kind.name) slot's \(problem)")
            }
            let salt = try reader.readBytes(Sodium.pwhashSaltBytes)
            let middle = try reader.readBytes(kind == .recovery ? Sodium.boxPublicKeyBytes : Sodium.xchachaNonceBytes)
            let wrapped = try reader.readBytes(kind == .recovery ? KeySlot.sealedKeyBytes : Sodium.xchachaKeyBytes + Sodium.xchachaTagBytes)
            slots.append(KeySlot(kind: kind, kdf: kdf, salt: salt, nonceOrPublicKey: middle, wrappedKey: wrapped))
        }
        return slots
    }
}

/// Sodium errors inside the vault only come from resource exhaustion or programming errors.
func mapSodium<T>(_ body: () throws(SodiumError) -> T) throws(VaultError) -> T {
    do {
        return try body()
    } catch {
        throw .cryptoFailure("\(error)")
    }
}
