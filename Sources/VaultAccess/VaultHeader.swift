import VaultCore

/// What `inspect` shows of the vault file: read and parsed without a secret.
public struct VaultHeader {
    public struct Slot {
        public let kind: String
        public let opsLimit: UInt32
        public let memLimit: UInt64
        public let preset: String?
        /// An ssh-agent slot's key.
        public let ssh: SSHSlotKey?
        /// What finds this slot again under a lock: an ssh slot's challenge, another's salt.
        let identity: [UInt8]

        public var isPassphrase: Bool { kind == KeySlot.Kind.passphrase.name }
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
                           slots: vault.slots.map { VaultHeader.Slot(kind: $0.kind.name, opsLimit: $0.kdf.opsLimit, memLimit: $0.kdf.memLimit, preset: $0.kdf.presetName,
                                                                     ssh: $0.sshSlotKey, identity: $0.identity) },
                           vaultID: vault.vaultIDHex, highestGenerationSeen: file.highestSeen(vault))
    }
}
