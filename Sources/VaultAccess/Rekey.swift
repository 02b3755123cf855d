import Agent
import VaultCore

/// What a rekey has to show once: a format 1 recovery slot's new code, or the code that
/// replaced the recovery code on request.
public struct RekeyResult {
    public let newRecoveryCode: SecretBytes?
    public let replacementCode: SecretBytes?
    /// The kinds of the slots beside the passphrase and recovery slots that now hold the new
    /// data key (they never need their secrets for it), one name per slot.
    public var slotsKept: [String] = []
    /// The ssh-agent slots among them.
    public var sshSlotsKept: Int { slotsKept.filter { $0 == SSHAgentSlot.name }.count }
    /// A warning for each slot the rekey dropped, since it could not take the new data key here
    /// (an age plugin missing): shown loudly, never a failure.
    public var slotsDropped: [String] = []
}

extension UnlockedVault {
    /// Puts the vault under a new data key (with `newPassphrase`, a new passphrase too), and
    /// replaces vault.bak with the result, so no retired slot survives. The new passphrase's
    /// key is derived before `legacyRecoveryCode` is asked and before the lock is taken, so the
    /// Argon2 run holds up no other writer; the slot keeps its parameters. A running session
    /// follows the new key and keeps its limits.
    public func rekey(newPassphrase: SecretBytes?, replacingRecoveryCode: Bool = false,
                      legacyRecoveryCode: () throws -> UnlockKey? = { nil }, before: (VaultDocument) throws -> Void = { _ in }) throws -> RekeyResult {
        let newKey = try newPassphrase.map { passphrase in
            guard let slot = document.file.passphraseSlot else { throw VaultError.wrongPassphrase }
            return try PassphraseKey.derive(passphrase, kdf: slot.kdf)
        }
        let legacy = try legacyRecoveryCode()
        var newCode: SecretBytes?
        var replacement: SecretBytes?
        var kek: SecretBytes?
        var kept: [String] = []
        var dropped: [String] = []
        try modify(backup: .new) { document in
            try before(document)
            if let code = legacy?.key as? RecoveryKey, document.recoverySlotNeedsItsCode { try? document.keepRecoveryCode(code) }
            if replacingRecoveryCode { replacement = document.replaceRecoveryCode() }
            newCode = try document.rekey(newPassphraseKey: newKey)
            kek = document.keyEncryptionKey
            kept = document.file.additionalSlots.map(\.kindName)
            dropped = document.droppedSlots
        }
        if let kek { access.sessionFollows(kek) }
        return RekeyResult(newRecoveryCode: newCode, replacementCode: replacement, slotsKept: kept, slotsDropped: dropped)
    }

    /// Whether the recovery slot is of format 1 (a build before 0.1.0): its code can follow a
    /// new data key only if it is typed.
    public var recoverySlotIsLegacy: Bool { document.file.recoverySlot?.isKind(LegacyRecoverySlot.self) == true }

    /// The key of `code` for this vault's recovery slot, or nil when the code does not open it.
    public func recoveryKey(_ code: SecretBytes) throws -> UnlockKey? {
        try RecoveryKey.derive(code, opening: document.file).map { UnlockKey($0) }
    }
}

extension VaultAccess {
    /// `rekey`: through the session when one holds the vault, else with the passphrase (its
    /// key kept for the write); `legacyRecoveryCode` asks for a format 1 vault's code.
    /// `throughSession` says which way it went.
    public func rekey(legacyRecoveryCode: (UnlockedVault) throws -> UnlockKey?) throws -> (result: RekeyResult, throughSession: Bool) {
        if let result = try rekeyThroughSession() { return (result, true) }
        let result = try withUnlocked(.secret(.passphrase)) { current in
            try current.rekey(newPassphrase: nil, legacyRecoveryCode: { try legacyRecoveryCode(current) })
        }
        return (result, false)
    }

    /// A rekey made by the unlocked session (no passphrase; the agent follows the new data key
    /// at once): the new recovery code when one was needed. nil without a session.
    public func rekeyThroughSession() throws -> RekeyResult? {
        guard try sessionIsOpen(), let agent else { return nil }
        let made: (recoveryCode: SecretBytes?, slotsKept: [String], slotsDropped: [String])
        switch Result(catching: { () throws(AgentError) in try agent.rekey() }) {
        case .success(let answer):
            made = answer
            kept = nil
        // A session an ssh slot opened holds no passphrase key to rewrap: the passphrase is asked.
        case .failure(.wrongKey): return nil
        case .failure(let error): throw error
        }
        // The agent says what it kept and dropped (an age plugin missing where it runs), in the
        // same words as a rekey here.
        return RekeyResult(newRecoveryCode: made.recoveryCode, replacementCode: nil, slotsKept: made.slotsKept, slotsDropped: made.slotsDropped)
    }

    /// After passwd or recover: a running session follows the new key-encryption key instead
    /// of locking itself out, and keeps its limits. Also under --no-session: whoever changed
    /// the key, the session must not be left behind.
    /// A PIN ends here too: an idle-locked session forgets it (an open one, on following).
    func sessionFollows(_ kek: SecretBytes) {
        guard let agent = agentOfVault, let status = try? agent.status() else { return }
        if status.unlocked, (try? agent.followKey(kek)) != nil { return }
        // Locked meanwhile (idle), or locked with a PIN: the PIN wrapped the old key, and ends.
        if status.pinTriesLeft != nil || status.unlocked { try? agent.forgetPIN() }
    }
}
