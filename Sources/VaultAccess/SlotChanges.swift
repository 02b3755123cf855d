import SSHAgent
import VaultCore

/// Adding and removing key slots (`slot add`, `slot rm`): each a change under the vault's lock.
extension VaultAccess {
    /// Adds a slot that `make` seals the data key into. Whatever the slot needs from outside
    /// (a signature) is had before this is called, so a way in that cannot be made costs no
    /// typing; then the vault is opened with any way in it offers and changed under its lock.
    public func addSlot(_ make: (SecretBytes) throws -> any SlotKind) throws {
        try withUnlocked { vault in try vault.modify { try $0.addSlot(make) } }
    }

    /// Adds an ssh slot for the agent's key `identity`: it signs a fresh challenge twice
    /// before anything is asked. Returns the slot's key.
    public func addSSHSlot(for identity: SSHAgentIdentity, agent: SSHAgentClient, now: Int64) throws -> SSHSlotKey {
        let challenge = SSHAgentSlot.newChallenge()
        let (key, signature) = try SSHSlotUnlock.sign(challenge: challenge, with: identity, agent: agent, now: now)
        try addSlot { dataKey in try SSHAgentSlot.make(dataKey: dataKey, key: key, challenge: challenge, signature: signature) }
        return key
    }

    /// Removes `slot` and puts the vault under a new data key, so the removed way in opens
    /// nothing written afterwards; it asks for the passphrase itself. Returns the rekey's result.
    public func removeSlot(_ slot: VaultHeader.Slot, allowRecovery: Bool) throws -> RekeyResult {
        try withUnlocked(.secret(.passphrase)) { vault in
            try vault.rekey(newPassphrase: nil, before: { document in
                guard let index = document.file.slots.firstIndex(where: { $0.kindName == slot.kind && $0.identity == slot.identity }) else {
                    throw VaultError.slotRefused("that slot is gone: another gemvault changed the vault's slots meanwhile")
                }
                try document.removeSlot(at: index, allowRecovery: allowRecovery)
            })
        }
    }
}
