/// A vault file as it sits on disk, parsed but not decrypted. The layout is in Docs/vault-format.md.
public struct VaultFile: Equatable, Sendable {
    static let magic = Array("GEMVAULT".utf8)
    static let slotContext = Array("gemvault slot\0".utf8)
    /// Format 3 is format 2 with ssh-agent (additional) slots; a vault without one is still
    /// written as 2, so an older gemvault keeps reading it.
    public static let currentVersion: UInt16 = 3
    static let versionWithoutAdditionalSlots: UInt16 = 2
    static let maxPayload = 16 << 20
    static let checksumBytes = 32
    static let vaultIDBytes = 16
    /// The smallest file that can be structurally valid: format 1, one slot, a bare tag as payload.
    /// (Writers pad the payload to 512 bytes, so their files are larger.)
    public static let minimumSize = 8 + 2 + 8 + 1 + 102 + 24 + 4 + 16 + 32
    /// The largest: a format 3 header with every additional slot at its bound
    /// (`KeySlot.maxAdditionalSlotBytes`), the largest payload, the checksum. A constant: every
    /// vault read is bounded by it.
    public static let maximumSize = 8 + 2 + 16 + 8 + 1 + 102 + 142 + KeySlot.maxAdditionalSlots * KeySlot.maxAdditionalSlotBytes + 24 + 4 + maxPayload + 32

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

    public var vaultIDHex: String? { vaultID.map { Sodium.hex($0[...]) } }

    /// The slots of one kind, in the file's order.
    public func slots<Kind: SlotKind>(_: Kind.Type) -> [Kind] {
        // A loop, not compactMap: the generic compactMap looks its types up at run time (240,000 instructions).
        var found: [Kind] = []
        for slot in slots { if let kind = slot.as(Kind.self) { found.append(kind) } }
        return found
    }
    public var passphraseSlot: PassphraseSlot? { slots(PassphraseSlot.self).first }
    /// The recovery slot, of either kind.
    public var recoverySlot: KeySlot? { slots.first { if case .second = $0.placement { true } else { false } } }
    var recoveryCodeSlot: (any RecoveryCodeSlot)? { recoverySlot?.value as? any RecoveryCodeSlot }
    public var sshSlots: [SSHAgentSlot] { slots(SSHAgentSlot.self) }
    /// The slots beside the passphrase and recovery slots (ssh-agent, and registered kinds).
    public var additionalSlots: [KeySlot] { slots.filter(\.isAdditional) }

    /// The version a writer gives this file now: 3 only while it holds an additional slot.
    var versionToWrite: UInt16 { additionalSlots.isEmpty ? Self.versionWithoutAdditionalSlots : Self.currentVersion }

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
    /// (additional) slots after them. Each kind reads its own bytes (`SlotKinds`).
    private static func parseSlots(_ reader: inout ByteReader, version: UInt16, path: String, policy: KDFPolicy) throws -> [KeySlot] {
        let count = Int(try reader.read(UInt8.self))
        let most = version >= 3 ? 2 + KeySlot.maxAdditionalSlots : 2
        guard (1...most).contains(count) else {
            let rule = version >= 3 ? "one passphrase slot, at most one recovery slot and at most \(KeySlot.maxAdditionalSlots) ssh-agent slots"
                : "one passphrase slot and at most one recovery slot"
            throw VaultError.slotsDamaged(path: path, detail: "the file declares \(count) key slots; a vault has \(rule)")
        }
        var slots: [KeySlot] = []
        for index in 0..<count {
            let context = SlotContext(index: index, path: path, policy: policy)
            guard let kind = SlotKinds.kind(byte: try reader.read(UInt8.self)) else { throw context.damaged("has an unknown kind") }
            guard kind.placement.allows(index: index, version: version) else {
                throw context.damaged("is a \(kind.name) slot where a vault never has one")
            }
            var slotReader = SlotReader(bytes: reader)
            let slot = KeySlot(try kind.parse(&slotReader, context))
            reader = slotReader.bytes
            if case .additional(let mostOfKind) = kind.placement {
                let earlier = slots.filter { $0.kindByte == kind.kindByte }
                guard earlier.count < mostOfKind else {
                    throw VaultError.slotsDamaged(path: path, detail: "the file has more than \(mostOfKind) \(kind.name) slots")
                }
                guard !earlier.contains(where: { $0.value.holder == slot.value.holder || $0.identity == slot.identity }) else {
                    throw context.damaged("repeats an earlier \(kind.name) slot's key or challenge")
                }
            }
            slots.append(slot)
        }
        return slots
    }
}

extension SlotPlacement {
    /// Whether a slot of this placement may stand at `index` in a file of `version`.
    func allows(index: Int, version: UInt16) -> Bool {
        switch self {
        case .first: index == 0
        case .second(let since): index == 1 && version >= since
        case .additional: index >= 1 && version >= 3
        }
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
