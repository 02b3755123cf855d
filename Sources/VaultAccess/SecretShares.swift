import AgeFormat
import Agent
import Glibc
import Sharing
import SystemIO
import VaultCore

/// Sharing a secret for another tool (`secret share`, `secret import`): signed like a key's
/// share, by the session's agent or the vault opened here, with its own serial per secret
/// name, and imported through the same checks (whom it was for, the pinned sender, a
/// look-alike sender, a replayed serial).
extension VaultAccess {
    /// The next share of the secret `name` for each group of recipients, as the JSON each file holds.
    public func signNextSecretShare(of name: String, for groups: [[String]]) throws -> (serial: UInt64, documents: [SecretBytes]) {
        if let signed = try throughSession({ agent throws(AgentError) in try agent.signNextSecretShare(name, for: groups) }) { return signed }
        var signed: (serial: UInt64, documents: [SecretShareDocument])?
        try openedVault().modify { document in
            signed = try document.contents.signNextSecretShare(of: name, for: groups, now: Clock.now())
        }
        return (signed!.serial, signed!.documents.map { $0.encoded() })
    }

    /// Signs the next share of `name` for `recipients` and writes it, encrypted to all of them,
    /// to `path` (nil: standard output). Returns its serial.
    public func shareSecret(_ name: String, to recipients: [String], path: String?, armor: Bool, mode: mode_t, replacing: Bool,
                            strength: ShareStrength? = nil, _ output: any ShareFileOutput) throws -> UInt64 {
        let signed = try signNextSecretShare(of: name, for: [recipients])
        let ageRecipients = try recipients.map { try RecipientList.parse($0, origin: $0).recipient }
        let encrypted = try AgeFile.encrypt(signed.documents[0], to: ageRecipients, armor: armor)
        // Judged once wrapped, before anything is written: a plugin's labels are known now.
        if let strength, let warning = try strength.check(wrapped: ageRecipients) { output.warning(warning) }
        if let path { try output.save(encrypted, to: path, mode: mode, replacing: replacing) } else { try output.standardOutput(encrypted) }
        return signed.serial
    }

    /// What an import of a secret's share stored.
    public struct ImportedSecret {
        public let name: String
        public let masked: String
        public let sender: ShareSender
        public let serial: UInt64
        public let replaced: Bool
    }

    /// Checks the opened share (`plaintext`, opened as `mine`) and stores its secret as `name`
    /// (default: the name it was shared as). Refusals are `ShareRefusal`s (exit 4).
    public func importSecretShare(_ plaintext: SecretBytes, openedAs mine: [String], name explicitName: String?, acceptNewSender: Bool,
                                  resetSerial: Bool, replace: Bool) throws -> ImportedSecret {
        let share = try SecretShareDocument.parse(plaintext)
        guard share.isSignatureValid else {
            throw ShareRefusal("the share's signature does not verify: it was changed after it was made, or it was not signed by the key it names; nothing was stored")
        }
        guard share.isWritten(forAnyOf: mine) else {
            throw ShareRefusal("this share was signed for \(share.recipients.joined(separator: ", ")), not for \(mine.joined(separator: " or ")): someone it was written for passed it on; nothing was stored",
                               hint: "ask the sender to share it to you")
        }
        let name = explicitName ?? share.name
        let summaries = try toolSecretSummaries()
        let existing = summaries.first { $0.name == name }
        if let existing, existing.sharing.sender == nil, !replace {
            throw ShareRefusal("secret '\(name)' is your own (set here, not imported), and this share from \(SharingIdentity.fingerprint(of: share.sender.signingKey)) (\(share.sender.label)) would replace it; nothing was stored",
                               hint: "if you mean to take the shared value instead of your own, run the import again with --replace, or import it under another name: gemvault secret import FILE NEWNAME")
        }
        try Self.checkSecretSender(share, name: name, existing: existing?.sharing, others: summaries.compactMap(\.sharing.sender) + (try sharingRecords()).values.compactMap(ImportChecks.pinnedSender),
                                   acceptNewSender: acceptNewSender, resetSerial: resetSerial)
        let outcome = try apply(.secret(.importShared(name: name, value: share.secret, now: Clock.now(), sender: share.sender, serial: share.serial)))
        return ImportedSecret(name: name, masked: share.secret.masked, sender: share.sender, serial: share.serial, replaced: outcome.replaced)
    }

    /// The pinning rule of a key's import, for a secret: a secret never imported, or the user's
    /// own, takes the sender (unless another trusted sender's label looks like its own); once
    /// pinned, another signer needs `acceptNewSender` and a lower serial `resetSerial`.
    static func checkSecretSender(_ share: SecretShareDocument, name: String, existing: ToolSecretSharing?, others: [ShareSender],
                                  acceptNewSender: Bool, resetSerial: Bool) throws {
        let shown = "\(SharingIdentity.fingerprint(of: share.sender.signingKey)) (\(share.sender.label))"
        guard let pinned = existing?.sender else {
            let form = VaultIdentity.lookAlikeForm(of: share.sender.label)
            if !acceptNewSender, let twin = others.first(where: { $0.signingKey != share.sender.signingKey && VaultIdentity.lookAlikeForm(of: $0.label) == form }) {
                throw ShareRefusal("this share is signed by \(shown), whose label looks like that of \(SharingIdentity.fingerprint(of: twin.signingKey)) (\(twin.label)), a sender you already trust, with another key; nothing was stored",
                                   hint: "if it really is a new sender, run the import again with --accept-new-sender")
            }
            return
        }
        guard pinned.signingKey == share.sender.signingKey else {
            guard acceptNewSender else {
                throw ShareRefusal("secret '\(name)' came from signing key \(SharingIdentity.fingerprint(of: pinned.signingKey)) (\(pinned.label)), but this share is signed by \(shown); nothing was stored",
                                   hint: "if the sender really changed their vault, run the import again with --accept-new-sender")
            }
            return
        }
        if let imported = existing?.importedSerial, share.serial < imported, !resetSerial {
            throw ShareRefusal("this share of secret '\(name)' has serial \(share.serial), older than serial \(imported) already imported: an old share was replayed; nothing was stored",
                               hint: "if the sender's serials really went back, --reset-serial takes it")
        }
    }
}
