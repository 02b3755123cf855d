import Settings
import TerminalIO
import VaultAccess

/// After a key is stored under a name other than the default: when it is the vault's first key
/// and no `key` setting chooses one, offer to make it the default. Commands use a vault's only
/// key anyway; the setting keeps it chosen once a second key arrives.
enum DefaultKeyOffer {
    static func afterStoring(_ name: String, _ context: Context, assumeYes: Bool = false) throws {
        let fallback = Setting.key.defaultValue
        guard name != fallback else { return }
        let vault = context.vault
        let settings = try vault.settings()
        guard settings[Setting.key.name] == nil, try vault.keySummaries().map(\.name) == [name] else { return }
        let command = "gemvault config set key \(name)"
        if assumeYes || !TerminalQuestion.available {
            Console.note("'\(name)' is the vault's only key, so commands use it; '\(command)' keeps it the default once there are more")
            return
        }
        guard TerminalQuestion.offer("Make '\(name)' the key commands use by default?") else {
            Console.note("commands use '\(name)' while it is the vault's only key; '\(command)' makes it the default")
            return
        }
        try vault.apply(.setting(name: Setting.key.name, value: name))
        Console.note("key set in the vault: commands use '\(name)' unless --key names another")
    }
}
