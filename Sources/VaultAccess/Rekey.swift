import Agent
import VaultCore

/// What a rekey has to show once: a format 1 recovery slot's new code, or the code that
/// replaced the recovery code on request.
public struct RekeyResult {
    public let newRecoveryCode: SecretBytes?
    public let replacementCode: SecretBytes?
}

extension UnlockedVault {
    /// Puts the vault under a new data key (with `newPassphrase`, a new passphrase too), and
    /// replaces vault.bak with the result, so no retired slot survives. The new passphrase's
    /// key is derived before `legacyRecoveryCode` is asked and before the lock is taken, so the
    /// Argon2 run holds up no other writer; the slot keeps its parameters. A running session
    /// follows the new key and keeps its limits.
    public func rekey(newPassphrase: SecretBytes?, replacingRecoveryCode: Bool = false,
                      legacyRecoveryCode: () throws -> UnlockKey? = { nil }) throws -> RekeyResult {
        let newKey = try newPassphrase.map { passphrase in
            guard let slot = document.file.passphraseSlot else { throw VaultError.wrongPassphrase }
            return try PassphraseKey.derive(passphrase, kdf: slot.kdf)
        }
        let legacy = try legacyRecoveryCode()
        var newCode: SecretBytes?
        var replacement: SecretBytes?
        var kek: SecretBytes?
        try modify(backup: .new) { document in
            if case .recoveryCode(let code)? = legacy?.derived, document.recoverySlotNeedsItsCode { try? document.keepRecoveryCode(code) }
            if replacingRecoveryCode { replacement = document.replaceRecoveryCode() }
            newCode = try document.rekey(newPassphraseKey: newKey)
            kek = document.keyEncryptionKey
        }
        if let kek { access.sessionFollows(kek) }
        return RekeyResult(newRecoveryCode: newCode, replacementCode: replacement)
    }

    /// Whether the recovery slot is of format 1 (a build before 0.1.0): its code can follow a
    /// new data key only if it is typed.
    public var recoverySlotIsLegacy: Bool { document.file.recoverySlot?.kind == .legacyRecovery }

    /// The key of `code` for this vault's recovery slot, or nil when the code does not open it.
    public func recoveryKey(_ code: SecretBytes) throws -> UnlockKey? {
        do { return try Unlock.recoveryCode(code).derive(opening: document.file) } catch VaultError.wrongRecoveryCode { return nil }
    }
}

extension VaultAccess {
    /// A rekey made by the unlocked session (no passphrase; the agent follows the new data key
    /// at once): the new recovery code when one was needed. nil without a session.
    public func rekeyThroughSession() throws -> RekeyResult? {
        guard try sessionIsOpen(), let agent else { return nil }
        let code = try agent.rekey()
        return RekeyResult(newRecoveryCode: code, replacementCode: nil)
    }

    /// After passwd or recover: a running session follows the new key-encryption key instead
    /// of locking itself out, and keeps its limits. Also under --no-session: whoever changed
    /// the key, the session must not be left behind.
    func sessionFollows(_ kek: SecretBytes) {
        guard let agent = agentOfVault, (try? agent.status())?.unlocked == true else { return }
        try? agent.followKey(kek)
    }
}
