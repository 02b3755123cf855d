import VaultCore

/// What `inspect` shows of the vault file: read and parsed without a secret.
public struct VaultHeader {
    public struct Slot {
        public let kind: String
        public let placement: SlotPlacement
        /// What the kind shows of it: an ssh slot's key and date, an Argon2 slot's parameters.
        public let listing: SlotListing
        /// What finds this slot again under a lock: an ssh slot's challenge, another's salt.
        public let identity: [UInt8]

        public var opsLimit: UInt32 { listing.kdf?.opsLimit ?? 0 }
        public var memLimit: UInt64 { listing.kdf?.memLimit ?? 0 }
        public var preset: String? { listing.kdf?.presetName }
        public var isPassphrase: Bool { placement == .first }
        public var isRecovery: Bool { if case .second = placement { true } else { false } }
    }

    /// The newest file format this gemvault reads and writes.
    public static let newestFormat = Int(VaultFile.currentVersion)

    public let formatVersion: Int
    public let generation: UInt64
    public let fileBytes: Int
    public let payloadBytes: Int
    public let slots: [Slot]
    public let vaultID: String?
    /// The highest generation this user has seen of this vault, when recorded.
    public let highestGenerationSeen: UInt64?
}

extension VaultAccess {
    /// The header, read and parsed once; the rollback rule is reported, not enforced.
    public func header() throws -> VaultHeader {
        let bytes = try store.read()
        let vault = try file.parse(bytes)
        return VaultHeader(formatVersion: Int(vault.formatVersion), generation: vault.generation, fileBytes: bytes.count, payloadBytes: vault.payloadSize,
                           slots: vault.slots.map { VaultHeader.Slot(kind: $0.kindName, placement: $0.placement, listing: $0.listing, identity: $0.identity) },
                           vaultID: vault.vaultIDHex, highestGenerationSeen: file.highestSeen(vault))
    }
}
