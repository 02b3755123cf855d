import SSHAgent
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

extension VaultAccess {
    /// Adds an ssh slot for the agent's key `identity`: it signs a fresh challenge twice
    /// before anything is asked (a key that cannot hold a slot costs no typing), then the
    /// vault is opened with any way in it offers (the passphrase, or another ssh slot) and
    /// changed under its lock. Returns the slot's key.
    public func addSSHSlot(for identity: SSHAgentIdentity, agent: SSHAgentClient, now: Int64) throws -> SSHSlotKey {
        let challenge = KeySlot.newSSHChallenge()
        let (key, signature) = try SSHSlotUnlock.sign(challenge: challenge, with: identity, agent: agent, now: now)
        try withUnlocked { vault in try vault.modify { try $0.addSSHSlot(key: key, challenge: challenge, signature: signature) } }
        return key
    }

    /// Removes `slot` and puts the vault under a new data key, so the removed way in opens
    /// nothing written afterwards; it asks for the passphrase itself. Returns the rekey's result.
    public func removeSlot(_ slot: VaultHeader.Slot, allowRecovery: Bool) throws -> RekeyResult {
        try withUnlocked(.passphraseSlot) { vault in
            try vault.rekey(newPassphrase: nil, before: { document in
                guard let index = document.file.slots.firstIndex(where: { $0.kind.name == slot.kind && $0.identity == slot.identity }) else {
                    throw VaultError.slotRefused("that slot is gone: another gemvault changed the vault's slots meanwhile")
                }
                try document.removeSlot(at: index, allowRecovery: allowRecovery)
            })
        }
    }
}
