import VaultCore

/// A share the import rules refuse (exit 4): it is not what it says, or not from whom it says.
public struct ShareRefusal: Error, Equatable, Sendable {
    public let message: String
    public let hint: String?

    public init(_ message: String, hint: String? = nil) {
        self.message = message
        self.hint = hint
    }
}

/// What `key import` (and so `key sync`) checks of a share before anything is stored: whom it
/// was written for, and whether its sender is the one pinned for the name.
public enum ImportChecks {
    /// The sender pinned for a record: who signed the share it was imported from.
    public static func pinnedSender(_ record: KeySharing?) -> ShareSender? {
        guard case .signed(let sender)? = record?.origin else { return nil }
        return sender
    }

    /// A share names the recipients it was written for (format 2): one this vault did not open it
    /// as was passed on by someone it was for, and is refused unless accepted. A format 1 share
    /// does not say, so it counts as passed on unless its signer is pinned for this very name.
    /// Returns the warning to show when such a share is taken anyway (--accept-unlisted).
    public static func checkRecipients(_ share: ShareDocument, mine: [String], pinnedSigner: [UInt8]?, accept: Bool, follow: Bool) throws(ShareRefusal) -> String? {
        guard !share.isWritten(forAnyOf: mine, pinnedSigner: pinnedSigner) else { return nil }
        guard let recipients = share.recipients else {
            guard accept, !follow else {
                throw ShareRefusal("this share is of format 1, which does not say whom it was written for, and '\(share.name)' is not pinned to its sender: "
                                   + "someone it was written for may have passed it on; nothing was stored",
                                   hint: "ask the sender to share it again with a current gemvault; --accept-unlisted takes it anyway (not with --follow)")
            }
            return "this share is of format 1 and does not say whom it was for: someone may have passed it on (taken, as --accept-unlisted asks)"
        }
        let listed = recipients.count == 1 ? recipients[0] : "\(recipients.count) recipients (\(recipients.joined(separator: ", ")))"
        guard accept else {
            throw ShareRefusal("this share was signed for \(listed), not for \(mine.joined(separator: " or ")): someone it was written for passed it on; nothing was stored",
                               hint: "ask the sender to share to you; --accept-unlisted takes it anyway")
        }
        return "this share was signed for \(listed), not for you: someone passed it on (taken, as --accept-unlisted asks)"
    }

    /// Another trusted sender (pinned for another key) whose label looks like this sender's
    /// (the same once invisible characters, spaces, case and look-alike letters are set aside),
    /// with another signing key: a newcomer posing as them.
    public static func lookAlikeSender(_ sender: ShareSender, records: [String: KeySharing]) -> ShareSender? {
        let form = VaultIdentity.lookAlikeForm(of: sender.label)
        for record in records.values {
            if case .signed(let pinned)? = record.origin, pinned.signingKey != sender.signingKey, VaultIdentity.lookAlikeForm(of: pinned.label) == form { return pinned }
        }
        return nil
    }

    /// The pinning rule: the first signed import of a name pins its sender; after that, another
    /// signer, an unsigned file, or a lower serial is refused unless the user accepts a new sender
    /// (or, for a lower serial, resets it). Returns whether the import resets the serial.
    public static func checkSender(_ origin: KeySharing.Origin, document: ShareDocument?, existing: KeySharing?, name: String, accept: Bool,
                                   resetSerial: Bool = false) throws(ShareRefusal) -> Bool {
        guard case .signed(let pinned)? = existing?.origin else { return false }
        let pinnedText = "\(SharingIdentity.fingerprint(of: pinned.signingKey)) (\(pinned.label))"
        let hint = "if the sender really changed their vault, run the import again with --accept-new-sender"
        switch origin {
        case .signed(let sender) where sender.signingKey == pinned.signingKey:
            if let document, let existing, document.serial < existing.serial {
                guard resetSerial else {
                    throw ShareRefusal("this share of '\(name)' has serial \(document.serial), older than serial \(existing.serial) already imported: an old share was replayed; nothing was stored",
                                       hint: "if the sender's serials really went back, --reset-serial takes it (and key list shows the reset)")
                }
                return true
            }
        case .signed(let sender):
            guard accept else {
                throw ShareRefusal("'\(name)' came from signing key \(pinnedText), but this share is signed by \(SharingIdentity.fingerprint(of: sender.signingKey)) (\(sender.label)); nothing was stored",
                                   hint: hint)
            }
        case .unsigned:
            guard accept else {
                throw ShareRefusal("'\(name)' came signed by \(pinnedText), but this file is unsigned; nothing was stored", hint: hint)
            }
        }
        return false
    }
}
