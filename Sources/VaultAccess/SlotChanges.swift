import SSHAgent
import VaultCore

/// Adding and removing key slots (`slot add`, `slot rm`): each a change under the vault's lock.
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
