import VaultAccess
import VaultCore

/// `key rotate [NAME]` with a key the user pastes: it becomes the current value (the old one
/// goes into the key's history) once the command's check accepted it with the vault's own
/// settings. A key linked to Secret Manager changes there: a value rotated here would be
/// replaced by the next fetch, so it is refused before the new key is checked.
public enum PastedRotation {
    /// `check` is nil for --no-verify; it gets the vault's settings (the endpoint the key will be
    /// used with). Without a session the passphrase's key is derived once for the check and the write.
    public static func replace(_ name: String, with key: SecretBytes, now: Int64, in vault: VaultAccess,
                               check: (([String: String]) throws -> Void)?) throws -> VaultChange.Outcome {
        let change = VaultChange.replaceKey(name: name, secret: key, now: now)
        guard let check else { return try vault.apply(change) }
        if let settings = try vault.sessionSettings() {
            try refuseLinked(vault, name: name)
            try check(settings)
            return try vault.apply(change)
        }
        return try vault.withUnlocked { opened in
            if let link = opened.document.contents.links[name] { throw VaultError.linkedKey(name: name, reference: link.reference) }
            try check(opened.document.contents.settings)
            return try opened.apply(change)
        }
    }

    /// Refused for a linked key, read through the session.
    static func refuseLinked(_ vault: VaultAccess, name: String) throws {
        guard vault.exists, let link = try vault.keySummaries().first(where: { $0.name == name })?.link else { return }
        throw VaultError.linkedKey(name: name, reference: link.reference)
    }
}
