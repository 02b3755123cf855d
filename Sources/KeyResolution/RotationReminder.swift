import Settings
import SystemIO
import VaultCore

/// Once a day per key, chat, ask and exec remind that a vault key is older than rotation_days.
/// Which key was reminded of today is a file in the state folder named by a fingerprint of the
/// vault's path and the key's name.
public struct RotationReminder {
    public let vaultPath: String
    public let stateHome: String

    public init(vaultPath: String, stateHome: String) {
        self.vaultPath = vaultPath
        self.stateHome = stateHome
    }

    /// Calls `warn` when `key` is a vault key older than rotation_days and was not reminded of today.
    public func remind(key: ResolvedKey, settings: Settings, now: Int64 = Clock.now(), warn: (String) -> Void) {
        guard case .vault(_, let name) = key.source, let updated = key.updated,
              case let limit = settings[.rotationDays], limit > 0 else { return }
        let days = (now - updated) / 86400
        guard days >= Int64(limit) else { return }
        let today = String(Clock.isoDate(now).prefix(10))
        let record = Sodium.fingerprint(ProcessIdentity.absolutePath(vaultPath) + "\u{0}" + name)
        guard let folder = try? TrustedFolder.create(stateHome + "/gemvault/reminders") else { return }
        if let said = try? TrustedFile.open(record, in: folder, requirement: .secret)?.readAll(limit: 64),
           String(decoding: said, as: UTF8.self) == today { return }
        warn("key '\(name)' is \(days) days old (rotation_days is \(limit)); replace it with 'gemvault key rotate \(name)' (or 'gemvault key rotate --create \(name)': Docs/rotation.md)")
        try? folder.replace(record, with: Array(today.utf8), tempPrefix: "." + record + ".tmp.")
    }
}
