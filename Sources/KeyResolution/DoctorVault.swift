import GoogleKeys
import Settings
import SystemIO
import VaultAccess
import VaultCore

/// `doctor` as the command runs it, on this machine and this vault. It never prompts.
extension Doctor {
    /// The checks with the vault's keys from a session, or opened with a passphrase given by
    /// --passphrase-fd or --passphrase-file (`passphraseGiven`); the vault's settings count
    /// when its keys could be read. `note` says why the keys were not checked.
    public static func forVault(_ vault: VaultAccess, paths: Paths, environment: [String: String], passphraseGiven: Bool,
                                note: (String) -> Void) throws -> Doctor {
        let keys = try vaultKeyKinds(vault, passphraseGiven: passphraseGiven, note: note)
        var layers = SettingLayers(configFile: try? ConfigFile.load(path: paths.configFile), environment: environment, allowInsecureEndpoint: true)
        if keys != nil && vault.exists {
            layers.vaultSettings = try? vault.settings()
            layers.vaultPath = vault.path
        }
        return Doctor(paths: paths, vaultPath: vault.path, environment: environment, settings: try? Settings.resolve(layers),
                      coreDumpsDisabled: !ProcessHardening.isDumpable, vaultKeys: keys)
    }

    /// The vault's keys and kinds: from a session, or with a given passphrase; nil when neither.
    static func vaultKeyKinds(_ vault: VaultAccess, passphraseGiven: Bool,
                              note: (String) -> Void) throws -> [(name: String, kind: GoogleKeyKind, link: SecretLink?)]? {
        guard vault.exists else { return [] }
        if let keys = vault.sessionKeySummary() { return keys }
        guard passphraseGiven else {
            note("the vault's keys were not checked: no unlocked session (run 'gemvault unlock', or pass --passphrase-file)")
            return nil
        }
        return try vault.keySummaries().map { ($0.name, $0.kind, $0.link) }
    }
}
